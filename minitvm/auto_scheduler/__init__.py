"""minitvm.auto_scheduler: TVM's auto-scheduler API as a front end onto meta_schedule.

A SearchTask is a TE workload (`@register_workload`) or a model's kernel (`extract_tasks`);
`task.tune` / `TaskScheduler.tune` run meta_schedule's tuner on its PrimFunc; records go to a
meta_schedule JSON database (`RecordToFile(log)`), read back as data by `apply_best` and
`ApplyHistoryBest`. There is no second search: the search policy names pick meta_schedule's."""

from .measure import (
    LocalBuilder,
    LocalRunner,
    RecordToFile,
    TuningOptions,
    load_records,
    save_records,
)
from .relay_integration import ApplyHistoryBest, extract_tasks
from .search_task import (
    ComputeDAG,
    PreloadMeasuredStates,
    RandomModel,
    SearchTask,
    SketchPolicy,
    TunedSchedule,
    XGBModel,
)
from .task_scheduler import TaskScheduler
from .workload_registry import register_workload

__all__ = [
    "ApplyHistoryBest",
    "ComputeDAG",
    "LocalBuilder",
    "LocalRunner",
    "PreloadMeasuredStates",
    "RandomModel",
    "RecordToFile",
    "SearchTask",
    "SketchPolicy",
    "TaskScheduler",
    "TunedSchedule",
    "TuningOptions",
    "XGBModel",
    "extract_tasks",
    "load_records",
    "register_workload",
    "save_records",
]
