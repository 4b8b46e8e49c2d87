"""A model-based tuner: meta_schedule's gradient-boosted cost model (XGBoost or LightGBM when
installed, numpy otherwise) ranks untried configs by their knob values."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...error import TuningError
from ..task.space import OtherOptionEntity, ReorderEntity, SplitEntity
from .tuner import Tuner

_POOL = 4096  # configs scored per batch when the space is larger than this
_LOSSES = ("reg", "rank", "rank-binary")
_FEATURES = ("knob", "itervar", "curve")


class XGBTuner(Tuner):
    """Measures random configs until `min_seed` have run, then the untried configs the model
    predicts fastest (a fraction `eps_greedy` of each batch stays random).

    Features are the configs' knob values (TVM's feature_type="knob"); "itervar" and "curve"
    are accepted and use the same features. The model is meta_schedule's XGBModel."""

    def __init__(
        self,
        task: Any,
        plan_size: int = 64,
        feature_type: str = "itervar",
        loss_type: str = "reg",
        num_threads: int | None = None,
        optimizer: str = "sa",
        diversity_filter_ratio: float | None = None,
        log_interval: int = 50,
        seed: int | None = None,
        eps_greedy: float = 0.05,
        min_seed: int = 8,
    ) -> None:
        super().__init__(task)
        if loss_type not in _LOSSES or feature_type not in _FEATURES:
            raise TuningError(
                f"XGBTuner: loss_type must be one of {_LOSSES} and feature_type one of "
                f"{_FEATURES}, got {loss_type!r} and {feature_type!r}"
            )
        from ...meta_schedule.cost_model import XGBModel

        self.plan_size = plan_size
        self.model = XGBModel()
        self.rng = np.random.default_rng(seed)
        self.eps_greedy = eps_greedy
        self.min_seed = min_seed
        self.xs: list[np.ndarray] = []
        self.costs: list[float] = []
        self.trained = False

    # ---------------------------------------------------------------- proposing
    def next_batch(self, batch_size: int) -> list:
        pool = self._untried_pool()
        if not pool:
            return []
        if self.trained:
            scores = self.model.predict_vectors(np.vstack([self.feature(i) for i in pool]))
            order = [pool[i] for i in np.argsort(-scores, kind="stable")]
        else:
            order = [pool[i] for i in self.rng.permutation(len(pool))]
        batch: list[int] = []
        for index in order:
            if len(batch) >= batch_size:
                break
            if self.trained and self.rng.random() < self.eps_greedy:
                index = pool[int(self.rng.integers(len(pool)))]
            if index not in batch:
                batch.append(index)
        self.visited.update(batch)
        return [self.space.get(i) for i in batch]

    def _untried_pool(self) -> list[int]:
        n = self.space.range_length
        valid = self.space.is_index_valid
        if n <= _POOL:
            return [i for i in range(n) if i not in self.visited and valid(i)]
        pool = {int(i) for i in self.rng.integers(n, size=_POOL)}
        return sorted(i for i in pool - self.visited if valid(i))

    def feature(self, index: int) -> np.ndarray:
        """A config's knob values: log2 of every split size (the outer one worked out),
        permutations, and each knob's candidate position (and value when numeric)."""
        out: list[float] = []
        for (name, space), k in zip(self.space.space_map.items(), self.space.point2knob(index)):
            entity = space[k]
            if isinstance(entity, SplitEntity):
                inner = int(np.prod([s for s in entity.size if s > 0]))
                sizes = [math.ceil(space.product / inner) if s == -1 else s for s in entity.size]
                out.extend(math.log2(max(s, 1)) for s in sizes)
            elif isinstance(entity, ReorderEntity):
                out.extend(entity.perm)
            elif isinstance(entity, OtherOptionEntity):
                val = entity.val
                out.extend([k, float(val) if isinstance(val, int | float) else 0.0])
        return np.array(out, dtype=np.float64)

    # ---------------------------------------------------------------- learning
    def update(self, inputs: list, results: list) -> None:
        for inp, res in zip(inputs, results):
            self.xs.append(self.feature(inp.config.index))
            self.costs.append(res.mean_cost)
        if sum(math.isfinite(c) for c in self.costs) >= self.min_seed:
            self.model.fit(np.vstack(self.xs), self.costs)
            self.trained = self.model.booster is not None

    def load_history(self, data_set: Any, min_seed_records: int = 500) -> None:
        """Learn from earlier records of this task's workload (others are ignored)."""
        for inp, res in data_set:
            if inp.task.workload != self.task.workload:
                continue
            index = self.space.index_of(inp.config._entity_map)
            if index is not None:
                self.xs.append(self.feature(index))
                self.costs.append(res.mean_cost)
        if len(self.costs) >= min(min_seed_records, self.min_seed):
            self.model.fit(np.vstack(self.xs), self.costs)
            self.trained = self.model.booster is not None
