"""ApplyDefaultSchedule: the module pass that gives every unscheduled PrimFunc the first rule
that fits it (TVM's `dlight.ApplyDefaultSchedule`)."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.transform import Pass
from ...target import Target
from ...tir.function import PrimFunc
from .analysis import IS_SCHEDULED, marked_scheduled
from .schedule_rule import ScheduleRule, result_func


def apply_rules(
    func: PrimFunc, rules: tuple, target: Any, tunable: bool = False
) -> PrimFunc | None:
    """`func` scheduled by the first of `rules` available for `target` that applies; None when
    none does."""
    for rule in rules:
        if not rule.is_target_available(target):
            continue
        out = result_func(rule.apply(func, target, tunable))
        if out is not None:
            return out
    return None


def apply_default_schedule(mod: IRModule, rules: tuple, target: Any = None) -> IRModule:
    """Every PrimFunc of `mod` not marked `tir.is_scheduled` given the first rule that applies,
    then marked; functions no rule fits stay as they are."""
    for rule in rules:
        if not isinstance(rule, ScheduleRule):
            raise TypeError(
                f"ApplyDefaultSchedule: {rule!r} is not a dlight.ScheduleRule; pass rule objects, "
                "e.g. dl.gpu.Fallback() (note the call)"
            )
    target = _target(target)
    out = mod.copy()
    for gv, func in mod.functions_items():
        if not isinstance(func, PrimFunc) or marked_scheduled(func):
            continue
        new = apply_rules(func, rules, _func_target(func, target))
        if new is not None:
            out[gv] = new.with_attr(IS_SCHEDULED, True)
    return out


def _target(target: Any) -> Any:
    """`target` as a Target: the given one, else the current one (`with Target(...)`), else the
    host (llvm)."""
    if target is not None:
        return target if isinstance(target, Target) else Target(target)
    return Target.current() or Target("llvm")


def _func_target(func: PrimFunc, target: Target) -> Target:
    """The function's own "target" attribute when it has one (as TVM: a GPU pass leaves a
    function pinned to the host alone), else `target`."""
    own = func.attrs.get("target") if func.attrs is not None else None
    return target if own is None else _target(own)


def ApplyDefaultSchedule(*rules: ScheduleRule) -> Pass:
    """TVM's `dlight.ApplyDefaultSchedule`: each unscheduled PrimFunc gets the first of `rules`
    that applies, for the current target.

    with tvm.target.Target("opencl"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.Fallback())(mod)
    """
    return Pass(lambda mod: apply_default_schedule(mod, rules), "ApplyDefaultSchedule")
