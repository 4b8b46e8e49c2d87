"""Tuners that walk the space's indices: in order (grid search) or in random order."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import TuningError
from .tuner import Tuner


class IndexBaseTuner(Tuner):
    """Proposes untried indices of `range_idx` (inclusive bounds, default the whole space)."""

    def __init__(self, task: Any, range_idx: tuple[int, int] | None = None) -> None:
        super().__init__(task)
        last = self.space.range_length - 1
        lo, hi = range_idx if range_idx is not None else (0, last)
        if not 0 <= lo <= hi <= last:
            raise TuningError(
                f"range_idx {range_idx} must lie within the space's indices 0..{last}"
            )
        self.range_length = hi - lo + 1
        self.index_offset = lo
        self.counter = 0

    def has_next(self) -> bool:
        return self.counter < self.range_length

    def next_batch(self, batch_size: int) -> list:
        batch = []
        while len(batch) < batch_size and self.has_next():
            index = self.index_offset + self._order(self.counter)
            self.counter += 1
            if self.space.is_index_valid(index):  # a multi_filter leaves holes
                self.visited.add(index)
                batch.append(self.space.get(index))
        return batch

    def _order(self, counter: int) -> int:
        raise NotImplementedError


class GridSearchTuner(IndexBaseTuner):
    """Enumerates the space in index order."""

    def _order(self, counter: int) -> int:
        return counter


class RandomTuner(IndexBaseTuner):
    """Enumerates the space in a random order without repeats (seeded by `seed`)."""

    def __init__(
        self, task: Any, range_idx: tuple[int, int] | None = None, seed: int | None = None
    ) -> None:
        super().__init__(task, range_idx)
        self.rng = np.random.default_rng(seed)
        self._perm: list[int] = []
        self._taken: set[int] = set()

    def _order(self, counter: int) -> int:
        # a full permutation of a huge space would not fit: draw until an untried index
        if self.range_length <= 1 << 20:
            if not self._perm:
                self._perm = [int(i) for i in self.rng.permutation(self.range_length)]
            return self._perm[counter]
        while True:
            i = int(self.rng.integers(self.range_length))
            if i not in self._taken:
                self._taken.add(i)
                return i
