"""Cost models: predict how fast candidates run (higher = faster) from their features, and
learn from measured ones. Saved as JSON (never pickle)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ...error import TuningError
from ..feature_extractor import PROGRAM_FEATURES, PerStoreFeature
from ..utils import default_str
from .gbdt import NumpyGBDT


class CostModel:
    """Base class: update(context, candidates, results), predict(context, candidates)."""

    def update(self, context: Any, candidates: list, results: list) -> None:
        raise NotImplementedError(f"{type(self).__name__}.update")

    def predict(self, context: Any, candidates: list) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}.predict")

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f)

    def load(self, path: str) -> None:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as err:
            raise TuningError(f"cost model: cannot read '{path}': {err}") from err
        self.from_json(data)

    def to_json(self) -> dict:
        return {"kind": type(self).__name__}

    def __str__(self) -> str:
        return default_str(self)

    def from_json(self, data: dict) -> None:
        if not isinstance(data, dict) or data.get("kind") != type(self).__name__:
            got = data.get("kind") if isinstance(data, dict) else type(data).__name__
            raise TuningError(
                f"cost model JSON holds a {got!r} model, not a {type(self).__name__}; load it "
                "into the model kind that saved it"
            )


PyCostModel = CostModel


class RandomModel(CostModel):
    """Random scores in [0, max_range) from a seeded generator (the search's control)."""

    def __init__(self, seed: int | None = None, path: str | None = None, max_range: int = 100):
        self.seed = seed
        self.max_range = max_range
        self.rng = np.random.default_rng(seed)
        if path is not None:
            self.load(path)

    def update(self, context: Any, candidates: list, results: list) -> None:
        pass

    def predict(self, context: Any, candidates: list) -> np.ndarray:
        return self.rng.uniform(0, self.max_range, len(candidates))

    def to_json(self) -> dict:
        return {
            "kind": "RandomModel",
            "seed": self.seed,
            "max_range": self.max_range,
            "state": _pcg64_state_to_json(self.rng),
        }

    def from_json(self, data: dict) -> None:
        """The saved seed, range and generator state (so predictions go on where they were)."""
        super().from_json(data)
        self.seed = data.get("seed")
        self.max_range = data.get("max_range", 100)
        if not isinstance(self.seed, int | None) or not isinstance(self.max_range, int | float):
            raise TuningError(
                f"RandomModel JSON: seed must be an int or null and max_range a number, got "
                f"{self.seed!r} and {self.max_range!r}"
            )
        self.rng = np.random.default_rng(self.seed)
        if data.get("state") is not None:
            self.rng.bit_generator.state = _pcg64_state_from_json(data["state"])


def _pcg64_state_to_json(rng: np.random.Generator) -> dict:
    state = rng.bit_generator.state
    inner = state["state"]
    return {
        "bit_generator": state["bit_generator"],
        "state": str(inner["state"]),  # 128-bit integers, kept exact as decimal text
        "inc": str(inner["inc"]),
        "has_uint32": int(state["has_uint32"]),
        "uinteger": int(state["uinteger"]),
    }


def _pcg64_state_from_json(data: Any) -> dict:
    """The PCG64 state a RandomModel saved, checked field by field (the file is data)."""
    try:
        if data["bit_generator"] != "PCG64":
            raise ValueError(f"bit_generator {data['bit_generator']!r} is not 'PCG64'")
        ints = [int(str(data[k]), 10) for k in ("state", "inc", "has_uint32", "uinteger")]
    except (KeyError, TypeError, ValueError) as err:
        raise TuningError(f"RandomModel JSON: malformed generator state: {err}") from err
    if not (0 <= ints[0] < 2**128 and 0 <= ints[1] < 2**128 and ints[2] in (0, 1)):
        raise TuningError("RandomModel JSON: generator state out of range")
    if not 0 <= ints[3] < 2**32:
        raise TuningError("RandomModel JSON: generator state out of range")
    return {
        "bit_generator": "PCG64",
        "state": {"state": ints[0], "inc": ints[1]},
        "has_uint32": ints[2],
        "uinteger": ints[3],
    }


def candidate_vector(feats: np.ndarray) -> np.ndarray:
    """One fixed-length row per candidate: program row, sum and max of its store rows."""
    stores, program = feats[:-1], feats[-1]
    if len(stores) == 0:
        stores = np.zeros((1, feats.shape[1]))
    return np.concatenate([program[: len(PROGRAM_FEATURES)], stores.sum(0), stores.max(0)])


def _workload_key(context: Any) -> str:
    mod = getattr(context, "mod", None)
    if mod is None:
        return str(getattr(context, "task_name", ""))
    from ...ir import structural_hash

    return str(structural_hash(mod))


def _backend(name: str) -> str:
    """ "xgboost", "lightgbm" or "numpy": the first installed of those asked for."""
    order = {"auto": ("xgboost", "lightgbm", "numpy")}.get(name, (name,))
    for lib in order:
        if lib == "numpy":
            return lib
        try:
            __import__(lib)
        except ImportError:
            continue
        return lib
    raise TuningError(
        f"cost model backend {name!r} is not installed; pip install {name}, or use "
        "backend='auto' (falls back to the numpy model)"
    )


class XGBModel(CostModel):
    """Gradient-boosted trees on the candidates' features, trained on normalised throughput
    (the best time of the workload / the candidate's time; failures score 0). XGBoost or
    LightGBM when installed (backend="auto"), else the numpy model."""

    def __init__(
        self,
        extractor: Any = None,
        backend: str = "auto",
        num_warmup_samples: int = 16,
        num_trees: int = 80,
        max_depth: int = 4,
        learning_rate: float = 0.15,
        seed: int = 0,
        path: str | None = None,
        **_: Any,
    ) -> None:
        self.extractor = extractor or PerStoreFeature()
        self.backend = _backend(backend)
        self.num_warmup_samples = num_warmup_samples
        self.num_trees = num_trees
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.xs: list[list[float]] = []
        self.costs: list[float] = []  # seconds; inf for a failed run
        self.groups: list[str] = []
        self.booster: Any = None
        if path is not None:
            self.load(path)

    # ---------------------------------------------------------------- learning
    def _vectors(self, context: Any, candidates: list) -> np.ndarray:
        feats = self.extractor.extract_from(context, candidates)
        return np.vstack([candidate_vector(f) for f in feats]) if feats else np.zeros((0, 1))

    def update(self, context: Any, candidates: list, results: list) -> None:
        if not candidates:
            return
        xs = self._vectors(context, candidates)
        key = _workload_key(context)
        for x, res in zip(xs, results):
            secs = getattr(res, "run_secs", None)
            cost = float(np.mean([float(s) for s in secs])) if secs else math.inf
            self.xs.append([float(v) for v in x])
            self.costs.append(cost)
            self.groups.append(key)
        self._train()

    def fit(self, xs: np.ndarray, costs: list, groups: list | None = None) -> None:
        """Train on feature vectors and measured seconds directly (no context)."""
        self.xs = [[float(v) for v in x] for x in xs]
        self.costs = [float(c) for c in costs]
        self.groups = list(groups or [""] * len(self.costs))
        self._train()

    def _targets(self) -> np.ndarray:
        """Each candidate's speed relative to its workload's fastest (1 = the fastest); a
        failed run, and a time of zero (a timer that measured nothing), teach 0."""
        usable = [math.isfinite(c) and c > 0 for c in self.costs]
        best: dict[str, float] = {}
        for g, c, ok in zip(self.groups, self.costs, usable):
            if ok:
                best[g] = min(best.get(g, math.inf), c)
        return np.array(
            [best[g] / c if ok else 0.0 for g, c, ok in zip(self.groups, self.costs, usable)]
        )

    def _train(self) -> None:
        if len(self.costs) < 2:
            return
        x, y = np.asarray(self.xs), self._targets()
        self.booster = _TRAIN[self.backend](self, x, y)

    def predict(self, context: Any, candidates: list) -> np.ndarray:
        if not candidates:
            return np.zeros(0)
        if self.booster is None or len(self.costs) < self.num_warmup_samples:
            return self.rng.uniform(0, 1, len(candidates))
        return self.predict_vectors(self._vectors(context, candidates))

    def predict_vectors(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(_PREDICT[self.backend](self.booster, np.asarray(x)), dtype=np.float64)

    # ---------------------------------------------------------------- JSON
    def to_json(self) -> dict:
        return {
            "kind": "XGBModel",
            "backend": self.backend,
            "params": {
                "num_warmup_samples": self.num_warmup_samples,
                "num_trees": self.num_trees,
                "max_depth": self.max_depth,
                "learning_rate": self.learning_rate,
                "seed": self.seed,
            },
            "data": {
                "x": self.xs,
                "cost": [c if math.isfinite(c) else None for c in self.costs],
                "group": self.groups,
            },
            "model": None if self.booster is None else _DUMP[self.backend](self.booster),
        }

    def from_json(self, data: dict) -> None:
        super().from_json(data)
        try:
            params, d = data["params"], data["data"]
            self.backend = _backend(str(data["backend"]))
            self.num_warmup_samples = int(params["num_warmup_samples"])
            self.num_trees = int(params["num_trees"])
            self.max_depth = int(params["max_depth"])
            self.learning_rate = float(params["learning_rate"])
            self.seed = int(params["seed"])
            self.xs = [[float(v) for v in x] for x in d["x"]]
            self.costs = [math.inf if c is None else float(c) for c in d["cost"]]
            self.groups = [str(g) for g in d["group"]]
            model = data["model"]
            self.booster = None if model is None else _LOAD[self.backend](model)
        except (KeyError, TypeError, ValueError) as err:
            raise TuningError(f"cost model JSON is malformed: {err}") from err


def _train_numpy(m: XGBModel, x: np.ndarray, y: np.ndarray) -> Any:
    return NumpyGBDT(m.num_trees, m.max_depth, m.learning_rate).fit(x, y)


def _train_lightgbm(m: XGBModel, x: np.ndarray, y: np.ndarray) -> Any:
    import lightgbm

    params = {
        "objective": "regression",
        "num_leaves": 2**m.max_depth,
        "max_depth": m.max_depth,
        "learning_rate": m.learning_rate,
        "min_data_in_leaf": max(1, len(y) // 50),
        "min_data_in_bin": 1,
        "verbose": -1,
        "seed": m.seed,
        "num_threads": 1,
    }
    return lightgbm.train(params, lightgbm.Dataset(x, y), num_boost_round=m.num_trees)


def _train_xgboost(m: XGBModel, x: np.ndarray, y: np.ndarray) -> Any:
    import xgboost

    params = {
        "max_depth": m.max_depth,
        "eta": m.learning_rate,
        "seed": m.seed,
        "nthread": 1,
        "verbosity": 0,
    }
    return xgboost.train(params, xgboost.DMatrix(x, y), num_boost_round=m.num_trees)


def _xgb_predict(booster: Any, x: np.ndarray) -> np.ndarray:
    import xgboost

    return booster.predict(xgboost.DMatrix(x))


def _xgb_load(text: str) -> Any:
    import xgboost

    booster = xgboost.Booster()
    booster.load_model(bytearray(text.encode()))
    return booster


def _lgb_load(text: str) -> Any:
    import lightgbm

    return lightgbm.Booster(model_str=text)


_TRAIN = {"numpy": _train_numpy, "lightgbm": _train_lightgbm, "xgboost": _train_xgboost}
_PREDICT = {
    "numpy": lambda b, x: b.predict(x),
    "lightgbm": lambda b, x: b.predict(x),
    "xgboost": _xgb_predict,
}
_DUMP = {
    "numpy": lambda b: b.to_json(),
    "lightgbm": lambda b: b.model_to_string(),
    "xgboost": lambda b: bytes(b.save_raw("json")).decode(),
}
_LOAD = {"numpy": NumpyGBDT.from_json, "lightgbm": _lgb_load, "xgboost": _xgb_load}
