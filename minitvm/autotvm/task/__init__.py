"""Tasks, templates, configuration spaces and dispatch contexts (TVM's `autotvm.task`)."""

from . import dispatcher, space, task
from .dispatcher import (
    ApplyConfig,
    ApplyHistoryBest,
    DispatchContext,
    FallbackContext,
    RecordWarning,
    clear_fallback_cache,
)
from .relay_integration import extract_from_multiple_program, extract_from_program
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity, InstantiationError
from .task import (
    TASK_TABLE,
    Task,
    args_to_workload,
    compute_flop,
    create,
    deserialize_args,
    get_config,
    register_topi_compute,
    register_topi_schedule,
    serialize_args,
    template,
)

__all__ = [
    "TASK_TABLE",
    "ApplyConfig",
    "ApplyHistoryBest",
    "ConfigEntity",
    "ConfigSpace",
    "DispatchContext",
    "FallbackConfigEntity",
    "FallbackContext",
    "InstantiationError",
    "RecordWarning",
    "Task",
    "args_to_workload",
    "clear_fallback_cache",
    "compute_flop",
    "create",
    "deserialize_args",
    "dispatcher",
    "extract_from_multiple_program",
    "extract_from_program",
    "get_config",
    "register_topi_compute",
    "register_topi_schedule",
    "serialize_args",
    "space",
    "task",
    "template",
]
