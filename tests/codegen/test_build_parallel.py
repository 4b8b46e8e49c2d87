"""A build split across forked processes (driver/parallel_build.py) gives the FuncInfos and
numbers of a serial build, and a failing kernel raises the error a serial build raises."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.codegen import llvm as codegen_llvm
from minitvm.driver import kernel_cache, parallel_build
from minitvm.error import BuildError
from minitvm.ir import IRModule
from minitvm.runtime.meta import signature_bytes

N = 24


def _kernel(k: int, a: str = "A"):
    """Distinct kernels of different sizes: B = A * (k + 1) + a sum of k shifted reads."""
    A = te.placeholder((N,), name=a)
    B = te.compute(
        (N,), lambda i: A[i] * float(k + 1) + sum(A[(i + j) % N] for j in range(k)), name="B"
    )
    return te.create_prim_func([A, B]).with_attr("global_symbol", "")


def _expected(k: int, x: np.ndarray) -> np.ndarray:
    return x * (k + 1) + sum(np.roll(x, -j) for j in range(k))


def _module() -> IRModule:
    funcs = {f"k{k}": _kernel(k) for k in range(6)}
    funcs["twin"] = _kernel(3, a="X")  # an alias of k3, with its own param name
    return IRModule(funcs)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    kernel_cache.clear()
    monkeypatch.setattr(parallel_build, "MIN_KERNELS", 2)
    yield
    kernel_cache.clear()


def _build(monkeypatch, jobs: int, spy: list | None = None):
    monkeypatch.setattr(parallel_build, "MAX_JOBS", jobs)
    kernel_cache.clear()
    if spy is not None:
        real = parallel_build.build
        monkeypatch.setattr(parallel_build, "build", lambda *a: spy.append(real(*a)) or spy[-1])
    return tvm.build(_module())


def test_parallel_build_matches_serial_infos_and_numbers(monkeypatch):
    spy: list = []
    parallel = _build(monkeypatch, 2, spy)
    assert len(spy) == 1 and spy[0] is not None  # it did build in two processes
    serial = _build(monkeypatch, 1)
    p_infos, s_infos = parallel._result.func_infos, serial._result.func_infos
    assert p_infos == s_infos
    assert signature_bytes(list(p_infos)) == signature_bytes(list(s_infos))
    x = np.linspace(-2, 3, N, dtype="float32")
    for name, k in [*((f"k{k}", k) for k in range(6)), ("twin", 3)]:
        for mod in (parallel, serial):
            out = tvm.nd.array(np.zeros(N, "float32"))
            mod[name](tvm.nd.array(x), out)
            np.testing.assert_allclose(out.numpy(), _expected(k, x), rtol=1e-6, atol=1e-5)
    with pytest.raises(tvm.error.ShapeError, match="argument 'X'"):
        parallel["twin"](tvm.nd.array(np.zeros(3, "float32")), tvm.nd.array(x))


@pytest.mark.parametrize("failing", ["k0", "k5"])  # in the worker; in the parent (largest)
@pytest.mark.parametrize("stage", ["lower", "codegen"])
def test_failing_kernel_raises_the_serial_error(monkeypatch, failing, stage):
    from minitvm import driver

    def fail_for(fn, name_of):
        def wrapped(func, *rest):
            if name_of(func) == failing:
                try:
                    raise ValueError("inner cause")
                except ValueError as err:
                    raise BuildError(f"kernel '{failing}' cannot be built here") from err
            return fn(func, *rest)

        return wrapped

    if stage == "lower":
        monkeypatch.setattr(driver, "_lower_checked", fail_for(driver._lower_checked, _name))
    else:
        add = codegen_llvm._add_function
        monkeypatch.setattr(
            codegen_llvm, "_add_function", lambda cg, f: fail_for(lambda f: add(cg, f), _name)(f)
        )
    errors = []
    for jobs in (2, 1):
        spy: list = []
        with pytest.raises(BuildError, match=f"kernel '{failing}' cannot be built here") as info:
            _build(monkeypatch, jobs, spy)
        errors.append(info.value)
        assert spy == ([None] if jobs == 2 else [])  # the parallel part failed, then serial
    assert str(errors[0]) == str(errors[1])
    assert all(isinstance(e.__cause__, ValueError) for e in errors)


def _name(func) -> str:
    return func.attrs.get("global_symbol")


def test_a_worker_that_dies_makes_the_build_serial(monkeypatch):
    parent = os.getpid()

    def lower(kernel):
        if os.getpid() != parent:
            os._exit(3)  # a crash in the worker
        return kernel_cache.lowered(kernel, tvm.driver._lower_checked, None)

    distinct, aliases, _ = kernel_cache.distinct_kernels(
        [f.with_attr("global_symbol", gv.name_hint) for gv, f in _module().functions_items()]
    )
    assert parallel_build.build(distinct, aliases, "llvm", lower, 2) is None


def test_jobs_is_serial_with_other_threads_few_kernels_or_one_job(monkeypatch):
    monkeypatch.setattr(parallel_build, "MAX_JOBS", 2)
    assert parallel_build.jobs(10) == 2
    assert parallel_build.jobs(1) == 1  # under MIN_KERNELS
    monkeypatch.setattr(parallel_build, "MAX_JOBS", 1)
    assert parallel_build.jobs(10) == 1
    monkeypatch.setattr(parallel_build, "MAX_JOBS", 2)
    stop = threading.Event()

    def busy() -> None:  # never parked in a threading wait: it may hold any lock
        while not stop.is_set():
            time.sleep(0.001)

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        assert parallel_build.jobs(10) == 1  # a fork could copy a lock that thread holds
    finally:
        stop.set()
        thread.join()


def test_balanced_shares_split_the_work_evenly():
    shares = parallel_build.balanced([10, 1, 1, 8, 2, 2], 2)
    assert sorted(i for s in shares for i in s) == list(range(6))
    sizes = [10, 1, 1, 8, 2, 2]
    assert sorted(sum(sizes[i] for i in s) for s in shares) == [12, 12]
    assert all(s == sorted(s) for s in shares)


def test_parallel_build_works_when_children_are_reaped_by_the_system(monkeypatch):
    # a daemon may ignore SIGCHLD: waitpid then finds no child, and the payload decides
    import signal

    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        spy: list = []
        mod = _build(monkeypatch, 2, spy)
    finally:
        signal.signal(signal.SIGCHLD, old)
    assert spy[0] is not None
    x = np.linspace(-2, 3, N, dtype="float32")
    out = tvm.nd.array(np.zeros(N, "float32"))
    mod["k4"](tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), _expected(4, x), rtol=1e-6, atol=1e-5)


def test_parallel_build_after_the_thread_pool_ran(monkeypatch):
    # the native pool's workers exist in the parent; the fork must neither need nor harm them
    A = te.placeholder((4096,), name="A")
    B = te.compute((4096,), lambda i: A[i] + 1.0, name="B")
    sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    outer, _ = sch.split(i, [4, None])
    sch.parallel(outer)
    par = tvm.build(sch.mod["main"].with_attr("global_symbol", "par"))
    a = np.arange(4096, dtype="float32")
    b = tvm.nd.array(np.zeros(4096, "float32"))
    par["par"](tvm.nd.array(a), b)
    spy: list = []
    mod = _build(monkeypatch, 2, spy)
    assert spy[0] is not None
    x = np.linspace(-2, 3, N, dtype="float32")
    out = tvm.nd.array(np.zeros(N, "float32"))
    mod["k2"](tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), _expected(2, x), rtol=1e-6, atol=1e-5)
    par["par"](tvm.nd.array(a), b)  # the pool still works in the parent
    np.testing.assert_array_equal(b.numpy(), a + 1)


def test_worker_payload_is_plain_data_and_a_truncated_one_is_a_failed_part():
    """Workers send JSON + bitcode (nothing is unpickled); any cut of the bytes decodes to None."""
    from minitvm.driver import parallel_build

    infos = [{"name": "k", "params": [{"name": "A", "shape": [4, "n"]}], "errors": ["x"]}]
    payload = parallel_build._encode((b"BC\xc0\xde-bitcode", infos))
    assert parallel_build._decode(payload) == (b"BC\xc0\xde-bitcode", infos)
    for cut in (0, 3, 8, 20, len(payload) - len(b"BC\xc0\xde-bitcode")):
        assert parallel_build._decode(payload[:cut]) is None
    assert parallel_build._decode(payload[:8] + b"{not json" + payload[17:]) is None


def test_minitvm_build_jobs_sets_the_process_count(monkeypatch):
    from minitvm.driver import parallel_build
    from minitvm.error import MiniTVMError

    monkeypatch.setattr(parallel_build, "MAX_JOBS", None)
    monkeypatch.setenv("MINITVM_BUILD_JOBS", "1")
    assert parallel_build.jobs(30) == 1
    monkeypatch.setenv("MINITVM_BUILD_JOBS", "two")
    with pytest.raises(MiniTVMError, match="MINITVM_BUILD_JOBS='two' is not a positive integer"):
        parallel_build.jobs(30)
