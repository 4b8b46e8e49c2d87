"""GeneralReduction: a chain of row reductions and row-wise stages feeding one elementwise output
(layer_norm, softmax) as one parallel loop over rows, each row's stages computed under it."""

from __future__ import annotations

import math

from ...error import ScheduleError
from ...tir.function import PrimFunc
from ...tir.schedule import BlockRV, Schedule
from ..base.analysis import blocks as _blocks
from ..base.schedule_rule import RuleResult
from .analysis import BlockKind, _kind
from .base import CPUScheduleRule
from .gemv import _row_reduction_lanes
from .reduction import guarded_row_lanes
from .utils import (
    _decompose,
    _extent,
    _parallel,
    _parallel_widest,
    _simple_nest,
    _vectorize_inner,
    _work,
)


def row_chain_schedule(sch: Schedule) -> Schedule | None:
    """A copy of `sch` scheduled as one parallel loop over rows when its function is a chain
    of row reductions and row-wise elementwise stages feeding one elementwise output
    (layer_norm: sum, squared sum, normalise; softmax: max, exp, sum, scale), each row's whole
    chain computed in L1 under the row loop instead of one parallel pass over all rows per
    stage (layer_norm 128x768: 60 -> 31 us, 1536x128: 92 -> 75 us); None (nothing done) for
    any other function or when a primitive refuses. The copy keeps `sch`'s trace, so
    meta-schedule's ApplyDefaultSchedule replays this plan as one point of its space."""
    sch = sch.copy()
    func = sch.mod["main"]
    realizes = _blocks(func)
    if len(realizes) < 2:
        return None
    *stages, last = realizes
    out = sch.get_block(last.block.name_hint)
    out_loops = _simple_nest(sch, out, last)
    if _kind(last.block) is not BlockKind.SPATIAL or out_loops is None or len(out_loops) < 2:
        return None
    shape = [_extent(sch, lp) for lp in out_loops]
    plans = []
    for r in stages:
        block = sch.get_block(r.block.name_hint)
        loops = _simple_nest(sch, block, r)
        plan = None if loops is None else _stage_plan(sch, r.block, block, loops, shape)
        if plan is None:
            return None
        plans.append(plan)
    if all(lanes is None for _, _, lanes in plans):
        return None  # no row reduction: the per-block rules
    try:
        _chain_rows(sch, out, plans, _work(sch, out_loops))
    except ScheduleError:
        return None  # e.g. a stage reads other rows than it writes: per-block rules instead
    return sch


def _stage_plan(sch: Schedule, node, block: BlockRV, loops: list, shape: list) -> tuple | None:
    """(block, loops, lanes) for a stage of a row chain over `shape` (the output's extents):
    a row reduction over the output's rows (lanes: its vector partial results' width; 0 for
    a row of symbolic length, reduced by a scalar loop), or a spatial stage of the output's
    shape (lanes None); None for any other stage."""
    if _kind(node) is BlockKind.SPATIAL:
        same = [_extent(sch, lp) for lp in loops] == shape and len(loops) == len(shape)
        return (block, loops, None) if same else None
    if _kind(node) not in (BlockKind.REDUCTION, BlockKind.PRODUCT):
        return None  # (a squared sum is a product)
    if [_extent(sch, lp) for lp in loops[:-1]] != shape[:-1]:
        return None
    lanes = _row_reduction_lanes(sch, node, loops) or guarded_row_lanes(sch, node, loops)
    if lanes is None:
        # a row of symbolic length (attention over a KV cache) reduces in a scalar loop per
        # row, still under the parallel rows; a short static row keeps the per-block rules
        return (block, loops, 0) if _extent(sch, loops[-1]) is None else None
    if (_extent(sch, loops[-1]) or 0) < 2 * lanes:
        return None  # one vector per row: no loop of partial sums to keep
    return block, loops, lanes


def _chain_rows(sch: Schedule, out: BlockRV, plans: list, work: float) -> PrimFunc:
    """Each row reduction of `plans` as vector partial sums (rfactor) then the lanes added,
    each spatial stage vectorized along the row, all computed at the output's row loop, which
    runs in parallel (the rows fused)."""
    rfs = []
    for block, loops, lanes in plans:
        if lanes:
            whole = _extent(sch, loops[-1]) // lanes  # vectors that need no guard
            _, ki = sch.split(loops[-1], [None, lanes])
            rfs.append((sch.rfactor(ki, len(loops) - 1), whole))
    out_name = sch.get(out).name_hint
    stages = [r.block.name_hint for r in _blocks(sch.mod["main"])]
    out_loops = sch.get_loops(out)
    for name in reversed(stages):
        if name != out_name:
            sch.compute_at(sch.get_block(name), out_loops[-2])
    for rf, whole in rfs:
        *_, k_outer, lanes = sch.get_loops(rf)
        sch.reorder(lanes, k_outer)  # compute_at put the lanes (spatial in rf) outside
        *_, k_outer, lanes = sch.get_loops(rf)
        sch.vectorize(lanes)
        init = _decompose(sch, rf, [k_outer])
        if init is not None:
            sch.vectorize(sch.get_loops(init)[-1])
        if whole < _extent(sch, k_outer):
            # compute_at drops the guard of the last vector (the partial value keeps it as an
            # if_then_else, which runs lane by lane): the whole vectors in a loop of their own
            sch.loop_partition(k_outer, [whole])
    for block, _, lanes in plans:
        if lanes is None:
            _vectorize_inner(sch, sch.get_loops(block)[-1])
    _vectorize_inner(sch, sch.get_loops(out)[-1])
    _parallel_rows(sch, sch.get_loops(out)[: len(out_loops) - 1], work)
    return sch.mod["main"]


def _parallel_rows(sch: Schedule, rows: list, work: float) -> None:
    """The row loops fused and run in parallel (`_parallel`: all rows share the threads
    evenly, 8 x 4 x 197 rows as one loop); the widest alone where fusing is refused."""
    extents = [_extent(sch, lp) for lp in rows]
    if None not in extents and math.prod(extents) < 2:
        return  # one row: no loop to share out
    try:
        _parallel(sch, rows, work)
    except ScheduleError:
        _parallel_widest(sch, rows, work)


class GeneralReduction(CPUScheduleRule):
    """Functions that are a chain of row reductions and row-wise stages feeding one elementwise
    output (layer_norm, softmax), scheduled as one parallel loop over rows (`row_chain_schedule`).

    dl.ApplyDefaultSchedule(dl.cpu.GeneralReduction())
    """

    def apply_inlined(self, sch: Schedule) -> RuleResult:
        return row_chain_schedule(sch)
