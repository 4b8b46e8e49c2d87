"""Tuners: random, grid search, genetic, and model-based (TVM's `autotvm.tuner`)."""

from . import callback
from .ga_tuner import GATuner
from .index_based_tuner import GridSearchTuner, IndexBaseTuner, RandomTuner
from .tuner import Tuner
from .xgboost_tuner import XGBTuner

__all__ = [
    "GATuner",
    "GridSearchTuner",
    "IndexBaseTuner",
    "RandomTuner",
    "Tuner",
    "XGBTuner",
    "callback",
]
