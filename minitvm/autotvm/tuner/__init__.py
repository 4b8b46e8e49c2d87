"""Tuners: random, grid search, genetic, droplet and model-based (TVM's `autotvm.tuner`)."""

from . import callback
from .droplet_tuner import DropletTuner
from .ga_tuner import GATuner
from .index_based_tuner import GridSearchTuner, IndexBaseTuner, RandomTuner
from .model_based_tuner import CostModel, ModelBasedTuner, ModelOptimizer, submodular_pick
from .sa_model_optimizer import SimulatedAnnealingOptimizer
from .tuner import Tuner
from .xgboost_cost_model import XGBoostCostModel
from .xgboost_tuner import XGBTuner

__all__ = [
    "CostModel",
    "DropletTuner",
    "GATuner",
    "GridSearchTuner",
    "IndexBaseTuner",
    "ModelBasedTuner",
    "ModelOptimizer",
    "RandomTuner",
    "SimulatedAnnealingOptimizer",
    "Tuner",
    "XGBTuner",
    "XGBoostCostModel",
    "callback",
    "submodular_pick",
]
