"""minitvm.meta_schedule: automatic schedule search (TVM's `tvm.meta_schedule` names).

tune_tir / tune_tasks / relax_integration.tune_relax measure sampled schedules in worker
processes and record them in a database; compile_tir and MetaScheduleApplyDatabase apply
the best. The design space, rules, postprocessors, mutators, features and cost models live
in their own subpackages."""

# the design space: generators, rules, postprocessors, mutators, features, cost models
from . import (
    arg_info,
    builder,
    cost_model,
    database,
    feature_extractor,
    measure_callback,
    mutator,
    postproc,
    runner,
    schedule_rule,
    search_strategy,
    space_generator,
    task_scheduler,
    tir_integration,
    tune_context,
    utils,
)
from .arg_info import ArgInfo, TensorInfo
from .builder import Builder, BuilderInput, BuilderResult, LocalBuilder
from .cost_model import CostModel
from .database import Database, JSONDatabase, MemoryDatabase, TuningRecord, Workload
from .feature_extractor import FeatureExtractor
from .measure_callback import MeasureCallback
from .mutator import Mutator
from .postproc import Postproc
from .profiler import Profiler
from .runner import EvaluatorConfig, LocalRunner, Runner, RunnerFuture, RunnerInput, RunnerResult
from .schedule_rule import ScheduleRule
from .search_strategy import EvolutionarySearch, MeasureCandidate, ReplayTrace, SearchStrategy
from .space_generator import SpaceGenerator
from .task_scheduler import TaskScheduler
from .tir_integration import compile_tir, tune_tir
from .tune import tune_tasks
from .tune_context import TuneContext
from .utils import derived_object

__all__ = [
    "ArgInfo",
    "Builder",
    "BuilderInput",
    "BuilderResult",
    "CostModel",
    "Database",
    "EvaluatorConfig",
    "EvolutionarySearch",
    "FeatureExtractor",
    "JSONDatabase",
    "LocalBuilder",
    "LocalRunner",
    "MeasureCallback",
    "MeasureCandidate",
    "MemoryDatabase",
    "Mutator",
    "Postproc",
    "Profiler",
    "ReplayTrace",
    "Runner",
    "RunnerFuture",
    "RunnerInput",
    "RunnerResult",
    "ScheduleRule",
    "SearchStrategy",
    "SpaceGenerator",
    "TaskScheduler",
    "TensorInfo",
    "TuneContext",
    "TuningRecord",
    "Workload",
    "arg_info",
    "builder",
    "compile_tir",
    "cost_model",
    "database",
    "derived_object",
    "feature_extractor",
    "measure_callback",
    "mutator",
    "postproc",
    "runner",
    "schedule_rule",
    "search_strategy",
    "space_generator",
    "task_scheduler",
    "tir_integration",
    "tune_context",
    "tune_tasks",
    "tune_tir",
    "utils",
]


def __getattr__(name: str):
    """relax_integration (imports relax) and the Ray parts load on first use."""
    if name in ("relax_integration", "ray", "testing"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'minitvm.meta_schedule' has no attribute '{name}'")
