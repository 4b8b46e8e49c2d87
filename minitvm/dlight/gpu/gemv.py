"""GEMV: matrix-vector products (`W @ x`, `x @ W.T` with one row): one thread per output
element, its dot product serial in the thread and accumulated in a register (minitvm lowers
no cross-thread reduction, so a dot product is never split across threads)."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...tir.analysis.op_pattern import OpPattern, block_pattern
from ...tir.expr import BufferLoad, IterType
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.schedule.common import const_int
from ...tir.stmt import Block
from ...tir.transform.lower_thread_binding import has_thread_bindings
from .base import GPUScheduleRule, limits, reduction_blocks
from .fallback import _bind_threads
from .utils import _uses_var


def is_gemv(block: Block) -> bool:
    """`block` accumulates products of which one operand is a vector: read by no spatial
    iterator of extent > 1 (only by the reduction)."""
    if block_pattern(block) is not OpPattern.OUT_EWISE_FUSABLE:
        return False
    spatial = [
        iv.var
        for iv in block.iter_vars
        if iv.iter_type == IterType.DataPar and const_int(iv.dom.extent) != 1
    ]
    loads: list = []
    post_order_visit(block.body, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
    operands = [ld for ld in loads if ld.buffer is not block.body.buffer]
    return any(not any(_uses_var(ld, v) for v in spatial) for ld in operands)


class GEMV(GPUScheduleRule):
    """Kernels whose one reduction is a matrix-vector product: threads over the outputs, each
    accumulating its dot product in a register; None for any other kernel.

    with tvm.target.Target("opencl"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.GEMV(), dl.gpu.Fallback())(mod)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        found = reduction_blocks(func)
        if has_thread_bindings(func) or len(found) != 1 or not is_gemv(found[0]):
            return None
        try:
            return _bind_threads(func, limits(target)[0], accumulate_locally=True)
        except ScheduleError:
            return None
