"""Stand-in for `space_generator` until its package lands: ScheduleFn only.

Dropped once minitvm/meta_schedule/space_generator/ exists (the package __init__ prefers it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..error import TuningError
from ..tir.schedule import Schedule


class SpaceGenerator:
    """Base class: `generate_design_space(mod) -> list[Schedule]`."""

    postprocs: tuple = ()
    mutator_probs: tuple = ()

    def _initialize_with_tune_context(self, context: Any) -> None:
        self.context = context

    def generate_design_space(self, mod: Any) -> list[Schedule]:
        raise NotImplementedError


class ScheduleFn(SpaceGenerator):
    """A design space from a function `fn(sch)` that samples and schedules (it may return
    None, a Schedule or a list of them)."""

    def __init__(
        self,
        sch_fn: Callable,
        sch_rules: Any = None,
        postprocs: Any = None,
        mutator_probs: Any = None,
    ) -> None:
        self.sch_fn = sch_fn
        self.postprocs = list(postprocs or []) if not isinstance(postprocs, str) else []
        self.mutator_probs = dict(mutator_probs or {}) if not isinstance(mutator_probs, str) else {}

    def generate_design_space(self, mod: Any) -> list[Schedule]:
        seed = self.context.fork_seed() if hasattr(self, "context") else None
        sch = Schedule(mod, seed=seed)
        out = self.sch_fn(sch)
        if out is None:
            return [sch]
        if isinstance(out, Schedule):
            return [out]
        if isinstance(out, (list, tuple)) and all(isinstance(s, Schedule) for s in out):
            return list(out)
        raise TuningError(
            f"ScheduleFn: {getattr(self.sch_fn, '__name__', self.sch_fn)} returned "
            f"{type(out).__name__}; return None, a tir.Schedule or a list of them"
        )


def create(space: Any = "post-order-apply", target: Any = None) -> SpaceGenerator:
    if isinstance(space, SpaceGenerator):
        return space
    if callable(space):
        return ScheduleFn(space)
    raise TuningError(
        f"space={space!r} needs the default design space (meta_schedule.space_generator), "
        "which is not available yet; pass space=ms.space_generator.ScheduleFn(fn)"
    )
