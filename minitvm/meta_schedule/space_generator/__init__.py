"""Space generators: turn a workload into design spaces, schedules whose traces hold sampled
decisions the search then varies (TVM's meta_schedule.space_generator).

>>> space = ms.space_generator.ScheduleFn(lambda sch: sch)
>>> schs = space.generate_design_space(mod)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import TuningError
from ...ir.module import IRModule
from ...tir.function import PrimFunc
from ...tir.schedule import Schedule
from ...tir.schedule.sampling import make_rng
from ..schedule_rule._block import as_target, block_names, func_of, target_of

_FROM_TARGET = "from-target"


class SpaceGenerator:
    """Base: holds the schedule rules, postprocessors and mutator probabilities tuning uses
    ("from-target" picks the target's defaults when a TuneContext initialises it)."""

    def __init__(
        self,
        sch_rules: Any = _FROM_TARGET,
        postprocs: Any = _FROM_TARGET,
        mutator_probs: Any = _FROM_TARGET,
    ) -> None:
        self.sch_rules = sch_rules
        self.postprocs = postprocs
        self.mutator_probs = mutator_probs
        self.target = None
        self._rng = make_rng(None)

    def _initialize_with_tune_context(self, context: Any) -> None:
        """Resolve "from-target" parts for context.target and initialise each part."""
        from .. import mutator, postproc, schedule_rule

        self.target = target_of(context)
        target = self.target or as_target("llvm")
        seed = getattr(context, "rand_state", None)
        self._rng = make_rng(None if seed is None or seed == -1 else int(seed))
        if self.sch_rules == _FROM_TARGET:
            self.sch_rules = schedule_rule.create_default(target)
        if self.postprocs == _FROM_TARGET:
            self.postprocs = postproc.create_default(target)
        if self.mutator_probs == _FROM_TARGET:
            self.mutator_probs = mutator.create_default(target)
        parts = list(self.sch_rules or []) + list(self.postprocs or [])
        parts += list(dict(self.mutator_probs or {}))
        for part in parts:
            init = getattr(part, "_initialize_with_tune_context", None)
            if init is not None:
                init(context)

    def _ensure_initialized(self) -> None:
        if _FROM_TARGET in (self.sch_rules, self.postprocs, self.mutator_probs):
            self._initialize_with_tune_context(_Context(self.target or as_target("llvm")))

    def _new_schedule(self, mod: IRModule | PrimFunc) -> Schedule:
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        return Schedule(mod, seed=self._rng.fork_seed())

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        raise NotImplementedError(f"{type(self).__name__}.generate_design_space")

    def clone(self) -> SpaceGenerator:
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out


class PySpaceGenerator(SpaceGenerator):
    """Base of a space generator written in Python: a subclass overrides
    `_initialize_with_tune_context` and `generate_design_space` (TVM's PySpaceGenerator)."""

    def _initialize_with_tune_context(self, context: Any) -> None:
        raise TuningError(
            "PySpaceGenerator's InitializeWithTuneContext method not implemented! Override "
            f"_initialize_with_tune_context in {type(self).__name__}."
        )

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        raise TuningError(
            "PySpaceGenerator's GenerateDesignSpace method not implemented! Override "
            f"generate_design_space in {type(self).__name__}."
        )


class _Context:
    """The part of a TuneContext the rules read, for a generator used on its own."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.mod = None
        self.rand_state = None


class ScheduleFn(SpaceGenerator):
    """A space from a function `fn(sch)` that samples and transforms; it may return None (the
    schedule it changed), a Schedule, or a list of them."""

    def __init__(
        self,
        sch_fn: Callable[[Schedule], Any],
        sch_rules: Any = _FROM_TARGET,
        postprocs: Any = _FROM_TARGET,
        mutator_probs: Any = _FROM_TARGET,
    ) -> None:
        if not callable(sch_fn):
            raise TuningError(f"ScheduleFn takes a function fn(sch), got {sch_fn!r}")
        super().__init__(sch_rules, postprocs, mutator_probs)
        self.sch_fn = sch_fn

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        self._ensure_initialized()
        sch = self._new_schedule(mod)
        result = self.sch_fn(sch)
        if result is None:
            return [sch]
        if isinstance(result, Schedule):
            return [result]
        if isinstance(result, list | tuple) and all(isinstance(s, Schedule) for s in result):
            return list(result)
        raise TuningError(
            f"ScheduleFn: {getattr(self.sch_fn, '__name__', self.sch_fn)} returned "
            f"{type(result).__name__}; return None, a tir.Schedule or a list of them"
        )


class PostOrderApply(SpaceGenerator):
    """Apply each schedule rule to every block, consumers before producers (the root block
    last); a rule may fork the schedule, and every fork goes on through the rules left.
    Whole-function rules (`is_function_rule`) add their own spaces beside the result."""

    def __init__(
        self,
        f_block_filter: Callable | None = None,
        sch_rules: Any = _FROM_TARGET,
        postprocs: Any = _FROM_TARGET,
        mutator_probs: Any = _FROM_TARGET,
    ) -> None:
        super().__init__(sch_rules, postprocs, mutator_probs)
        self.f_block_filter = f_block_filter

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        self._ensure_initialized()
        start = self._new_schedule(mod)
        whole = [r for r in self.sch_rules if getattr(r, "is_function_rule", False)]
        per_block = [r for r in self.sch_rules if not getattr(r, "is_function_rule", False)]
        names = block_names(func_of(start)[1])
        if self.f_block_filter is not None:
            names = [n for n in names if self.f_block_filter(n)]
        extra = [s for rule in whole for s in rule.apply_function(start)]  # copies `start`
        result = [start]
        for rule in per_block:
            result = [s for sch in result for s in self._apply_rule(rule, sch, names)]
        return result + extra

    @staticmethod
    def _apply_rule(rule: Any, sch: Schedule, names: list[str]) -> list[Schedule]:
        """`rule` on each block still present (last block first), following every fork."""
        stack = [(sch, list(names))]
        done = []
        while stack:
            s, todo = stack.pop()
            if not todo:
                done.append(s)
                continue
            name = todo.pop()
            func = func_of(s)[1]
            if name not in block_names(func) or _skipped(rule, func, name):
                stack.append((s, todo))
                continue
            for forked in rule.apply(s, s.get_block(name)):
                stack.append((forked, list(todo)))
        done.reverse()  # forks in the order the rule made them
        return done


def _skipped(rule: Any, func: PrimFunc, name: str) -> bool:
    """A block annotated schedule_rule=... is left to ApplyCustomRule (as TVM); "None" means
    its author scheduled it."""
    from ...tir.schedule.tree import find_block
    from ..schedule_rule import ApplyCustomRule
    from ..schedule_rule._block import SKIP_KEY

    if isinstance(rule, ApplyCustomRule):
        return False
    found = find_block(func, name)
    return found is not None and SKIP_KEY in found[0].block.annotations


class SpaceGeneratorUnion(SpaceGenerator):
    """The design spaces of several generators, concatenated."""

    def __init__(
        self,
        space_generators: list,
        sch_rules: Any = _FROM_TARGET,
        postprocs: Any = _FROM_TARGET,
        mutator_probs: Any = _FROM_TARGET,
    ) -> None:
        super().__init__(sch_rules, postprocs, mutator_probs)
        self.space_generators = [create(g) for g in space_generators]

    def _initialize_with_tune_context(self, context: Any) -> None:
        super()._initialize_with_tune_context(context)
        for g in self.space_generators:
            g._initialize_with_tune_context(context)

    def generate_design_space(self, mod: IRModule) -> list[Schedule]:
        self._ensure_initialized()
        for g in self.space_generators:
            g._ensure_initialized()
        return [s for g in self.space_generators for s in g.generate_design_space(mod)]


_KINDS: dict[str, Callable[..., SpaceGenerator]] = {
    "post-order-apply": PostOrderApply,
    "post_order_apply": PostOrderApply,
}


def create(space: Any = "post-order-apply", target: Any = None, **kwargs: Any) -> SpaceGenerator:
    """A SpaceGenerator from a kind name, a function fn(sch), a list (a union) or a generator."""
    if isinstance(space, SpaceGenerator):
        made = space
    elif isinstance(space, str) and space in _KINDS:
        made = _KINDS[space](**kwargs)
    elif isinstance(space, list | tuple):
        made = SpaceGeneratorUnion(list(space), **kwargs)
    elif callable(space):
        made = ScheduleFn(space, **kwargs)
    else:
        raise TuningError(
            f"space_generator.create: unknown space {space!r}; use 'post-order-apply', a "
            "function fn(sch), a list of them or a SpaceGenerator"
        )
    if target is not None and made.target is None:
        made.target = as_target(target)
    return made


__all__ = [
    "PostOrderApply",
    "PySpaceGenerator",
    "ScheduleFn",
    "SpaceGenerator",
    "SpaceGeneratorUnion",
    "create",
]
