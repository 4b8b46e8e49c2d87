"""Gradient-boosted trees predicting a config's normalised throughput from its knobs.

The trees are trained with XGBoost when it is installed, else LightGBM, else meta_schedule's
numpy booster. Features come from the config alone (the template is not instantiated):
"knob" is TVM's flattened knob values; "itervar" and "curve" describe the loop nest the
config asks for (log2 of every split loop's extent, permutations, option values), in place
of TVM's features of the lowered program.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from ...error import TuningError
from ..task.space import OtherOptionEntity, ReorderEntity, SplitEntity
from .model_based_tuner import CostModel
from .tuner import measured_flops

logger = logging.getLogger("autotvm")

_FEATURE_TYPES = ("itervar", "knob", "curve")
_LOSS_TYPES = ("reg", "rank", "rank-binary")
_ROUNDS = {"fit": 100, "fit_log": 200}  # boosting rounds per training
_BASE_MODEL_HALF_LIFE = 64  # new samples that halve a base model's weight
_BASE_MODEL_MIN_WEIGHT = 0.05  # below it the base model is dropped


def backend() -> str:
    """The library that trains the trees: "xgboost", "lightgbm" or "numpy"."""
    for lib in ("xgboost", "lightgbm"):
        try:
            __import__(lib)
        except ImportError:
            continue
        return lib
    return "numpy"


class XGBoostCostModel(CostModel):
    """Boosted trees (depth 3, learning rate 0.3) on throughput normalised to the best one
    seen. loss_type "rank"/"rank-binary" trains XGBoost's pairwise ranking objective; the
    LightGBM and numpy fallbacks train regression for every loss type (still a ranking of
    configs by predicted throughput)."""

    def __init__(
        self,
        task: Any,
        feature_type: str,
        loss_type: str = "reg",
        num_threads: int | None = None,
        log_interval: int = 25,
        upper_model: XGBoostCostModel | None = None,
        seed: int | None = None,
    ) -> None:
        if feature_type not in _FEATURE_TYPES or loss_type not in _LOSS_TYPES:
            raise TuningError(
                f"XGBoostCostModel: feature_type must be one of {_FEATURE_TYPES} and loss_type "
                f"one of {_LOSS_TYPES}, got {feature_type!r} and {loss_type!r}"
            )
        self.task = task
        self.target = task.target
        self.space = task.config_space
        self.fea_type = feature_type
        self.loss_type = loss_type
        self.num_threads = num_threads
        self.log_interval = log_interval
        self.upper_model = upper_model
        self.seed = seed
        self.backend = backend()
        self.bst: Any = None
        self.base_model: XGBoostCostModel | None = None
        self._sample_size = 0
        # an upper model and its base model see the same configs: share their features
        self.feature_cache: dict[int, np.ndarray] = (
            upper_model.feature_cache if upper_model is not None else {}
        )

    # ---------------------------------------------------------------- training
    def fit(self, xs: Any, ys: Any, plan_size: int) -> None:
        x = self._features(xs)
        y = _normalised(ys)
        self._sample_size = len(y)
        margin = self._base_margin(xs, training=True)
        self.bst = _train(self, x, y, margin, _ROUNDS["fit"])
        logger.debug(
            "XGB (%s) trained on %d configs, %d failed", self.backend, len(y), int(np.sum(y <= 0))
        )

    def fit_log(self, records: Any, plan_size: int, min_seed_records: int = 500) -> bool:
        """Train on the records of this task's workload whose config is a point of its
        space (others cannot be featurised); False, untrained, when fewer than
        `min_seed_records` are usable."""
        indices, flops = [], []
        for inp, res in records:
            if inp.task.workload != self.task.workload:
                continue
            index = self.space.index_of(inp.config._entity_map)
            if index is not None:
                indices.append(index)
                flops.append(measured_flops(self.task.flop, res))
        if len(indices) < min_seed_records:
            logger.debug("XGB: %d usable records, fewer than %d", len(indices), min_seed_records)
            return False
        self.bst = _train(
            self, self._features(indices), _normalised(flops), None, _ROUNDS["fit_log"]
        )
        return True

    def predict(self, xs: Any, output_margin: bool = False) -> np.ndarray:
        """Predicted normalised throughput (XGBoost ranking: relative scores) of indices."""
        if self.bst is None:
            raise TuningError("XGBoostCostModel.predict: the model is not trained; fit it first")
        margin = self._base_margin(xs, training=False)
        return _PREDICT[self.backend](self.bst, self._features(xs), margin)

    def load_basemodel(self, base_model: XGBoostCostModel) -> None:
        self.base_model = base_model
        base_model.upper_model = self

    def spawn_base_model(self) -> XGBoostCostModel:
        return XGBoostCostModel(
            self.task,
            self.fea_type,
            self.loss_type,
            self.num_threads,
            self.log_interval,
            upper_model=self,
            seed=self.seed,
        )

    def _base_margin(self, xs: Any, training: bool) -> np.ndarray | None:
        """The base model's weighted predictions, the starting point of this model's trees;
        the weight halves every 64 samples this model has trained on."""
        if self.base_model is None:
            return None
        weight = 0.5 ** (self._sample_size / _BASE_MODEL_HALF_LIFE)
        if training and weight < _BASE_MODEL_MIN_WEIGHT:
            self.base_model.upper_model, self.base_model = None, None
            return None
        return weight * self.base_model.predict(xs, output_margin=True)

    # ---------------------------------------------------------------- features
    def _features(self, xs: Any) -> np.ndarray:
        """One row per config index (indices may come as floats)."""
        rows = []
        for x in np.asarray(xs).reshape(-1):
            index = int(x)
            if index not in self.feature_cache:
                self.feature_cache[index] = _FEATURES[self.fea_type](self.space, index)
            rows.append(self.feature_cache[index])
        return np.vstack(rows) if rows else np.zeros((0, 1))


def _normalised(ys: Any) -> np.ndarray:
    y = np.asarray(ys, dtype=np.float64)
    return y / max(float(np.max(y)) if len(y) else 0.0, 1e-8)


def _knob_feature(space: Any, index: int) -> np.ndarray:
    return space.get(index).get_flatten_feature().astype(np.float64)


def _loop_feature(space: Any, index: int) -> np.ndarray:
    """log2 of each split loop's extent (the outer one worked out), each permutation, and
    each option's position and numeric value."""
    out: list[float] = []
    for (_, knob_space), k in zip(space.space_map.items(), space.point2knob(index)):
        entity = knob_space[k]
        if isinstance(entity, SplitEntity):
            inner = int(np.prod([s for s in entity.size if s > 0]))
            sizes = [math.ceil(knob_space.product / inner) if s == -1 else s for s in entity.size]
            out.extend(math.log2(max(s, 1)) for s in sizes)
        elif isinstance(entity, ReorderEntity):
            out.extend(entity.perm)
        elif isinstance(entity, OtherOptionEntity):
            val = entity.val
            out.extend([k, float(val) if isinstance(val, int | float) else 0.0])
    return np.array(out, dtype=np.float64)


