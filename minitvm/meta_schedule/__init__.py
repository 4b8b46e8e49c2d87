"""minitvm.meta_schedule: automatic schedule search (TVM's `tvm.meta_schedule` names).

tune_tir / tune_tasks / relax_integration.tune_relax measure sampled schedules in worker
processes and record them in a database; compile_tir and MetaScheduleApplyDatabase apply
the best. The design space, rules, postprocessors, mutators, features and cost models live
in their own subpackages."""

from . import (
    _space_fallback,
    arg_info,
    builder,
    database,
    runner,
    search_strategy,
    tir_integration,
    tune_context,
    utils,
)
from .arg_info import ArgInfo, TensorInfo
from .builder import Builder, BuilderInput, BuilderResult, LocalBuilder
from .database import Database, JSONDatabase, MemoryDatabase, TuningRecord, Workload
from .runner import EvaluatorConfig, LocalRunner, Runner, RunnerFuture, RunnerInput, RunnerResult
from .search_strategy import EvolutionarySearch, MeasureCandidate, ReplayTrace, SearchStrategy
from .tir_integration import compile_tir, tune_tir
from .tune import tune_tasks
from .tune_context import TuneContext
from .utils import optional_module as _optional

# The design-space half; each may be absent while it is being written.
space_generator = _optional("space_generator") or _space_fallback
schedule_rule = _optional("schedule_rule")
postproc = _optional("postproc")
mutator = _optional("mutator")
feature_extractor = _optional("feature_extractor")
cost_model = _optional("cost_model")

__all__ = [
    "ArgInfo",
    "Builder",
    "BuilderInput",
    "BuilderResult",
    "Database",
    "EvaluatorConfig",
    "EvolutionarySearch",
    "JSONDatabase",
    "LocalBuilder",
    "LocalRunner",
    "MeasureCandidate",
    "MemoryDatabase",
    "ReplayTrace",
    "Runner",
    "RunnerFuture",
    "RunnerInput",
    "RunnerResult",
    "SearchStrategy",
    "TensorInfo",
    "TuneContext",
    "TuningRecord",
    "Workload",
    "arg_info",
    "builder",
    "compile_tir",
    "cost_model",
    "database",
    "feature_extractor",
    "mutator",
    "postproc",
    "runner",
    "schedule_rule",
    "search_strategy",
    "space_generator",
    "tir_integration",
    "tune_context",
    "tune_tasks",
    "tune_tir",
    "utils",
]


def __getattr__(name: str):
    """relax_integration (imports relax) and the Ray parts load on first use."""
    if name in ("relax_integration", "ray"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'minitvm.meta_schedule' has no attribute '{name}'")
