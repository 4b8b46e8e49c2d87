"""A genetic-algorithm tuner: generations of configs, bred from the fastest measured ones."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import TuningError
from .tuner import Tuner, measured_flops


class GATuner(Tuner):
    """Each generation (`genes`, knob lists) has up to `pop_size` configs never proposed
    before; the next is bred from the measured ones (parents drawn by throughput, knob-wise
    crossover, each knob mutated with `mutation_prob`); the `elite_num` fastest breed more."""

    def __init__(
        self,
        task: Any,
        pop_size: int = 100,
        elite_num: int = 3,
        mutation_prob: float = 0.1,
        seed: int | None = None,
    ) -> None:
        super().__init__(task)
        if pop_size < 1 or not 0 <= elite_num <= pop_size:
            raise TuningError(
                f"GATuner: need pop_size >= 1 and 0 <= elite_num <= pop_size, got "
                f"pop_size={pop_size}, elite_num={elite_num}"
            )
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = elite_num
        self.mutation_prob = mutation_prob
        self.rng = np.random.default_rng(seed)
        self.scores: dict[int, float] = {}
        self.genes: list[list[int]] = []
        self.trial_pt = 0
        self._start_generation(self._random_untried(self.pop_size))

    def has_next(self) -> bool:
        # visited holds the whole current generation, measured or not
        return len(self.visited) - (len(self.genes) - self.trial_pt) < len(self.space)

    def next_batch(self, batch_size: int) -> list:
        batch = []
        while len(batch) < batch_size and self.has_next():
            if self.trial_pt >= len(self.genes):
                self._start_generation(self._next_generation())
                if not self.genes:
                    break
            batch.append(self.space.get(self.space.knob2point(self.genes[self.trial_pt])))
            self.trial_pt += 1
        return batch

    def update(self, inputs: list, results: list) -> None:
        for inp, res in zip(inputs, results):
            flops = measured_flops(self.task.flop, res)
            self.scores[inp.config.index] = flops

    def _start_generation(self, indices: list[int]) -> None:
        self.genes = [self.space.point2knob(i) for i in indices]
        self.visited.update(indices)
        self.trial_pt = 0

    def _next_generation(self) -> list[int]:
        """Children of the measured configs never proposed before (random ones fill up)."""
        ranked = sorted(self.scores, key=self.scores.get, reverse=True)
        if not ranked:
            return self._random_untried(self.pop_size)
        weights = np.array([self.scores[i] for i in ranked]) + 1e-8
        weights /= weights.sum()
        elites = ranked[: self.elite_num]
        children: list[int] = []
        for _ in range(20 * self.pop_size):
            if len(children) >= self.pop_size:
                break
            a, b = (int(x) for x in self.rng.choice(ranked, 2, p=weights))
            if elites and self.rng.random() < 0.5:
                a = elites[int(self.rng.integers(len(elites)))]
            child = self._breed(self.space.point2knob(a), self.space.point2knob(b))
            fresh = child not in self.visited and child not in children
            if fresh and self.space.is_index_valid(child):
                children.append(child)
        return children + self._random_untried(self.pop_size - len(children), set(children))

    def _breed(self, ka: list[int], kb: list[int]) -> int:
        knob = [x if self.rng.random() < 0.5 else y for x, y in zip(ka, kb)]
        for j, dim in enumerate(self.space.dims):
            if self.rng.random() < self.mutation_prob:
                knob[j] = int(self.rng.integers(dim))
        return self.space.knob2point(knob)

    def _random_untried(self, count: int, taken: set | None = None) -> list[int]:
        taken = set(taken or ()) | self.visited
        left = len(self.space) - len(taken)
        out: list[int] = []
        while len(out) < min(count, left):
            i = int(self.rng.integers(self.space.range_length))
            if i not in taken and self.space.is_index_valid(i):
                taken.add(i)
                out.append(i)
        return out
