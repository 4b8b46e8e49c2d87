"""A build stays parallel beside a parked thread (torch.export leaves tqdm's monitor thread
waiting for the life of the process, which had made every TorchTrainer build serial), stays
serial beside a thread at work or parked inside minitvm, and its code is the serial build's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from typing import Self

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.driver import kernel_cache, parallel_build
from minitvm.ir import IRModule

N = 32


def _kernel(k: int):
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] * float(k + 1) + sum(A[(i + j) % N] for j in range(k)))
    return te.create_prim_func([A, B])


def _module() -> IRModule:
    """Six distinct kernels (B = A * (k + 1) + k shifted reads of A) and one twin of k2."""
    funcs = {f"k{k}": _kernel(k).with_attr("global_symbol", f"k{k}") for k in range(6)}
    funcs["twin"] = funcs["k2"].with_attr("global_symbol", "twin")
    return IRModule(funcs)


def _expected(k: int, x: np.ndarray) -> np.ndarray:
    return x * (k + 1) + sum(np.roll(x, -j) for j in range(k))


@pytest.fixture(autouse=True)
def _two_jobs(monkeypatch):
    monkeypatch.setattr(parallel_build, "MIN_KERNELS", 2)
    monkeypatch.setattr(parallel_build, "MAX_JOBS", 2)
    kernel_cache.clear()
    yield
    kernel_cache.clear()


class _Thread:
    """A thread running `target(stop)` until the block ends."""

    def __init__(self, target) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=target, args=(self.stop,), daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        time.sleep(0.05)  # let it reach its wait
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def _park_in_minitvm():
    """A wait under a minitvm frame (a pass waiting on a worker, say): minitvm's own wrapper
    calls it."""
    from minitvm.ir.recursion import allows_deep_recursion

    return allows_deep_recursion(lambda stop: stop.wait())


def _busy(stop: threading.Event) -> None:
    while not stop.is_set():
        time.sleep(0.001)


def test_a_parked_thread_leaves_the_build_parallel():
    with _Thread(lambda stop: stop.wait()):
        assert threading.active_count() > 1
        assert parallel_build.other_threads_parked()
        assert parallel_build.jobs(10) == 2


@pytest.mark.parametrize("target", [_busy, _park_in_minitvm()], ids=["busy", "in_minitvm"])
def test_a_thread_at_work_or_inside_minitvm_makes_the_build_serial(target):
    with _Thread(target):
        assert not parallel_build.other_threads_parked()
        assert parallel_build.jobs(10) == 1


def _build(jobs: int, spy: list):
    parallel_build.MAX_JOBS = jobs
    kernel_cache.clear()
    real = parallel_build.build

    def spying(*args):
        spy.append(real(*args))
        return spy[-1]

    parallel_build.build, saved = spying, parallel_build.build
    try:
        return tvm.build(_module())
    finally:
        parallel_build.build = saved


def test_parallel_build_beside_a_parked_thread_gives_the_serial_object_bytes():
    with _Thread(lambda stop: stop.wait()):
        spy: list = []
        parallel = _build(2, spy)
        assert len(spy) == 1 and spy[0] is not None  # built in two processes
    spy = []
    serial = _build(1, spy)
    assert spy == []
    assert parallel._result.object_code == serial._result.object_code
    assert parallel._result.func_infos == serial._result.func_infos
    x = np.linspace(-2, 3, N, dtype="float32")
    for name, k in [*((f"k{k}", k) for k in range(6)), ("twin", 2)]:
        out = tvm.nd.array(np.zeros(N, "float32"))
        parallel[name](tvm.nd.array(x), out)
        np.testing.assert_allclose(out.numpy(), _expected(k, x), rtol=1e-6, atol=1e-5)


def test_a_thread_waking_between_the_check_and_the_fork_makes_the_build_serial(monkeypatch):
    # `build` looks again just before it forks; a thread no longer parked then means serial
    looks = iter([True, False])
    monkeypatch.setattr(parallel_build, "other_threads_parked", lambda: next(looks))
    spy: list = []
    mod = _build(2, spy)
    assert spy == [None]  # the parallel attempt declined, then the serial build ran
    x = np.linspace(-2, 3, N, dtype="float32")
    out = tvm.nd.array(np.zeros(N, "float32"))
    mod["k4"](tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), _expected(4, x), rtol=1e-6, atol=1e-5)


def test_tqdm_monitor_thread_does_not_hang_or_serialise_a_build():
    """In a fresh process (a deadlocked fork would hang: the timeout catches it): a disabled
    tqdm bar leaves its monitor thread parked, as torch.export does; the build still forks."""
    pytest.importorskip("tqdm")
    script = textwrap.dedent(
        """
        import threading, numpy as np, tqdm
        import minitvm as tvm
        from minitvm import te
        from minitvm.driver import parallel_build
        tqdm.tqdm(range(3), disable=True)  # starts TMonitor, which a disabled bar never stops
        assert any(t.name == "tqdm_monitor" for t in threading.enumerate())
        parallel_build.MIN_KERNELS, parallel_build.MAX_JOBS = 2, 2
        funcs = {}
        for k in range(4):
            A = te.placeholder((64,), name="A")
            B = te.compute((64,), lambda i, k=k: A[i] * float(k + 2))
            funcs[f"k{k}"] = te.create_prim_func([A, B]).with_attr("global_symbol", f"k{k}")
        forks = []
        real = parallel_build._fork
        parallel_build._fork = lambda work: forks.append(1) or real(work)
        mod = tvm.build(tvm.IRModule(funcs))
        assert forks, "the build ran serially"
        x = np.arange(64, dtype="float32")
        out = tvm.nd.array(np.zeros(64, "float32"))
        mod["k3"](tvm.nd.array(x), out)
        np.testing.assert_array_equal(out.numpy(), x * 5)
        print("ok")
        """
    )
    env = {**os.environ, "MINITVM_CACHE_DIR": ""}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")
