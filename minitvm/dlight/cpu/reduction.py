"""Reduction: column reductions accumulate vectors of columns, row reductions vectors of
partial results (GEMV's form), others run their rows in parallel."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.expr import Add, BufferLoad, IterType, Max, Min
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.stmt import Block, BufferStore
from .analysis import BlockKind, _contiguous_along, _last_spatial_var, _loads, _uses
from .base import BlockRule
from .gemv import schedule_row_reduction
from .utils import (
    VECTOR_LANES,
    _decompose,
    _extent,
    _fold_epilogue,
    _matmul_cols,
    _parallel_widest,
    _work,
)

# a shorter row that no vector width divides keeps its scalar loop: under two vectors the
# lanes' final add and the tail cost what the vector loop saves
GUARDED_ROW_MIN = 2 * VECTOR_LANES


def _is_column_reduction(block: Block) -> bool:
    """`S[.., j] = S[.., j] (+ | max | min) f(X[.., j], ..)` reducing outer axes of X: the last
    spatial iterator j indexes the output and every load that uses it contiguously (the bias
    gradient `g.sum(axis=0)`, a pooling window over a blocked NCHW{c}c input), so a vector of
    columns can accumulate while the reduction runs."""
    j = _last_spatial_var(block, min_spatial=1)
    store = block.body
    if j is None or not isinstance(store, BufferStore) or not _contiguous_along(store, j):
        return False
    value = store.value
    if not isinstance(value, Add | Max | Min):
        return False
    sides = [value.b, value.a]
    accs = [isinstance(x, BufferLoad) and x.buffer is store.buffer for x in (value.a, value.b)]
    if not any(accs):
        return False
    loads = [ld for ld in _loads(sides[accs.index(True)]) if _uses(ld, j)]
    return bool(loads) and all(_contiguous_along(ld, j) for ld in loads)


def schedule_column_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> bool:
    """A vector of columns accumulates in a `local` cache_write buffer over the whole
    reduction (the reduction loops outside, the columns vectorized inside), the fused epilogue
    (e.g. the SGD update of a bias) folded into its write-back, parallel over column blocks.
    False (nothing done) when `block` is not a column reduction or its column extent has no
    guard-free vector width."""
    node = sch.get(block)
    if not _is_column_reduction(node):
        return False
    n_spatial = sum(iv.iter_type == IterType.DataPar for iv in node.iter_vars)
    cols = _extent(sch, loops[n_spatial - 1])
    width = None if cols is None else _matmul_cols(cols)
    if width is None:
        return False
    work = _work(sch, loops)
    write_back = sch.cache_write(block, 0, "local")
    write_back = _fold_epilogue(sch, write_back)
    loops = sch.get_loops(block)
    spatial, reduce = loops[:n_spatial], loops[n_spatial:]
    jo, ji = (None, spatial[-1]) if width == cols else sch.split(spatial[-1], [None, width])
    outer = [*spatial[:-1], *([jo] if jo is not None else [])]
    sch.reorder(*outer, *reduce, ji)
    if outer:
        sch.reverse_compute_at(write_back, outer[-1])
    if width > 1:
        sch.vectorize(ji)
    init = _decompose(sch, block, reduce)
    for blk in (write_back,) if init is None else (init, write_back):
        inner = sch.get_loops(blk)[len(outer) :]
        if inner and (_extent(sch, inner[-1]) or 2) > 1:
            sch.vectorize(inner[-1])
    _parallel_widest(sch, outer, work)
    return True


def _is_contiguous_row_reduction(block: Block) -> bool:
    """`S[..] = S[..] (+ | max | min) f(A[.., k])`: one reduction iterator k, innermost, that
    every load using it reads contiguously and the store does not index."""
    types = [iv.iter_type for iv in block.iter_vars]
    store = block.body
    if types.count(IterType.CommReduce) != 1 or types[-1] != IterType.CommReduce:
        return False
    if not isinstance(store, BufferStore) or not isinstance(store.value, Add | Max | Min):
        return False
    k = block.iter_vars[-1].var
    value = store.value
    accs = [isinstance(x, BufferLoad) and x.buffer is store.buffer for x in (value.a, value.b)]
    if accs.count(True) != 1 or any(_uses(i, k) for i in store.indices):
        return False
    uses = [ld for ld in _loads((value.b, value.a)[accs.index(True)]) if _uses(ld, k)]
    return bool(uses) and all(_contiguous_along(ld, k) for ld in uses)


def guarded_row_lanes(sch: Schedule, block: Block, loops: list[LoopRV]) -> int | None:
    """VECTOR_LANES for a row reduction (`_is_contiguous_row_reduction`) over a static row of
    at least GUARDED_ROW_MIN that no vector width divides (ViT's 197 tokens); None otherwise.
    Its split by the lanes is guarded, which rfactor accepts: the guard goes into the partial
    value, where a lane past the row's end adds the identity."""
    extent = _extent(sch, loops[-1]) if loops else None
    if extent is None or extent < GUARDED_ROW_MIN or len(loops) != len(block.iter_vars):
        return None
    if any(extent % w == 0 for w in (VECTOR_LANES, 8, 4)):
        return None  # a guard-free width: `schedule_row_reduction` takes it
    return VECTOR_LANES if _is_contiguous_row_reduction(block) else None


def schedule_guarded_row_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> bool:
    """A row reduction over a length no vector width divides (`guarded_row_lanes`) as vector
    partial results: k split by the lanes (the last vector guarded), the lanes factored out
    (rfactor: a lane past the row's end combines the identity, -inf for max, 0 for sum),
    vectorized, then added up; parallel over the rows. The guard also stays the partial
    block's predicate, so lowering's loop partition takes the last vector off and the others
    run unguarded (softmax 4 x 197 x 197: 1.1 -> 0.14 ms). Max and min give the same bits as
    the scalar loop; a sum adds in another order (float rounding). False (nothing done) for
    any other block."""
    lanes = guarded_row_lanes(sch, sch.get(block), loops)
    if lanes is None:
        return False
    # rows ordered and parallel first: reorder refuses the guard once rfactor has made it
    # span a spatial and a reduction iterator; both nests rfactor makes keep the parallel loop
    _parallel_widest(sch, loops[:-1], _work(sch, loops))
    _, ki = sch.split(loops[-1], [None, lanes])
    try:
        rf = sch.rfactor(ki, len(loops) - 1)
    except ScheduleError:
        return True  # e.g. a producer's writes not provably covering the row: parallel rows
    rf_loops = sch.get_loops(rf)
    sch.vectorize(rf_loops[-1])
    init = _decompose(sch, rf, [rf_loops[-2]]) if len(rf_loops) > 2 else None
    if init is not None:
        sch.vectorize(sch.get_loops(init)[-1])
    return True


def schedule_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """Column reductions accumulate vectors (`schedule_column_reduction`), row reductions
    vectors of partial results (`schedule_row_reduction`, `schedule_guarded_row_reduction`
    where no vector width divides the row); others: parallel rows."""
    if schedule_column_reduction(sch, block, loops) or schedule_row_reduction(sch, block, loops):
        return
    if schedule_guarded_row_reduction(sch, block, loops):
        return
    realize_block = sch.get(block)
    n_spatial = 0
    for iv in realize_block.iter_vars:
        if iv.iter_type != IterType.DataPar:
            break
        n_spatial += 1
    rows = loops[:n_spatial]
    _parallel_widest(sch, rows, _work(sch, loops))


class Reduction(BlockRule):
    """Reductions that are not products (sums, max, pooling): `schedule_reduction`.

    dl.ApplyDefaultSchedule(dl.cpu.Reduction())
    """

    kinds = frozenset({BlockKind.REDUCTION})
    steps = (schedule_reduction,)
