"""Transpose: kernels whose stages are all elementwise and one of them is a 2-D transpose
(`B[j, i] = A[i, j]`), matched as TVM's rule matches them. TVM stages such a kernel through
shared-memory tiles so both the read and the write are coalesced; minitvm gives it the
Fallback binding (a thread per output), which is correct but reads with a stride."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...tir.expr import BufferLoad, IterType, Var
from ...tir.function import PrimFunc
from ...tir.stmt import Block, BufferStore
from ...tir.transform.lower_thread_binding import has_thread_bindings
from ..base.analysis import blocks
from .base import GPUScheduleRule, limits
from .fallback import _bind_threads


def is_transpose(block: Block) -> bool:
    """`block` stores a plain load of another buffer at the same two index variables,
    permuted."""
    store = block.body
    if not isinstance(store, BufferStore) or not isinstance(store.value, BufferLoad):
        return False
    out, src = list(store.indices), list(store.value.indices)
    if len(out) != 2 or not all(isinstance(x, Var) for x in out + src):
        return False
    ids_out, ids_src = [id(x) for x in out], [id(x) for x in src]
    return ids_out != ids_src and set(ids_out) == set(ids_src)


class Transpose(GPUScheduleRule):
    """Elementwise kernels containing a 2-D transpose; None for any other kernel.

    with tvm.target.Target("cuda"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Transpose(), dl.gpu.Fallback())(mod)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        stages = [r.block for r in blocks(func)]
        if has_thread_bindings(func) or not any(is_transpose(b) for b in stages):
            return None
        if any(iv.iter_type != IterType.DataPar for b in stages for iv in b.iter_vars):
            return None  # a stage that reduces: not a transpose kernel
        try:
            return _bind_threads(func, limits(target)[0])
        except ScheduleError:
            return None
