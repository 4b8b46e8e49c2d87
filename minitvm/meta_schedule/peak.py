"""The measured FMA peak of a target: what the task scheduler compares each task's best
GFLOPS with (a task far from the peak has more time left to win)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ..error import MiniTVMError
from ..ir import IRModule
from ..target import Target
from . import builder as _builder
from . import runner as _runner
from .arg_info import ArgInfo
from .schedule_rule._block import num_cores, vector_lanes

# accumulator tile: ROWS x (2 vectors) float32 accumulators, 16 registers on AVX-512 / AVX2
_ROWS = 8
_DEPTH = 64  # k: the operands stay in L1
_REPS = 2048  # the k loop repeated: ~1 ms a call, so the parallel launch is noise


def fma_kernel(target: Target) -> tuple[IRModule, float]:
    """A register-resident FMA micro-kernel for `target` (one tile per core, parallel) and
    its floating-point operations per call."""
    cores, lanes = num_cores(target), 2 * vector_lanes(target)
    return fma_module(cores, _ROWS, lanes, _DEPTH, _REPS)


def fma_module(
    threads: int, rows: int, lanes: int, depth: int, reps: int
) -> tuple[IRModule, float]:
    """`threads` parallel tasks, each accumulating a rows x lanes float32 tile over a k loop
    of `depth` repeated `reps` times on L1-resident operands: the GEMM micro-kernel with no
    memory traffic (C[p] = reps * A @ B), and its floating-point operations per call."""
    from .. import te
    from ..tir.schedule import Schedule

    a = te.placeholder((rows, depth), name="A")
    b = te.placeholder((depth, lanes), name="B")
    m = te.reduce_axis((0, reps), name="m")
    k = te.reduce_axis((0, depth), name="k")
    c = te.compute(
        (threads, rows, lanes),
        lambda p, i, j: te.sum(a[i, k] * b[k, j], axis=[m, k]),
        name="C",
    )
    sch = Schedule(te.create_prim_func([a, b, c]))
    block = sch.get_block("C")
    local = sch.cache_write(block, 0, "local")
    p, i, j, mm, kk = sch.get_loops(block)
    k0, k1 = sch.split(kk, [None, 4])
    sch.reorder(p, mm, k0, k1, i, j)
    sch.reverse_compute_at(local, p)
    sch.parallel(p)
    sch.unroll(k1)
    sch.unroll(i)
    sch.vectorize(j)
    sch.decompose_reduction(block, mm)
    sch.vectorize(sch.get_loops(local)[-1])
    return sch.mod, 2.0 * threads * rows * lanes * depth * reps


def measure_peak_gflops(builder: Any, runner: Any, target: Target) -> float | None:
    """The FMA kernel's GFLOPS built and timed by `builder` and `runner` (their workers and
    timing settings, no reference check); None when it cannot be scheduled (not a CPU
    target), built or run: the task scheduler then goes by time alone."""
    try:
        mod, flops = fma_kernel(target)
    except MiniTVMError:
        return None
    (built,) = builder.build([_builder.BuilderInput(mod, target)])
    if built.error_msg is not None:
        return None
    saved, runner.reference = runner.reference, None
    try:
        args = ArgInfo.from_entry_func(mod)
        (future,) = runner.run(
            [_runner.RunnerInput(built.artifact_path, _runner.device_of(target), args)]
        )
        result = future.result()
    finally:
        runner.reference = saved
        if built.artifact_path and os.path.exists(built.artifact_path):
            os.remove(built.artifact_path)
            with contextlib.suppress(OSError):  # the builder's folder for it, when empty
                os.rmdir(os.path.dirname(built.artifact_path))
    if not result.run_secs:
        return None
    return flops / min(result.run_secs) / 1e9
