"""Measuring configurations: records, the builder/runner interface and the local pair."""

from . import executor, measure, measure_methods
from .measure import (
    Builder,
    BuildResult,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    Runner,
    create_measure_batch,
    measure_option,
)
from .measure_methods import LocalBuilder, LocalRunner, RPCRunner

__all__ = [
    "BuildResult",
    "Builder",
    "LocalBuilder",
    "LocalRunner",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureResult",
    "RPCRunner",
    "Runner",
    "create_measure_batch",
    "executor",
    "measure",
    "measure_methods",
    "measure_option",
]
