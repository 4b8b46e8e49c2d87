"""Reduction: kernels with one reduction that is not a product (sum, max, mean over an axis):
one thread per output, the reduction serial in the thread, accumulated in a register and
written once. (minitvm lowers no cross-thread reduction, so a reduction is never split
across threads: each thread runs its outputs' whole reduction.)"""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...tir.analysis.op_pattern import OpPattern, block_pattern
from ...tir.function import PrimFunc
from ...tir.transform.lower_thread_binding import has_thread_bindings
from .base import GPUScheduleRule, limits, reduction_blocks
from .fallback import _bind_threads


class Reduction(GPUScheduleRule):
    """Kernels whose one reduction block is not a product: threads over the outputs, each
    accumulating in a register; None for any other kernel.

    with tvm.target.Target("opencl"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Reduction(), dl.gpu.Fallback())(mod)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        found = reduction_blocks(func)
        if has_thread_bindings(func) or len(found) != 1:
            return None
        if block_pattern(found[0]) is not OpPattern.COMM_REDUCE:
            return None
        try:
            return _bind_threads(func, limits(target)[0], accumulate_locally=True)
        except ScheduleError:
            return None
