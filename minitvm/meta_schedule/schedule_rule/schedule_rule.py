"""ScheduleRule: a stochastic transformation of one block, forking the schedule when it can
go several ways (TVM's meta_schedule.schedule_rule)."""

from __future__ import annotations

from typing import Any

from ...tir.schedule import BlockRV, Schedule
from ._block import target_of


class ScheduleRule:
    """Base class: `apply(sch, block)` returns the schedules the block may lead to."""

    target: Any = None

    def _initialize_with_tune_context(self, context: Any) -> None:
        self.target = target_of(context)

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def clone(self) -> ScheduleRule:
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def __repr__(self) -> str:
        return f"meta_schedule.{type(self).__name__}"


PyScheduleRule = ScheduleRule  # TVM's name for a rule written in Python
