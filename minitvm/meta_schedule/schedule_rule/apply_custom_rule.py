"""ApplyCustomRule: a block annotated schedule_rule="<name>" is scheduled by the function
registered as "meta_schedule.<target key>.<name>" (TVM's ApplyCustomRule)."""

from __future__ import annotations

import warnings
from typing import Any

from ...error import TuningError
from ...runtime.registry import get_global_func
from ...tir.schedule import BlockRV, Schedule
from ._block import SKIP_KEY, realize_of
from .schedule_rule import ScheduleRule


def custom_rule_name(name: str, key: str) -> str:
    return f"meta_schedule.{key}.{name}"


class ApplyCustomRule(ScheduleRule):
    """Run the registered function `fn(sch, block) -> list[Schedule]` the block's
    "schedule_rule" annotation names, looked up under each of the target's keys in order.
    An unknown name warns and drops the annotation, so the other rules see the block."""

    def _initialize_with_tune_context(self, context: Any) -> None:
        if getattr(context, "target", None) is None:
            raise TuningError(
                "ApplyCustomRule: the tune context has no target; the target's keys name the "
                "registered rule functions"
            )
        super()._initialize_with_tune_context(context)

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if self.target is None:
            raise TuningError(
                "ApplyCustomRule is not initialized with a TuneContext that has a target"
            )
        ann = realize_of(sch, block).block.annotations.get(SKIP_KEY)
        if ann is None:
            return [sch]
        name = str(getattr(ann, "value", ann))
        if name == "None":
            return [sch]
        keys = list(self.target.keys)
        for key in keys:
            fn = get_global_func(custom_rule_name(name, key), allow_missing=True)
            if fn is not None:
                return list(fn(sch, block))
        checked = "".join(f"\n  {custom_rule_name(name, key)}" for key in keys)
        warnings.warn(
            f'Unknown schedule rule "{name}" for target keys {keys}. Checked PackedFuncs:{checked}',
            stacklevel=2,
        )
        sch.unannotate(block, SKIP_KEY)
        return [sch]
