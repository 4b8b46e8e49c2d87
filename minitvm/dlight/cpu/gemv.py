"""GEMV: a reduction along the contiguous axis (x @ W.T under few rows, softmax's sums) as
vector partial sums per row, then the lanes added."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.expr import Add, BufferLoad, IterType, Max, Min
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.stmt import Block, BufferStore
from .analysis import BlockKind, _contiguous_along, _loads, _uses
from .base import BlockRule, NotApplicable
from .utils import VECTOR_LANES, _decompose, _extent, _parallel_widest, _work


def _row_reduction_lanes(sch: Schedule, block: Block, loops: list[LoopRV]) -> int | None:
    """The vector width for reducing `block` along its one, innermost reduction loop k when
    every load that uses k reads it contiguously (`S[i] = S[i] + f(A[i, k])`: softmax's max
    and sum, layer_norm's sums, a dot product `x[i, k] * W[j, k]`) and the reducer is +, max
    or min; None otherwise, or when no width of at least 4 lanes divides k (rfactor refuses
    a guarded split)."""
    types = [iv.iter_type for iv in block.iter_vars]
    store = block.body
    if types.count(IterType.CommReduce) != 1 or types[-1] != IterType.CommReduce:
        return None
    if len(loops) != len(types) or not isinstance(store, BufferStore):
        return None
    k = block.iter_vars[-1].var
    value = store.value
    if not isinstance(value, Add | Max | Min):
        return None
    accs = [isinstance(x, BufferLoad) and x.buffer is store.buffer for x in (value.a, value.b)]
    if accs.count(True) != 1 or any(_uses(i, k) for i in store.indices):
        return None
    uses = [ld for ld in _loads((value.b, value.a)[accs.index(True)]) if _uses(ld, k)]
    if not uses or not all(_contiguous_along(ld, k) for ld in uses):
        return None
    extent = _extent(sch, loops[-1])
    return next((w for w in (VECTOR_LANES, 8, 4) if extent and extent % w == 0), None)


def schedule_row_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> bool:
    """A reduction along the contiguous axis k (`_row_reduction_lanes`) keeps one vector of
    partial results per row (rfactor of k's inner `lanes` part, vectorized), then adds the
    lanes up; parallel over the rows. False (nothing done) for any other block."""
    lanes = _row_reduction_lanes(sch, sch.get(block), loops)
    if lanes is None:
        return False
    work = _work(sch, loops)
    _, ki = sch.split(loops[-1], [None, lanes])
    try:
        rf = sch.rfactor(ki, len(loops) - 1)
    except ScheduleError:
        # the split stays, harmless: parallel rows as the generic reduction rule does
        _parallel_widest(sch, loops[:-1], work)
        return True
    rf_loops = sch.get_loops(rf)
    sch.vectorize(rf_loops[-1])
    rows = rf_loops[:-2]
    init = _decompose(sch, rf, [rf_loops[-2]]) if rows else None
    if init is not None:
        sch.vectorize(sch.get_loops(init)[-1])
    _parallel_widest(sch, rows, work)
    return True


def _gemv(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    if not schedule_row_reduction(sch, block, loops):
        raise NotApplicable(f"block '{sch.get(block).name_hint}' reduces no contiguous axis")


class GEMV(BlockRule):
    """Matrix-vector products (`x @ W.T` under few rows, TVM's `dlight.cpu.GEMV`): vector
    partial sums along the contiguous reduction axis (`schedule_row_reduction`); other
    blocks are left to the next rule.

    dl.ApplyDefaultSchedule(dl.cpu.GEMV(), dl.cpu.Fallback())
    """

    kinds = frozenset({BlockKind.PRODUCT})
    steps = (_gemv,)
