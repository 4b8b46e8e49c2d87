"""ApplyDefaultSchedule: our untuned DefaultSchedule as one point of the design space, replayed
through the schedule so its trace is recorded (tuning can then only match or beat it)."""

from __future__ import annotations

import sys

from ...dlight.cpu.default import _blocks, _inline_intermediates, is_scheduled
from ...dlight.cpu.general_reduction import row_chain_schedule
from ...error import ScheduleError
from ...tir.schedule import Schedule
from ._block import func_of
from .schedule_rule import ScheduleRule


def apply_default_schedule(sch: Schedule) -> Schedule:
    """DefaultSchedule's rules run on `sch` (inline intermediates, then GeneralReduction's row
    chain, else each block by kind in DefaultSchedule's own order); the schedule they leave,
    trace included."""
    _, func = func_of(sch)
    if is_scheduled(func) or not _blocks(func):
        return sch
    _inline_intermediates(sch)
    chained = row_chain_schedule(sch)
    if chained is not None:
        return chained
    for name in _order(func_of(sch)[1]):
        sch = _schedule_block(sch, name)
    return sch


def _order(func):
    """DefaultSchedule's block order (reductions first where it defines one)."""
    ds = sys.modules["minitvm.dlight.cpu.default"]
    order = getattr(ds, "_schedule_order", None)
    return order(func) if order is not None else [r.block.name_hint for r in _blocks(func)]


def _schedule_block(sch: Schedule, name: str) -> Schedule:
    """One block by DefaultSchedule's rule for its kind; its own driver step when it has one
    (the rule table may list fallbacks), else the single rule of the table."""
    ds = sys.modules["minitvm.dlight.cpu.default"]
    step = getattr(ds, "_schedule_block", None)
    if step is not None:
        return step(sch, name)
    r = next((r for r in _blocks(func_of(sch)[1]) if r.block.name_hint == name), None)
    kind = None if r is None else ds._kind(r.block)
    if kind is None:
        return sch
    block = sch.get_block(name)
    loops = ds._simple_nest(sch, block, r)
    if loops is not None:
        attach = ds._RULES[kind](sch, block, loops)
        if attach is not None:
            ds._attach_epilogue(sch, block, attach)
    return sch


class ApplyDefaultSchedule(ScheduleRule):
    """A whole-function rule: one extra design space, DefaultSchedule's choices (its row-chain
    plan for layer_norm and softmax included, replayed with its trace)."""

    is_function_rule = True

    def apply_function(self, sch: Schedule) -> list[Schedule]:
        try:
            return [apply_default_schedule(sch.copy())]
        except ScheduleError:
            return []  # the per-block rules still cover this function
