"""Model-based tuning: a cost model predicts the throughput of configs (by index), an optimizer
finds the configs the model rates best, and the tuner measures those (TVM's names)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import TuningError
from ..env import GLOBAL_SCOPE
from .tuner import Tuner, measured_flops


class CostModel:
    """Predicts the throughput of configs given by their indices in the task's space."""

    def fit(self, xs: Any, ys: Any, plan_size: int) -> None:
        """Train on config indices `xs` and their measured throughput `ys` (FLOPS)."""
        raise NotImplementedError(f"{type(self).__name__}.fit")

    def fit_log(self, records: Any, plan_size: int, min_seed_records: int = 500) -> bool:
        """Train on (MeasureInput, MeasureResult) records; False when too few are usable."""
        raise NotImplementedError(f"{type(self).__name__}.fit_log")

    def predict(self, xs: Any, output_margin: bool = False) -> np.ndarray:
        """Scores of config indices `xs` (higher is faster)."""
        raise NotImplementedError(f"{type(self).__name__}.predict")

    def load_basemodel(self, base_model: CostModel) -> None:
        """Start from `base_model`'s predictions (transfer learning from history)."""
        raise NotImplementedError(f"{type(self).__name__}.load_basemodel")

    def spawn_base_model(self) -> CostModel:
        """A fresh model with the same settings, to learn from history records."""
        raise NotImplementedError(f"{type(self).__name__}.spawn_base_model")


class ModelOptimizer:
    """Finds the configs a cost model scores highest."""

    def find_maximums(self, model: CostModel, num: int, exclusive: Any) -> list[int]:
        """Up to `num` config indices, best first, none of them in `exclusive`."""
        raise NotImplementedError(f"{type(self).__name__}.find_maximums")


class ModelBasedTuner(Tuner):
    """Measures random configs until `plan_size` results are in, then refits the model after
    every `plan_size` results and measures the optimizer's best configs (the last 5% of each
    plan are random). `xs` holds the measured indices, `ys` their throughput (0 for failures).

    With `diversity_filter_ratio` r, the optimizer proposes r * plan_size configs and a greedy
    pick keeps the plan_size of them that cover the most distinct knob values."""

    def __init__(
        self,
        task: Any,
        cost_model: CostModel,
        model_optimizer: ModelOptimizer,
        plan_size: int,
        diversity_filter_ratio: float | None = None,
    ) -> None:
        super().__init__(task)
        if diversity_filter_ratio is not None and diversity_filter_ratio < 1:
            raise TuningError(
                f"diversity_filter_ratio must be at least 1 (it multiplies plan_size), got "
                f"{diversity_filter_ratio}"
            )
        if plan_size < 1:
            raise TuningError(f"plan_size must be at least 1, got {plan_size}")
        self.target = task.target
        self.plan_size = int(plan_size)
        self.cost_model = cost_model
        self.model_optimizer = model_optimizer
        self.diversity_filter_ratio = diversity_filter_ratio
        self.trials: list[int] = []
        self.trial_pt = 0
        self.xs: list[int] = []
        self.ys: list[float] = []
        self.flops_max = 0.0
        self.train_ct = 0

    def next_batch(self, batch_size: int) -> list:
        batch = []
        greedy_end = len(self.trials) - int(0.05 * self.plan_size)
        while len(batch) < batch_size and self.has_next():
            while self.trial_pt < len(self.trials) and not self._fresh(self.trials[self.trial_pt]):
                self.trial_pt += 1
            if self.trial_pt < greedy_end:
                index = int(self.trials[self.trial_pt])
            else:  # no plan yet, or its last 5%: explore at random
                index = self.space.get_rand_index(to_exclude=self.visited)
            batch.append(self.space.get(index))
            self.visited.add(index)
        return batch

    def _fresh(self, index: int) -> bool:
        return index not in self.visited and self.space.is_index_valid(index)

    def update(self, inputs: list, results: list) -> None:
        """Record results (also resumes a tuning from earlier records); refit and replan once
        `plan_size` more results are in."""
        for inp, res in zip(inputs, results):
            index = inp.config.index
            if not self.space.is_index_valid(index):
                raise TuningError(
                    f"{type(self).__name__}.update: config index {index} is not a valid point of "
                    "this task's space (a record of another task?)"
                )
            flops = measured_flops(inp.task.flop or self.task.flop, res)
            self.xs.append(index)
            self.ys.append(flops)
            self.flops_max = max(self.flops_max, flops)
            self.visited.add(index)
        if len(self.xs) >= self.plan_size * (self.train_ct + 1) and self.flops_max > 1e-6:
            self.cost_model.fit(self.xs, self.ys, self.plan_size)
            self.trials = self._plan(self.cost_model)
            self.trial_pt = 0
            self.train_ct += 1

    def _plan(self, model: CostModel) -> list[int]:
        """The next configs to measure: the model's best, filtered for diversity if asked."""
        if not self.diversity_filter_ratio:
            return self.model_optimizer.find_maximums(model, self.plan_size, self.visited)
        wanted = int(self.plan_size * self.diversity_filter_ratio)
        candidates = self.model_optimizer.find_maximums(model, wanted, self.visited)
        knobs = [self.space.point2knob(x) for x in candidates]
        picked = submodular_pick(np.zeros(len(candidates)), knobs, self.plan_size)
        return [candidates[i] for i in picked]

    def load_history(self, data_set: Any, min_seed_records: int = 500) -> None:
        """Learn from earlier records of this workload: when at least `min_seed_records`
        are usable, a base model trained on them plans the first trials and seeds the
        cost model (its weight halves every 64 new measurements)."""
        GLOBAL_SCOPE.in_tuning = True
        try:
            base_model = self.cost_model.spawn_base_model()
            if not base_model.fit_log(data_set, self.plan_size, min_seed_records):
                return
            if not self.trials:
                self.trials = self.model_optimizer.find_maximums(
                    base_model, self.plan_size, self.visited
                )
                self.trial_pt = 0
            self.cost_model.load_basemodel(base_model)
        finally:
            GLOBAL_SCOPE.in_tuning = False

    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)


def submodular_pick(scores: Any, knobs: list, n_pick: int, knob_weight: float = 1.0) -> list:
    """Greedily pick `n_pick` positions maximising score plus `knob_weight` per knob value not
    yet covered by the picked set (a monotone submodular objective)."""
    covered: list[set] = [set() for _ in range(len(knobs[0]))] if knobs else []
    remain = list(range(len(scores)))
    picked: list[int] = []
    for _ in range(min(n_pick, len(remain))):

        def gain(x: int) -> float:
            new = sum(k not in seen for k, seen in zip(knobs[x], covered))
            return float(scores[x]) + knob_weight * new

        best = max(remain, key=gain)  # the first of equal gains, as a stable greedy pick
        picked.append(best)
        remain.remove(best)
        for k, seen in zip(knobs[best], covered):
            seen.add(k)
    return picked
