"""ApplyDefaultSchedule: our untuned DefaultSchedule as one point of the design space, replayed
through the schedule so its trace is recorded (tuning can then only match or beat it)."""

from __future__ import annotations

from ...error import ScheduleError
from ...relax.transform.default_schedule import (
    _RULES,
    _attach_epilogue,
    _blocks,
    _inline_intermediates,
    _kind,
    _simple_nest,
    is_scheduled,
)
from ...tir.schedule import Schedule
from ._block import func_of
from .schedule_rule import ScheduleRule


def apply_default_schedule(sch: Schedule) -> None:
    """Run DefaultSchedule's rules on `sch` (inline intermediates, then each block by kind)."""
    _, func = func_of(sch)
    if is_scheduled(func) or not _blocks(func):
        return
    _inline_intermediates(sch)
    for name in [r.block.name_hint for r in _blocks(func_of(sch)[1])]:
        # looked up afresh: an earlier rule may have moved or folded this block
        current = func_of(sch)[1]
        r = next((r for r in _blocks(current) if r.block.name_hint == name), None)
        kind = None if r is None else _kind(r.block)
        if kind is None:
            continue
        block = sch.get_block(name)
        loops = _simple_nest(sch, block, r)
        if loops is not None:
            attach = _RULES[kind](sch, block, loops)
            if attach is not None:
                _attach_epilogue(sch, block, attach)


class ApplyDefaultSchedule(ScheduleRule):
    """A whole-function rule: one extra design space, DefaultSchedule's choices.

    DefaultSchedule's row-chain plan (layer_norm-like chains, built outside a Schedule) has no
    trace; such functions get the per-block rules here instead."""

    is_function_rule = True

    def apply_function(self, sch: Schedule) -> list[Schedule]:
        s = sch.copy()
        try:
            apply_default_schedule(s)
        except ScheduleError:
            return []  # the per-block rules still cover this function
        return [s]
