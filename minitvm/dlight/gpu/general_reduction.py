"""GeneralReduction: kernels that reduce and then use the result (softmax: max, sum, normalise;
layer_norm: mean, variance, normalise): each thread computes the reductions its outputs read,
in registers, then its outputs (Fallback's binding, with output reductions accumulated in a
register too)."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...tir.function import PrimFunc
from ...tir.transform.lower_thread_binding import has_thread_bindings
from .base import GPUScheduleRule, limits, output_buffers, reduction_blocks
from .fallback import _bind_threads


class GeneralReduction(GPUScheduleRule):
    """Kernels with a reduction whose result a later stage reads (softmax, layer_norm): each
    thread computes what its outputs read; None for any other kernel.

    with tvm.target.Target("opencl"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        params = output_buffers(func)
        found = reduction_blocks(func)
        if has_thread_bindings(func) or all(id(b.writes[0].buffer) in params for b in found):
            return None
        try:
            return _bind_threads(func, limits(target)[0], accumulate_locally=True)
        except ScheduleError:
            return None
