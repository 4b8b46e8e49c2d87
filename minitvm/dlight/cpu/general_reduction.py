"""GeneralReduction: a chain of row reductions feeding one elementwise output (layer_norm) as
one parallel loop over rows, each row's reductions and output computed under it."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.function import PrimFunc
from ...tir.schedule import BlockRV, Schedule
from ..base.analysis import blocks as _blocks
from ..base.schedule_rule import RuleResult
from .analysis import _EXP, BlockKind, _calls, _kind
from .base import CPUScheduleRule
from .gemv import _row_reduction_lanes
from .utils import _decompose, _extent, _parallel_widest, _simple_nest, _vectorize_inner, _work


def _row_chain(func: PrimFunc) -> PrimFunc | None:
    """`func` scheduled as one parallel loop over rows when it is a chain of row reductions
    feeding one elementwise output (layer_norm: sum, squared sum, normalise), each row's
    whole chain computed in L1 under the row loop instead of one parallel pass over all rows
    per stage (layer_norm 128x768: 60 -> 31 us, 1536x128: 92 -> 75 us); None (nothing done)
    for any other function or when a primitive refuses.

    A chain evaluating `exp` is left to the per-block rules: softmax is bound by its exp,
    computed twice per element by its definition, and ran 1.05-1.25x slower chained
    (1536x128, 128x768, 96x2048)."""
    sch = Schedule(func)
    realizes = _blocks(func)
    if len(realizes) < 2 or any(_calls(r.block, _EXP) for r in realizes):
        return None
    *stages, last = realizes
    out = sch.get_block(last.block.name_hint)
    out_loops = _simple_nest(sch, out, last)
    if _kind(last.block) is not BlockKind.SPATIAL or out_loops is None or len(out_loops) < 2:
        return None
    rows = [_extent(sch, lp) for lp in out_loops[:-1]]
    plans = []
    for r in stages:
        block = sch.get_block(r.block.name_hint)
        loops = _simple_nest(sch, block, r)
        if _kind(r.block) not in (BlockKind.REDUCTION, BlockKind.PRODUCT) or loops is None:
            return None  # (a squared sum is a product)
        lanes = _row_reduction_lanes(sch, r.block, loops)
        if lanes is None or [_extent(sch, lp) for lp in loops[:-1]] != rows:
            return None
        if (_extent(sch, loops[-1]) or 0) < 2 * lanes:
            return None  # one vector per row: no loop of partial sums to keep
        plans.append((block, loops, lanes))
    try:
        return _chain_rows(sch, out, plans, _work(sch, out_loops))
    except ScheduleError:
        return None  # e.g. a stage reads other rows than it writes: per-block rules instead


def _chain_rows(sch: Schedule, out: BlockRV, plans: list, work: float) -> PrimFunc:
    """Each row reduction of `plans` as vector partial sums (rfactor) then the lanes added,
    all computed at the output's row loop, which runs in parallel."""
    rfs = []
    for block, loops, lanes in plans:
        _, ki = sch.split(loops[-1], [None, lanes])
        rfs.append(sch.rfactor(ki, len(loops) - 1))
    out_name = sch.get(out).name_hint
    stages = [r.block.name_hint for r in _blocks(sch.mod["main"])]
    out_loops = sch.get_loops(out)
    for name in reversed(stages):
        if name != out_name:
            sch.compute_at(sch.get_block(name), out_loops[-2])
    for rf in rfs:
        *_, k_outer, lanes = sch.get_loops(rf)
        sch.reorder(lanes, k_outer)  # compute_at put the lanes (spatial in rf) outside
        *_, k_outer, lanes = sch.get_loops(rf)
        sch.vectorize(lanes)
        init = _decompose(sch, rf, [k_outer])
        if init is not None:
            sch.vectorize(sch.get_loops(init)[-1])
    _vectorize_inner(sch, sch.get_loops(out)[-1])
    _parallel_widest(sch, sch.get_loops(out)[: len(out_loops) - 1], work)
    return sch.mod["main"]


class GeneralReduction(CPUScheduleRule):
    """Functions that are a chain of row reductions feeding one elementwise output (layer_norm,
    not softmax: see `_row_chain`), scheduled as one parallel loop over rows.

    dl.ApplyDefaultSchedule(dl.cpu.GeneralReduction())
    """

    def apply_inlined(self, sch: Schedule) -> RuleResult:
        return _row_chain(sch.mod["main"])
