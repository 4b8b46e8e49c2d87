"""ScheduleRule: a stochastic transformation of one block, forking the schedule when it can
go several ways (TVM's meta_schedule.schedule_rule)."""

from __future__ import annotations

from ...tir.schedule import BlockRV, Schedule
from ..utils import TuneContextPart


class ScheduleRule(TuneContextPart):
    """Base class: `apply(sch, block)` returns the schedules the block may lead to."""

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    @staticmethod
    def create(kind: str = "llvm") -> list:
        """The default rules of target kind `kind` ("llvm", "cuda"): TVM's spelling of
        `create_default`."""
        from . import create_default

        return create_default(kind)


PyScheduleRule = ScheduleRule  # TVM's name for a rule written in Python
