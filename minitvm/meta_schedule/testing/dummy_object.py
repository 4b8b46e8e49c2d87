"""Stand-ins for tests that exercise tuning's plumbing without building or running anything."""

from __future__ import annotations

import random
from typing import Any

from ..builder import BuilderInput, BuilderResult, PyBuilder
from ..mutator import PyMutator
from ..runner import PyRunner, RunnerFuture, RunnerInput, RunnerResult


class DummyBuilder(PyBuilder):
    """Every input "builds" to the artifact path "test_path"."""

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        return [BuilderResult("test_path", None) for _ in build_inputs]


class DummyRunner(PyRunner):
    """Every input "runs" in 2 random times between 5 and 30 seconds (seeded by `seed`)."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        return [
            RunnerFuture(RunnerResult([self._rng.uniform(5, 30) for _ in range(2)], None))
            for _ in runner_inputs
        ]


class DummyMutator(PyMutator):
    """Leaves the trace as it is."""

    def apply(self, trace: Any, rng: Any = None) -> Any:
        return trace

    def clone(self) -> DummyMutator:
        return DummyMutator()
