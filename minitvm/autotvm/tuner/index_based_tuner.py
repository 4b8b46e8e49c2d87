"""Tuners that walk the space's indices: in order (grid search) or in random order."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import TuningError
from .tuner import Tuner


class IndexBaseTuner(Tuner):
    """Proposes the valid indices of [begin_idx, end_idx) (`range_idx`: inclusive bounds,
    default the whole space), each once; `visited_max` of them pass the multi_filter."""

    def __init__(self, task: Any, range_idx: tuple[int, int] | None = None) -> None:
        super().__init__(task)
        last = self.space.range_length - 1
        lo, hi = range_idx if range_idx is not None else (0, last)
        if not 0 <= lo <= hi <= last:
            raise TuningError(
                f"range_idx {range_idx} must lie within the space's indices 0..{last}"
            )
        self.begin_idx, self.end_idx = lo, hi + 1
        self.range_length = self.end_idx - self.begin_idx
        self.visited_max = self.space.subrange_length(self.begin_idx, self.end_idx)

    def has_next(self) -> bool:
        return len(self.visited) < self.visited_max

    def next_batch(self, batch_size: int) -> list:
        batch = []
        while len(batch) < batch_size and self.has_next():
            index = self._next_index()
            self.visited.add(index)
            batch.append(self.space.get(index))
        return batch

    def _next_index(self) -> int:
        raise NotImplementedError


class GridSearchTuner(IndexBaseTuner):
    """Enumerates the valid indices in order (`index` is the next one)."""

    def __init__(self, task: Any, range_idx: tuple[int, int] | None = None) -> None:
        super().__init__(task, range_idx)
        begin = self.begin_idx
        self.index = begin if self.space.is_index_valid(begin) else self._after(begin)

    def _after(self, index: int) -> int:
        found = self.space.get_next_index(index, start=self.begin_idx, end=self.end_idx)
        return self.end_idx if found is None else found

    def _next_index(self) -> int:
        index, self.index = self.index, self._after(self.index)
        return index


class RandomTuner(IndexBaseTuner):
    """Enumerates the valid indices in a random order without repeats (seeded by `seed`)."""

    def __init__(
        self, task: Any, range_idx: tuple[int, int] | None = None, seed: int | None = None
    ) -> None:
        super().__init__(task, range_idx)
        self.rng = np.random.default_rng(seed)
        self._order: list[int] | None = None

    def _next_index(self) -> int:
        if self.range_length <= 1 << 20:  # a shuffled list of the range fits in memory
            if self._order is None:
                order = self.begin_idx + self.rng.permutation(self.range_length)
                self._order = [int(i) for i in order if self.space.is_index_valid(int(i))][::-1]
            return self._order.pop()
        while True:  # a huge range: draw until an untried valid index
            index = int(self.rng.integers(self.begin_idx, self.end_idx))
            if index not in self.visited and self.space.is_index_valid(index):
                return index
