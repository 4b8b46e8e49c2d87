"""The model-based tuner of TVM: boosted trees rank configs, simulated annealing finds the
best-rated ones."""

from __future__ import annotations

from typing import Any

from ...error import TuningError
from .model_based_tuner import ModelBasedTuner, ModelOptimizer
from .sa_model_optimizer import SimulatedAnnealingOptimizer
from .xgboost_cost_model import XGBoostCostModel


class XGBTuner(ModelBasedTuner):
    """Measures random configs for the first `plan_size` trials, then after every
    `plan_size` results refits an XGBoostCostModel (XGBoost, else LightGBM, else numpy trees;
    see its module for the feature types) and measures the configs simulated annealing finds
    it rates best. `optimizer` is "sa" or a ModelOptimizer; `seed` makes the model and the
    annealing's acceptances repeatable."""

    def __init__(
        self,
        task: Any,
        plan_size: int = 64,
        feature_type: str = "itervar",
        loss_type: str = "reg",
        num_threads: int | None = None,
        optimizer: Any = "sa",
        diversity_filter_ratio: float | None = None,
        log_interval: int = 50,
        seed: int | None = None,
    ) -> None:
        cost_model = XGBoostCostModel(
            task, feature_type, loss_type, num_threads, log_interval, seed=seed
        )
        if optimizer == "sa":
            optimizer = SimulatedAnnealingOptimizer(task, log_interval=log_interval, seed=seed)
        elif not isinstance(optimizer, ModelOptimizer):
            raise TuningError(
                f"XGBTuner: optimizer must be 'sa' or an autotvm.tuner ModelOptimizer, got "
                f"{optimizer!r}"
            )
        super().__init__(task, cost_model, optimizer, plan_size, diversity_filter_ratio)
