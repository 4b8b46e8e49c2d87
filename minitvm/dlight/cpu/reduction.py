"""Reduction: column reductions accumulate vectors of columns, row reductions vectors of
partial results (GEMV's form), others run their rows in parallel."""

from __future__ import annotations

from ...tir.expr import Add, BufferLoad, IterType, Max, Min
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.stmt import Block, BufferStore
from .analysis import BlockKind, _contiguous_along, _last_spatial_var, _loads, _uses
from .base import BlockRule
from .gemv import schedule_row_reduction
from .utils import _decompose, _extent, _fold_epilogue, _matmul_cols, _parallel_widest, _work


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


def schedule_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """Column reductions accumulate vectors (`schedule_column_reduction`), row reductions
    vectors of partial results (`schedule_row_reduction`); others: parallel rows."""
    if schedule_column_reduction(sch, block, loops) or schedule_row_reduction(sch, block, loops):
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
