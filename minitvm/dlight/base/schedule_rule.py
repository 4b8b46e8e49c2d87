"""ScheduleRule: TVM's dlight rule interface, one object that schedules one PrimFunc or declines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...tir.function import PrimFunc
from ...tir.schedule import Schedule

# what a rule returns: nothing (it does not apply), a schedule, several, or (minitvm) a PrimFunc
RuleResult = None | Schedule | list[Schedule] | PrimFunc


class ScheduleRule:
    """A rule of the default schedule: `apply` returns the scheduled function, or None when the
    rule does not fit it (the next rule of `ApplyDefaultSchedule` is tried).

    class Identity(dl.ScheduleRule):
        def apply(self, func, target, tunable):
            return tvm.tir.Schedule(func)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> RuleResult:
        raise NotImplementedError(f"{type(self).__name__}.apply(func, target, tunable)")

    def apply_config(self, func: PrimFunc, config: Any) -> RuleResult:
        raise NotImplementedError(f"{type(self).__name__} has no tuned configurations")

    def is_target_available(self, target: Any) -> bool:
        """Whether the rule may run for `target` (every rule here: any target)."""
        return True

    @staticmethod
    def from_callable(name: str) -> Callable[[Callable[..., RuleResult]], ScheduleRule]:
        """A decorator making a rule named `name` of `f(func, target, tunable)`.

        @dl.ScheduleRule.from_callable("mark_only")
        def mark_only(func, target, tunable):
            return tvm.tir.Schedule(func)
        """

        def decorator(f: Callable[..., RuleResult]) -> ScheduleRule:
            class _Rule(ScheduleRule):
                def apply(self, func: PrimFunc, target: Any, tunable: bool) -> RuleResult:
                    return f(func, target, tunable)

            _Rule.__name__ = _Rule.__qualname__ = name
            return _Rule()

        return decorator

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def result_func(result: RuleResult) -> PrimFunc | None:
    """The PrimFunc a rule's result stands for (the first schedule of a list); None for None."""
    if isinstance(result, list):
        result = result[0] if result else None
    if result is None or isinstance(result, PrimFunc):
        return result
    if isinstance(result, Schedule):
        return result.mod["main"]
    raise TypeError(
        f"a schedule rule returned {type(result).__name__}; return None, a tir.Schedule, a list "
        "of them or a PrimFunc"
    )
