"""TaskScheduler: tune a model's tasks together (meta_schedule's task scheduler shares the
trials: batches go to the task that costs the model the most)."""

from __future__ import annotations

from typing import Any

from ..error import TuningError
from .measure import TuningOptions
from .search_task import tune_search_tasks

_STRATEGIES = {"gradient": "gradient", "round-robin": "round-robin"}


class TaskScheduler:
    """`TaskScheduler(tasks, task_weights).tune(tune_option)` (TVM's names)."""

    def __init__(
        self,
        tasks: list,
        task_weights: list | None = None,
        objective_func: Any = None,
        strategy: str = "gradient",
        load_model_file: str | None = None,
        load_log_file: str | None = None,
        alpha: float = 0.2,
        beta: float = 2,
        gamma: float = 0.5,
        backward_window_size: int = 3,
        callbacks: Any = None,
    ) -> None:
        if not tasks:
            raise TuningError("TaskScheduler: no tasks (extract_tasks found no kernel to tune)")
        weights = [1.0] * len(tasks) if task_weights is None else list(task_weights)
        if len(weights) != len(tasks):
            raise TuningError(f"TaskScheduler: {len(weights)} task_weights for {len(tasks)} tasks")
        if strategy not in _STRATEGIES:
            raise TuningError(
                f"TaskScheduler(strategy={strategy!r}): use one of {sorted(_STRATEGIES)}"
            )
        self.tasks = list(tasks)
        self.task_weights = weights
        self.strategy = strategy
        self.load_log_file = load_log_file

    def tune(
        self,
        tune_option: TuningOptions,
        search_policy: Any = "default",
        search_policy_params: Any = None,
        adaptive_training: bool = False,
        per_task_early_stopping: Any = None,
    ) -> None:
        """Spend `tune_option.num_measure_trials` measurements over the tasks."""
        policies = None if isinstance(search_policy, str) else search_policy
        if isinstance(search_policy, str) and search_policy not in ("default", "sketch.xgb"):
            raise TuningError(
                f"TaskScheduler.tune(search_policy={search_policy!r}): use 'default' or a list "
                "of auto_scheduler.SketchPolicy"
            )
        tune_search_tasks(self.tasks, self.task_weights, tune_option, policies)
