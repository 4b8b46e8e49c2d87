"""LowBatchGEMV: a GEMV over a symbolic, small batch (`Y[b, n] = sum_k X[b, k] * W[n, k]` with
`b` unknown at compile time: decoding a few sequences at once). TVM's rule matches a reduction
block with exactly one symbolic iterator, spatial, and an operand (the "vectors") read by some
but not all of the constant iterators. GEMV declines such a block (its vector operand varies
with the batch); here each thread computes one output of one batch row, accumulating in a
register, the batch on blockIdx (so any batch size is covered without padding it to `bucket`)."""

from __future__ import annotations

from typing import Any

from ...error import ArgumentError, ScheduleError
from ...tir.expr import BufferLoad, IterType
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.schedule.common import const_int
from ...tir.stmt import Block, BufferStore
from ...tir.transform.lower_thread_binding import has_thread_bindings
from .base import GPUScheduleRule, limits, reduction_blocks
from .fallback import _bind_threads
from .utils import _uses_var


def is_low_batch_gemv(block: Block) -> bool:
    """`block` reduces with exactly one symbolic iterator, a spatial one (the batch), and reads
    an operand indexed by some but not all of its constant-extent iterators."""
    if not isinstance(block.body, BufferStore):
        return False
    kinds = [iv.iter_type for iv in block.iter_vars]
    if IterType.CommReduce not in kinds or any(
        k not in (IterType.DataPar, IterType.CommReduce) for k in kinds
    ):
        return False
    symbolic = [iv for iv in block.iter_vars if const_int(iv.dom.extent) is None]
    if len(symbolic) != 1 or symbolic[0].iter_type != IterType.DataPar:
        return False
    const_vars = [iv.var for iv in block.iter_vars if const_int(iv.dom.extent) is not None]
    loads: list = []
    post_order_visit(block.body, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
    operands = [ld for ld in loads if ld.buffer is not block.body.buffer]
    if len(operands) < 2:
        return False
    used = [sum(_uses_var(ld, v) for v in const_vars) for ld in operands]
    vectors = [u for u in used if 0 < u < len(const_vars)]
    return 0 < len(vectors) < len(operands)


class LowBatchGEMV(GPUScheduleRule):
    """Matrix-vector products over a symbolic batch (decode-time GEMM); None for any other
    kernel, including a GEMV whose batch is a constant (that is GEMV's or Matmul's).

    `bucket` is TVM's batch tile (TVM pads the batch to a multiple of it); minitvm binds the
    batch to blockIdx instead, so it only has to be a positive int.

    with tvm.target.Target("cuda"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.LowBatchGEMV(), dl.gpu.Fallback())(mod)
    """

    def __init__(self, bucket: int = 4) -> None:
        if not isinstance(bucket, int) or isinstance(bucket, bool) or bucket < 1:
            raise ArgumentError(
                f"LowBatchGEMV(bucket={bucket!r}): bucket must be a positive int (the batch "
                "tile, e.g. 4)"
            )
        self.bucket = bucket

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        found = reduction_blocks(func)
        if has_thread_bindings(func) or len(found) != 1 or not is_low_batch_gemv(found[0]):
            return None
        try:
            return _bind_threads(func, limits(target)[0], accumulate_locally=True)
        except ScheduleError:
            return None