_FEATURES = {"knob": _knob_feature, "itervar": _loop_feature, "curve": _loop_feature}


# ---------------------------------------------------------------- backends
def _train(model: XGBoostCostModel, x: np.ndarray, y: np.ndarray, margin: Any, rounds: int):
    order = np.random.default_rng(model.seed).permutation(len(y))
    x, y = x[order], y[order]
    margin = None if margin is None else np.asarray(margin)[order]
    return _TRAIN[model.backend](model, x, y, margin, rounds)


def _train_xgboost(model: XGBoostCostModel, x, y, margin, rounds: int) -> Any:
    import xgboost

    objective = "reg:squarederror" if model.loss_type == "reg" else "rank:pairwise"
    params = {"max_depth": 3, "eta": 0.3, "gamma": 1e-4, "objective": objective, "verbosity": 0}
    params["seed"] = model.seed or 0
    if model.num_threads:
        params["nthread"] = model.num_threads
    dtrain = xgboost.DMatrix(x, y, base_margin=margin)
    return xgboost.train(params, dtrain, num_boost_round=rounds)


def _train_lightgbm(model: XGBoostCostModel, x, y, margin, rounds: int) -> Any:
    import lightgbm

    params = {
        "objective": "regression",
        "max_depth": 3,
        "num_leaves": 8,
        "learning_rate": 0.3,
        "min_data_in_leaf": 1,
        "min_data_in_bin": 1,
        "verbose": -1,
        "seed": model.seed or 0,
        "num_threads": model.num_threads or 1,
    }
    return lightgbm.train(params, lightgbm.Dataset(x, y, init_score=margin), rounds)


def _train_numpy(model: XGBoostCostModel, x, y, margin, rounds: int) -> Any:
    from ...meta_schedule.cost_model import NumpyGBDT

    target = y if margin is None else y - margin  # trees fit what the base model leaves
    return NumpyGBDT(n_trees=rounds, depth=3, learning_rate=0.3).fit(x, target)


def _predict_xgboost(bst: Any, x: np.ndarray, margin: Any) -> np.ndarray:
    import xgboost

    return bst.predict(xgboost.DMatrix(x, base_margin=margin), output_margin=True)


def _plus(margin: Any, pred: Any) -> np.ndarray:
    pred = np.asarray(pred, dtype=np.float64)
    return pred if margin is None else pred + margin


_TRAIN = {"xgboost": _train_xgboost, "lightgbm": _train_lightgbm, "numpy": _train_numpy}
_PREDICT = {
    "xgboost": _predict_xgboost,
    # LightGBM's raw score leaves out the init score it trained from: add the margin back
    "lightgbm": lambda bst, x, margin: _plus(margin, bst.predict(x, raw_score=True)),
    "numpy": lambda bst, x, margin: _plus(margin, bst.predict(x)),
}
