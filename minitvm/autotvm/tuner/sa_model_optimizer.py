"""Simulated annealing over a config space, guided by a cost model (TVM's optimizer)."""

from __future__ import annotations

import heapq
import logging
from typing import Any

import numpy as np

from .model_based_tuner import CostModel, ModelOptimizer

logger = logging.getLogger("autotvm")


class SimulatedAnnealingOptimizer(ModelOptimizer):
    """`parallel_size` walkers each step to a random neighbour (one knob changed), kept
    with probability exp(min(gain / temperature, 1)); the temperature falls linearly from
    temp[0] to temp[1] over `n_iter` steps (a single number: constant). Every point the
    walkers score is a candidate; stops `early_stop` steps after the best set last changed.
    With `persistent`, the next call resumes from where the walkers stopped."""

    def __init__(
        self,
        task: Any,
        n_iter: int = 500,
        temp: Any = (1, 0),
        persistent: bool = True,
        parallel_size: int = 128,
        early_stop: int | None = 50,
        log_interval: int = 50,
        seed: int | None = None,
    ) -> None:
        self.task = task
        self.space = task.config_space
        self.n_iter = n_iter
        self.temp = temp
        self.persistent = persistent
        self.parallel_size = min(parallel_size, len(self.space))
        self.early_stop = early_stop or 10**9
        self.log_interval = log_interval
        self.rng = np.random.default_rng(seed)
        self.points: np.ndarray | None = None

    def find_maximums(self, model: CostModel, num: int, exclusive: Any) -> list[int]:
        if self.persistent and self.points is not None:
            points = self.points
        else:
            points = self.space.sample_ints(self.parallel_size)
        scores = np.asarray(model.predict(points), dtype=np.float64)
        best = _TopK(num, exclusive)
        best.offer(points, scores)
        t, cool = self._schedule()
        step = last_change = 0
        can_walk = len(self.space) > 1
        while can_walk and step < self.n_iter and step < last_change + self.early_stop:
            moved = np.array([self.space.random_walk(int(p)) for p in points], dtype=np.int64)
            moved_scores = np.asarray(model.predict(moved), dtype=np.float64)
            accept = np.exp(np.minimum((moved_scores - scores) / (t + 1e-5), 1))
            take = self.rng.random(len(points)) < accept
            points = np.where(take, moved, points)
            scores = np.where(take, moved_scores, scores)
            if best.offer(moved, moved_scores):
                last_change = step
            step += 1
            t -= cool
            if self.log_interval and step % self.log_interval == 0:
                logger.debug("SA iter: %d\tlast_update: %d\ttemp: %.2f", step, last_change, t)
        if self.persistent:
            self.points = points
        return best.indices()

    def _schedule(self) -> tuple[float, float]:
        """The starting temperature and its fall per step."""
        if isinstance(self.temp, tuple | list | np.ndarray):
            return float(self.temp[0]), (self.temp[0] - self.temp[1]) / (self.n_iter + 1)
        return float(self.temp), 0.0


class _TopK:
    """The `num` highest-scored points seen, none of them in `exclusive`."""

    def __init__(self, num: int, exclusive: Any) -> None:
        self.num = num
        self.heap: list[tuple[float, int]] = []  # min-heap of (score, point)
        self.members: set[int] = set()
        self.exclusive = exclusive

    def offer(self, points: np.ndarray, scores: np.ndarray) -> bool:
        """Add the points that beat the current set; True when the set changed."""
        changed = False
        for score, point in zip(scores.tolist(), points.tolist()):
            if point in self.members or point in self.exclusive:
                continue
            if len(self.heap) < self.num:
                heapq.heappush(self.heap, (score, point))
            elif score > self.heap[0][0]:
                _, dropped = heapq.heapreplace(self.heap, (score, point))
                self.members.discard(dropped)
            else:
                continue
            self.members.add(point)
            changed = True
        return changed

    def indices(self) -> list[int]:
        """The points, best first."""
        return [p for _, p in sorted(self.heap, key=lambda item: -item[0])]
