"""ScheduleRule: a stochastic transformation of one block, forking the schedule when it can
go several ways (TVM's meta_schedule.schedule_rule)."""

from __future__ import annotations

from ...tir.schedule import BlockRV, Schedule
from ..utils import TuneContextPart


class ScheduleRule(TuneContextPart):
    """Base class: `apply(sch, block)` returns the schedules the block may lead to."""

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        raise NotImplementedError(f"{type(self).__name__}.apply")


PyScheduleRule = ScheduleRule  # TVM's name for a rule written in Python
