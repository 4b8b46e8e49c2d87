"""DefaultGPUSchedule (TVM's `tir.transform.DefaultGPUSchedule`): threads for every PrimFunc
nobody scheduled for a GPU, so that it builds for opencl/cuda. The rules live in
`minitvm.dlight.gpu` (Matmul's shared-memory tiles, else Fallback's simple binding)."""

from __future__ import annotations

from typing import Any

from ...dlight.gpu import default_gpu_schedule, default_gpu_schedule_func
from ...ir.transform import Pass
from ...runtime.registry import register_func


def DefaultGPUSchedule(target: Any = None) -> Pass:
    """TVM's `tir.transform.DefaultGPUSchedule()` as a module pass."""
    return Pass(lambda mod: default_gpu_schedule(mod, target), "DefaultGPUSchedule")


# TVM 0.23's spelling, tir.transform.DefaultGPUSchedule: tir sits below dlight, so that name finds
# the pass through this global function (TVM's name for it), registered where the pass is known
register_func("tir.transform.DefaultGPUSchedule", DefaultGPUSchedule, override=True)

__all__ = ["DefaultGPUSchedule", "default_gpu_schedule", "default_gpu_schedule_func"]
