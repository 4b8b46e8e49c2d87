"""GEMV: a reduction along the contiguous axis (x @ W.T under few rows, softmax's sums) as
vector partial sums per row, then the lanes added."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.expr import Add, BufferLoad, IterType, Max, Min
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.stmt import Block, BufferStore
from .analysis import BlockKind, _contiguous_along, _kind, _loads, _uses
from .base import BlockRule, NotApplicable
from .utils import (
    PARALLEL_MIN_WORK,
    VECTOR_LANES,
    _decompose,
    _extent,
    _parallel_widest,
    _work,
)


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
    if _kind(sch.get(block)) is BlockKind.PRODUCT and _schedule_dot_rows(sch, block, loops, lanes):
        return True
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


# rows of a dot-product tile: their accumulators are independent FMA chains (one vector
# chain per row waits on the FMA latency) and each vector of x loaded serves them all
GEMV_ROWS = 4


def _schedule_dot_rows(sch: Schedule, block: BlockRV, loops: list[LoopRV], lanes: int) -> bool:
    """Dot products (`y[.., j] = sum_k x[.., k] * W[.., j, k]`, W streamed along k) a tile of
    GEMV_ROWS rows at a time: per k step one vector of each row's W and one of x, one vector
    accumulator per row (rfactor of k's inner `lanes`), the rows unrolled; the lanes of each
    row are added up right after its tile, while they are in cache, and the row tiles run in
    parallel. So W is read once, contiguously, by both threads. Always schedules the block
    (with parallel rows only, when the rfactor is refused); returns True."""
    work = _work(sch, loops)  # each row a dot product of k steps
    rows = loops[:-1]
    extents = [_extent(sch, lp) for lp in rows]
    static = [k for k, e in enumerate(extents) if e is not None and e > 1]
    _, ki = sch.split(loops[-1], [None, lanes])
    try:
        rf = sch.rfactor(ki, len(loops) - 1)
    except ScheduleError:
        # the split stays, harmless: parallel rows as the generic reduction rule does
        _parallel_widest(sch, rows, work)
        return True
    write = sch.get_consumers(rf)[0]
    *rf_rows, ko, kl = sch.get_loops(rf)
    if not static:  # one row (or only symbolic ones): vector partial sums of that row
        sch.vectorize(kl)
        init = _decompose(sch, rf, [ko]) if rf_rows else None
        if init is not None:
            sch.vectorize(sch.get_loops(init)[-1])
        _parallel_widest(sch, rf_rows, work)
        return True
    w = max(static, key=lambda k: extents[k])
    tile = next(r for r in (GEMV_ROWS, 2, 1) if extents[w] % r == 0)
    outer, inner = sch.split(rf_rows[w], [None, tile])
    others = [lp for k, lp in enumerate(rf_rows) if k != w]
    sch.reorder(outer, *others, ko, inner, kl)
    sch.unroll(inner)
    sch.vectorize(kl)
    init = _decompose(sch, rf, [ko])
    if init is not None:
        sch.vectorize(sch.get_loops(init)[-1])
    try:
        sch.reverse_compute_at(write, outer)
    except ScheduleError:
        pass  # the lanes are added in a pass of their own after the tiles: slower, correct
    if work >= PARALLEL_MIN_WORK and extents[w] // tile >= 2:
        sch.parallel(outer)
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
