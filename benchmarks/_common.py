"""Shared benchmark helpers: timing, thread setup, machine description, FLOP counts, FMA peak.

Every benchmark times all frameworks in the same run with the same timer (`measure`) and
reports min and median; ratios between columns are what to compare on a shared machine.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


SETTLE = 0.5  # seconds of idling before each measurement (see `measure`)


@dataclass(frozen=True)
class Timing:
    min: float  # seconds per call
    median: float


def measure(fn: Callable[[], object], repeat: int = 10, min_sample: float = 0.002) -> Timing:
    """Per-call seconds of `fn`: `repeat` samples, each long enough (min_sample) to time well.

    It first idles SETTLE seconds: the thread pool of whatever ran before (OpenMP in torch,
    ONNX Runtime's, ours) keeps spinning for a while after its last call, and on 2 cores a
    spinning pool halves the next framework's first samples."""
    time.sleep(SETTLE)
    fn()  # warm-up: first-call allocation, lazy JIT, caches
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    number = max(1, int(min_sample / max(once, 1e-9)))
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return Timing(min(samples), statistics.median(samples))


def timeit(fn: Callable[[], object], min_time: float = 0.3, repeat: int = 5) -> float:
    """Median per-call seconds over `repeat` samples of about min_time/repeat each (gemm.py)."""
    return measure(fn, repeat, min_time / repeat).median


def set_threads(n: int | None) -> int:
    """Give minitvm's pool, torch and (via the return value) ORT the same thread count."""
    from minitvm.runtime import threadpool

    if n:
        threadpool.set_num_threads(n)
    n = threadpool.num_threads()
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:
        pass
    return n


def llvm_cpu() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


def cpu_model() -> str:
    """lscpu's model name (platform.processor() is empty on Linux)."""
    try:
        out = subprocess.run(
            ["lscpu"], check=False, capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return platform.processor() or platform.machine()
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def blas_info() -> str:
    """numpy's BLAS library, version, kernel (architecture) and threads, from threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (pip install threadpoolctl)"
    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return (
        ", ".join(
            f"{i['internal_api']} {i.get('version')} kernel={i.get('architecture')} "
            f"threads={i.get('num_threads')}"
            for i in infos
        )
        or "unknown"
    )


def machine_lines(threads: int) -> list[str]:
    """What a benchmark prints first: CPU, cores, LLVM host, BLAS, versions, thread counts."""
    lines = [
        f"cpu: {cpu_model()}, {os.cpu_count()} cores, llvm host cpu {llvm_cpu()}",
        f"numpy {np.__version__} BLAS: {blas_info()}",
        "load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()),
        (
            f"minitvm threads: {threads} (threadpool.num_threads(); "
            f"MINITVM_NUM_THREADS={os.environ.get('MINITVM_NUM_THREADS', 'unset')}, "
            f"TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS', 'unset')})"
        ),
    ]
    try:
        import torch

        lines.append(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    except ImportError:
        lines.append("torch: not installed")
    try:
        import onnxruntime

        lines.append(f"onnxruntime {onnxruntime.__version__}, intra_op threads {threads}")
    except ImportError:
        lines.append("onnxruntime: not installed")
    return lines


# ----------------------------------------------------------------------------- FLOP counts


def _prod(dims) -> int:
    return int(np.prod([int(d) for d in dims])) if dims else 1


def _shape(expr) -> tuple:
    return tuple(expr.struct_info.shape)


def _conv2d_flops(call, out) -> int:
    weight = _shape(call.args[1])  # OIHW: I is already C / groups
    return 2 * _prod(out) * _prod(weight[1:])


def _linear_flops(call, out) -> int:
    return 2 * _prod(out) * int(_shape(call.args[0])[-1])


def _matmul_flops(call, out) -> int:
    return 2 * _prod(out) * int(_shape(call.args[0])[-1])


# multiply-adds of the ops that dominate a model; elementwise work is left out (as usual)
_FLOPS = {
    "relax.nn.conv2d": _conv2d_flops,
    "relax.nn.linear": _linear_flops,
    "relax.nn.dense": _linear_flops,
    "relax.matmul": _matmul_flops,
}


def model_flops(mod) -> int:
    """2 x multiply-adds of the conv2d / linear / matmul calls in mod["main"] (static shapes)."""
    from minitvm import relax

    total = 0
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and isinstance(value.op, relax.Op):
                rule = _FLOPS.get(value.op.name)
                if rule is not None:
                    total += rule(value, _shape(binding.var))
    return total


# ----------------------------------------------------------------------------- FMA peak


def fma_peak(threads: int, rows: int = 8, lanes: int = 32, k: int = 128, reps: int = 512) -> float:
    """Measured fp32 GFLOPS of a register-resident FMA micro-kernel built with minitvm.

    Each of `threads` tasks accumulates a rows x lanes tile (16 zmm accumulators) over a k-loop
    repeated `reps` times on L1-resident operands: the GEMM micro-kernel with no memory traffic,
    so it runs at the FMA units' rate. Checked against numpy before it is timed.
    """
    import minitvm as tvm
    from minitvm.meta_schedule.peak import fma_module

    mod, flops = fma_module(threads, rows, lanes, k, reps)
    f = tvm.build(mod, target="llvm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, k)).astype("float32")
    b = rng.standard_normal((k, lanes)).astype("float32")
    out = np.zeros((threads, rows, lanes), "float32")
    f(a, b, out)
    np.testing.assert_allclose(out[-1], reps * (a @ b), rtol=1e-3, atol=1e-3 * reps * k)
    t = measure(lambda: f(a, b, out), repeat=20, min_sample=0.005)
    return flops / t.min / 1e9


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """A right-aligned text table (first column left-aligned)."""
    widths = [max(len(str(r[c])) for r in [headers, *rows]) for c in range(len(headers))]
    for r in [headers, *rows]:
        cells = [str(v).ljust(w) if c == 0 else str(v).rjust(w) for c, (v, w) in
                 enumerate(zip(r, widths))]  # fmt: skip
        print("  ".join(cells), flush=True)
