"""Design-space checks: the sketches a rule set generates, matched against expected modules.

A sketch matches an expected module when replaying its trace with the expected sampling
decisions (in order, one per sampling instruction of that kind) gives the module, up to the
functions' `global_symbol`.
"""

from __future__ import annotations

from typing import Any

from ...error import ArgumentError
from ...ir import IRModule, structural_equal
from ...tir.schedule import Schedule, Trace
from ...tir.schedule.testing import verify_trace_roundtrip
from ..schedule_rule import ScheduleRule
from ..space_generator import PostOrderApply
from ..tune_context import TuneContext

Decisions = list[tuple[str, Any]]


def get_rules(kind: str, types: type | tuple[type, ...]) -> list[ScheduleRule]:
    """The default rules of target kind `kind` that are instances of `types`."""
    return [rule for rule in ScheduleRule.create(kind) if isinstance(rule, types)]


def _as_module(mod: Any) -> IRModule:
    return mod if isinstance(mod, IRModule) else IRModule({"main": mod})


def _strip_symbols(mod: IRModule) -> IRModule:
    out = IRModule()
    for gvar in mod.get_global_vars():
        func = mod[gvar]
        out[gvar] = func.without_attr("global_symbol") if hasattr(func, "without_attr") else func
    return out


def structural_equal_no_gs(lhs: IRModule, rhs: IRModule) -> bool:
    """Structural equality of two modules that ignores each function's `global_symbol`."""
    return structural_equal(_strip_symbols(_as_module(lhs)), _strip_symbols(_as_module(rhs)))


def generate_design_space(
    kind: str,
    mod: Any,
    target: Any,
    types: type | tuple[type, ...] | None,
    sch_rules: list[ScheduleRule] | None = None,
) -> list[Schedule]:
    """The sketches of `mod` under the `kind` rules of `types` (or exactly `sch_rules`)."""
    if sch_rules is None:
        sch_rules = get_rules(kind, types)
    elif types is not None:
        raise ArgumentError("generate_design_space: give either `types` or `sch_rules`, not both")
    generator = PostOrderApply(sch_rules=sch_rules, postprocs=[], mutator_probs={})
    context = TuneContext(mod=mod, target=target, space_generator=generator, task_name="test")
    return context.generate_design_space()


def _replay(mod: IRModule, sketch: Schedule, decisions: Decisions, debug_mask: Any):
    """`sketch`'s trace replayed on `mod` with `decisions`, or None when they do not fit."""
    pending = list(decisions)
    chosen = {}
    for inst in sketch.trace.insts:
        name = inst.kind.name
        if name.startswith("Sample") and pending and pending[0][0] == name:
            chosen[inst] = pending.pop(0)[1]
    if pending or len(chosen) != len(decisions):
        return None
    sch = Schedule(mod, debug_mask=debug_mask)
    Trace(insts=sketch.trace.insts, decisions=chosen).apply_to_schedule(sch, remove_postproc=True)
    return sch


def check_sketches(
    mod: Any,
    sketches: list[Schedule],
    expected_mods: list[Any],
    expected_decisions: list[Decisions],
    *,
    debug_mask: Any = "all",
) -> None:
    """Each expected module is one sketch under its decisions, and no sketch is left over."""
    if len(expected_mods) != len(expected_decisions):
        raise ArgumentError("check_sketches: one decision list per expected module")
    if len(sketches) != len(expected_mods):
        raise AssertionError(f"{len(sketches)} sketches generated, {len(expected_mods)} expected")
    mod = _as_module(mod)
    left = list(sketches)
    for number, (expected, decisions) in enumerate(zip(expected_mods, expected_decisions)):
        expected = _as_module(expected)
        for index, sketch in enumerate(left):
            sch = _replay(mod, sketch, decisions, debug_mask)
            if sch is not None and structural_equal_no_gs(sch.mod, expected):
                verify_trace_roundtrip(sch=sch, mod=mod, debug_mask=debug_mask, text_format="json")
                left.pop(index)
                break
        else:
            raise AssertionError(f"expected sketch #{number} is not among the generated sketches")


def print_sketches(sketches: list[Schedule]) -> None:
    """Print each sketch's module and its sampling decisions (to write an expected list)."""
    for index, sch in enumerate(sketches):
        print(f"###### {index}")
        print(sch.mod.script())
        for inst in sch.trace.insts:
            if inst in sch.trace.decisions:
                print(f'("{inst.kind.name}", {sch.trace.decisions[inst]}),')
