"""TuneContext: everything one tuning task knows (module, target, space, strategy, seed)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..error import TuningError
from .utils import normalize_mod, parse_target


class TuneContext:
    """One task: `mod` (IRModule with a "main" PrimFunc), `target`, its design-space generator
    and search strategy, a name, a seed (`rand_state`) and the threads to use."""

    def __init__(
        self,
        mod: Any = None,
        target: Any = None,
        space_generator: Any = None,
        search_strategy: Any = None,
        task_name: str = "main",
        rand_state: int = -1,
        num_threads: Any = "physical",
        logger: Any = None,
    ) -> None:
        self.mod = None if mod is None else normalize_mod(mod)
        self.target = None if target is None else parse_target(target)
        self.task_name = task_name
        if not isinstance(rand_state, int):
            raise TuningError(f"rand_state must be an int (-1: random), got {rand_state!r}")
        self.rand_state = (
            rand_state if rand_state >= 0 else int(np.random.SeedSequence().entropy % 2**31)
        )
        self.rng = np.random.default_rng(self.rand_state)
        self.num_threads = (
            (os.cpu_count() or 1) if num_threads in ("physical", "logical") else int(num_threads)
        )
        self.logger = logger
        # as TVM does: a name ("post-order-apply", "evolutionary"), a function fn(sch) or a
        # list of spaces stand for the objects they create
        if space_generator is not None:
            from . import space_generator as _space

            if not isinstance(space_generator, _space.SpaceGenerator):
                space_generator = _space.create(space_generator, target=self.target)
        if isinstance(search_strategy, str):
            from . import search_strategy as _strategy

            search_strategy = _strategy.create(search_strategy)
        self.space_generator = space_generator
        self.search_strategy = search_strategy
        for part in (space_generator, search_strategy):
            init = getattr(part, "_initialize_with_tune_context", None)
            if init is not None:
                init(self)

    def fork_seed(self) -> int:
        """A new seed drawn from the task's random state (schedules get their own)."""
        return int(self.rng.integers(0, 2**31 - 1))

    def generate_design_space(self) -> list:
        if self.space_generator is None:
            raise TuningError(f"task '{self.task_name}' has no space generator")
        return self.space_generator.generate_design_space(self.mod)

    def clone(self) -> TuneContext:
        return TuneContext(
            self.mod,
            self.target,
            self.space_generator,
            self.search_strategy,
            self.task_name,
            self.fork_seed(),
            self.num_threads,
            self.logger,
        )
