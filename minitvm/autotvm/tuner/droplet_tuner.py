"""Droplet search (TVM's DropletTuner): walk from the best config to better neighbours."""

from __future__ import annotations

import itertools
import math
import os
from typing import Any

import numpy as np

from ...error import TuningError
from .tuner import Tuner


class DropletTuner(Tuner):
    """Measures the neighbours of the best config so far: every move of `execution` steps
    along a non-empty set of knobs, all up or all down (clamped to the knob's range). A
    faster neighbour whose repeat costs differ significantly (Student's t-test, p <=
    `pvalue`) becomes the best and the search restarts at distance 1 around it; otherwise
    the distance grows by `step` up to the largest knob's size, then the search ends.

    `best_choice` is (index, knob positions, costs); `next` the (index, knob positions)
    still to measure, in order."""

    def __init__(self, task: Any, start_position: list | None = None, pvalue: float = 0.05):
        super().__init__(task)
        self.dims = [len(s) for s in self.space.space_map.values()] or [1]
        start = self._start(start_position)
        index = self.space.knob2point(start)
        self.best_choice: tuple = (index, start, [math.inf])
        self.visited = {index}
        self.execution, self.total_execution, self.step = 1, max(self.dims), 1
        self.pvalue = pvalue
        self.batch = max(16, os.cpu_count() or 1)
        self.next: list[tuple[int, list[int]]] = [(index, start)]

    def _start(self, position: list | None) -> list[int]:
        if position is None:  # the first valid point (the origin unless filtered out)
            first = 0 if self.space.is_index_valid(0) else self.space.get_next_index(0)
            return self.space.point2knob(first)
        knob = [int(k) for k in position]
        in_range = len(knob) == len(self.dims) and all(0 <= k < d for k, d in zip(knob, self.dims))
        if not in_range or not self.space.is_index_valid(self.space.knob2point(knob)):
            raise TuningError(
                f"DropletTuner: start_position {position} is not a valid point of the space "
                f"(one position per knob, within the knob sizes {self.dims})"
            )
        return knob

    def has_next(self) -> bool:
        return bool(self.next)

    def next_batch(self, batch_size: int) -> list:
        self.batch = batch_size
        return [self.space.get(index) for index, _ in self.next[:batch_size]]

    def update(self, inputs: list, results: list) -> None:
        measured = {inp.config.index for inp in inputs}
        self.next = [item for item in self.next if item[0] not in measured]
        moved = False
        for inp, res in zip(inputs, results):
            if res.error_no != 0:
                continue
            best_costs = self.best_choice[2]
            if np.mean(res.costs) < np.mean(best_costs) and self._significant(
                best_costs, res.costs
            ):
                index = inp.config.index
                self.best_choice = (index, self.space.point2knob(index), list(res.costs))
                moved = True
        if moved:  # restart around the new best; the old frontier was never measured
            self.visited.difference_update(index for index, _ in self.next)
            self.execution = 1
            self.next = self._neighbours(self.execution)
        while len(self.next) < self.batch and self.execution < self.total_execution:
            self.execution += self.step
            self.next += self._neighbours(self.execution)

    def _significant(self, a: Any, b: Any) -> bool:
        """Whether two samples of costs differ at level `pvalue` (one sample: assumed)."""
        if len(a) <= 1 or len(b) <= 1:
            return True
        return student_t_pvalue(a, b) <= self.pvalue

    def _neighbours(self, distance: int) -> list[tuple[int, list[int]]]:
        """Untried valid points `distance` steps from the best along knob sets (marked
        visited; at most one batch more than `self.batch`)."""
        center = self.best_choice[1]
        found: list[tuple[int, list[int]]] = []
        n = len(self.dims)
        for mask in range(2**n - 1, 0, -1):
            for sign in (distance, -distance):
                if len(found) > self.batch:
                    return found
                knob = [
                    min(max(c + sign * ((mask >> (n - 1 - i)) & 1), 0), d - 1)
                    for i, (c, d) in enumerate(zip(center, self.dims))
                ]
                index = self.space.knob2point(knob)
                if index not in self.visited and self.space.is_index_valid(index):
                    self.visited.add(index)
                    found.append((index, knob))
        return found

    def load_history(self, data_set: Any, min_seed_records: int = 500) -> None:
        """History does not steer a droplet search (it starts from `start_position`)."""


def student_t_pvalue(a: Any, b: Any) -> float:
    """Two-sided p-value of Student's t-test (equal variances) that two samples share a mean."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    na, nb = len(a), len(b)
    df = na + nb - 2
    pooled = ((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / df
    diff = a.mean() - b.mean()
    if pooled == 0:
        return 1.0 if diff == 0 else 0.0
    t = diff / math.sqrt(pooled * (1 / na + 1 / nb))
    return _incomplete_beta(df / 2, 0.5, df / (df + t * t))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (a continued fraction, evaluated
    by the modified Lentz method on whichever side converges fast)."""
    if x <= 0 or x >= 1:
        return float(x >= 1)
    log_front = a * math.log(x) + b * math.log1p(-x) - _log_beta(a, b)
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    tiny = 1e-300
    f, c, d = 1.0, 1.0, 0.0
    for i in itertools.count():
        if i > 500:
            break
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / c
        c = c if abs(c) > tiny else tiny
        f *= c * d
        if abs(1.0 - c * d) < 1e-12:
            break
    return math.exp(log_front) * (f - 1.0) / a


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
