"""TVM's xgb_model module: XGBModel, and the pack-sum training data its tests build by hand
(one row per block, a candidate's score is the sum over its blocks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...error import TuningError
from .cost_model import XGBModel


def _xgboost() -> Any:
    try:
        import xgboost
    except ImportError as err:
        raise TuningError(
            "this needs the xgboost package (pip install xgboost); XGBModel itself falls back "
            "to the numpy trees without it"
        ) from err
    return xgboost


class PackSum:
    """Candidates' block features stacked into one matrix; `ids[row]` is the candidate a row
    belongs to. Labels (one per candidate) are repeated per row and also weight the rows."""

    def __init__(self, xs: list[np.ndarray], ys: np.ndarray | None) -> None:
        if not xs:
            raise TuningError("PackSum: no candidates; pass one feature array per candidate")
        repeats = [int(np.shape(x)[0]) for x in xs]
        self.xs = np.concatenate([np.asarray(x) for x in xs], axis=0)
        self.ids = np.repeat(np.arange(len(xs)), repeats)
        self.labels = None if ys is None else np.repeat(np.asarray(ys, dtype=np.float64), repeats)
        self._dmatrix = None

    @property
    def dmatrix(self) -> Any:
        """The rows as an xgboost.DMatrix (labels and weights set when known)."""
        if self._dmatrix is None:
            xgb = _xgboost()
            self._dmatrix = xgb.DMatrix(data=self.xs, label=self.labels)
            if self.labels is not None:
                self._dmatrix.set_weight(self.labels)
        return self._dmatrix

    def _labels(self) -> np.ndarray:
        if self.labels is None:
            raise TuningError("PackSum: built with ys=None, so it has no labels to score against")
        return self.labels

    def predict_with_score(self, pred: np.ndarray) -> np.ndarray:
        """Per-candidate predictions: the sum of its rows' predictions."""
        return np.bincount(self.ids, weights=pred)

    def obj_square_error(self, ys_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and hessian per row of the label-weighted squared error of the sums."""
        ys = self._labels()
        per_row = self.predict_with_score(ys_pred)[self.ids]
        return (per_row - ys) * ys, ys.copy()

    def rmse(self, ys_pred: np.ndarray) -> tuple[str, float]:
        ys = self._labels()
        per_row = self.predict_with_score(ys_pred)[self.ids]
        return "p-rmse", float(np.sqrt(np.mean(np.square(per_row - ys))))

    def average_peak_score(self, ys_pred: np.ndarray, n: int) -> tuple[str, float]:
        """Mean over the first n of the predicted order of (best label so far / best label)."""
        counts = np.bincount(self.ids)
        ys = self.predict_with_score(self._labels()) / counts
        order = np.argsort(self.predict_with_score(ys_pred))[::-1][:n]
        curve = np.maximum.accumulate(ys[order]) / np.max(ys)
        return f"a-peak@{n}", float(np.mean(curve))


def _get_custom_call_back(
    early_stopping_rounds: int,
    verbose_eval: int,
    fevals: list[Callable],
    evals: list[tuple[Any, str]],
    focused_metric: str = "tr-p-rmse",
    cvfolds: Any = None,
) -> Any:
    """An xgboost TrainingCallback that scores `evals` with each `feval(pred, dmatrix) ->
    (name, value)` after every round and stops when `focused_metric` ("<eval>-<name>", lower
    is better unless the name has "peak") has not improved for early_stopping_rounds."""
    if cvfolds is not None:
        raise TuningError("_get_custom_call_back: cross-validation folds are not supported")
    xgb = _xgboost()

    class _EarlyStopOnMetrics(xgb.callback.TrainingCallback):
        def __init__(self) -> None:
            super().__init__()
            self.best: float | None = None
            self.best_round = 0

        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            scores: dict[str, float] = {}
            for dmatrix, eval_name in evals:
                pred = model.predict(dmatrix, output_margin=True)
                for feval in fevals:
                    name, value = feval(pred, dmatrix)
                    scores[f"{eval_name}-{name}"] = float(value)
            if focused_metric not in scores:
                raise TuningError(
                    f"_get_custom_call_back: focused metric {focused_metric!r} is not among "
                    f"the scores {sorted(scores)}"
                )
            value = scores[focused_metric]
            if "peak" in focused_metric:
                value = -value  # higher peak score is better
            if self.best is None or value < self.best:
                self.best, self.best_round = value, epoch
                return False
            return epoch - self.best_round >= early_stopping_rounds

    return _EarlyStopOnMetrics()


__all__ = ["PackSum", "XGBModel"]
