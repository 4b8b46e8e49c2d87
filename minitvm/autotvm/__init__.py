"""minitvm.autotvm: template-based tuning with TVM's `tvm.autotvm` names.

A template (`@autotvm.template`) defines knobs with `autotvm.get_config()`; a tuner measures
points of the space through meta_schedule's builder and runner worker processes, checking
each candidate's outputs; `apply_history_best(log)` gives the template its best config.
"""

from . import database, env, measure, record, task, tuner
from .env import GLOBAL_SCOPE
from .measure import (
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    RPCRunner,
    measure_option,
)
from .record import load_from_file
from .task import (
    ApplyConfig,
    ApplyHistoryBest,
    ConfigEntity,
    ConfigSpace,
    DispatchContext,
    FallbackContext,
    create,
    get_config,
    register_topi_compute,
    register_topi_schedule,
    template,
)
from .task import ApplyHistoryBest as apply_history_best
from .tuner import callback

__all__ = [
    "GLOBAL_SCOPE",
    "ApplyConfig",
    "ApplyHistoryBest",
    "ConfigEntity",
    "ConfigSpace",
    "DispatchContext",
    "FallbackContext",
    "LocalBuilder",
    "LocalRunner",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureResult",
    "RPCRunner",
    "apply_history_best",
    "callback",
    "create",
    "database",
    "env",
    "get_config",
    "load_from_file",
    "measure",
    "measure_option",
    "record",
    "register_topi_compute",
    "register_topi_schedule",
    "task",
    "template",
    "tuner",
]
