"""Task schedulers (TVM's `ms.task_scheduler`): which task measures the next batch.

"gradient" (`GradientBased`) gives it to the task with the most time left to win: weight x
(best time - the same work's time at the measured FMA peak), discounted per batch without a
gain; "round-robin" (`RoundRobin`) to the task with the fewest trials. tune_tasks takes the
name or one of these objects; measure callbacks receive the object."""

from __future__ import annotations

from typing import Any

from ..error import TuningError


class TaskScheduler:
    """The base: `kind` names the policy tune_tasks runs."""

    kind = ""

    @staticmethod
    def create(kind: str = "gradient", *args: Any, **kwargs: Any) -> TaskScheduler:
        table = {"gradient": GradientBased, "round-robin": RoundRobin}
        if kind not in table:
            raise TuningError(f"unknown task scheduler {kind!r}; use one of {sorted(table)}")
        return table[kind](*args, **kwargs)

    def __str__(self) -> str:
        return f"meta_schedule.{type(self).__name__}({hex(id(self))})"


class RoundRobin(TaskScheduler):
    """The next batch goes to the task with the fewest trials."""

    kind = "round-robin"


class GradientBased(TaskScheduler):
    """The next batch goes to the task with the most time left to win. TVM's `alpha`,
    `window_size` and `seed` are accepted; the policy is minitvm's (see the module)."""

    kind = "gradient"

    def __init__(self, alpha: float = 0.2, window_size: int = 3, seed: int = -1) -> None:
        self.alpha, self.window_size, self.seed = alpha, window_size, seed


class PyTaskScheduler(TaskScheduler):
    """TVM's base for schedulers written in Python; tune_tasks runs only the built-in
    policies, so passing one is an error that says so."""


def as_scheduler(task_scheduler: Any) -> TaskScheduler:
    """The TaskScheduler for a name or an object (a PyTaskScheduler is refused)."""
    if isinstance(task_scheduler, PyTaskScheduler) or (
        isinstance(task_scheduler, TaskScheduler) and not task_scheduler.kind
    ):
        raise TuningError(
            f"{type(task_scheduler).__name__}: schedulers written in Python are not supported; "
            "use 'gradient' or 'round-robin'"
        )
    if isinstance(task_scheduler, TaskScheduler):
        return task_scheduler
    if isinstance(task_scheduler, str):
        return TaskScheduler.create(task_scheduler)
    raise TuningError(
        f"task_scheduler must be 'gradient', 'round-robin' or a TaskScheduler, got "
        f"{type(task_scheduler).__name__}"
    )
