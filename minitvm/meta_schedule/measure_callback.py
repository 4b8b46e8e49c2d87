"""Measure callbacks (TVM's `ms.measure_callback`): code run after each measured batch.

The tuner itself always adds every record to the database, removes the built artifacts and
updates the cost model; `AddToDatabase`, `RemoveBuildArtifact` and `UpdateCostModel` name
those steps (TVM's default list) and do nothing more when passed. A `PyMeasureCallback`
subclass's `apply` is called after each batch with the task scheduler, the task's index,
the candidates and their build and run results."""

from __future__ import annotations

from typing import Any

from ..error import TuningError


class MeasureCallback:
    """The base of measure callbacks."""

    def apply(
        self,
        task_scheduler: Any,
        task_id: int,
        measure_candidates: list,
        builder_results: list,
        runner_results: list,
    ) -> None:
        raise NotImplementedError(f"{type(self).__name__}.apply is not implemented")

    @staticmethod
    def create(kind: str = "default") -> list[MeasureCallback]:
        """TVM's default list: add to the database, remove artifacts, update the cost model."""
        if kind != "default":
            raise TuningError(f"MeasureCallback.create: unknown kind {kind!r}; use 'default'")
        return [AddToDatabase(), RemoveBuildArtifact(), UpdateCostModel()]

    def __str__(self) -> str:
        return f"meta_schedule.{type(self).__name__}({hex(id(self))})"

    __repr__ = __str__


class _TunerStep(MeasureCallback):
    """A step the tuner always takes itself; as a callback it does nothing more."""

    def apply(self, *args: Any) -> None:
        return None


class AddToDatabase(_TunerStep):
    """Every measured record goes to the database (always done by the tuner)."""


class RemoveBuildArtifact(_TunerStep):
    """Built artifacts are removed once measured (always done by the tuner)."""


class UpdateCostModel(_TunerStep):
    """The cost model learns from each batch (always done by the tuner)."""


class PyMeasureCallback(MeasureCallback):
    """Subclass and override `apply` (decorate with `ms.derived_object`, as in TVM)."""


def user_callbacks(measure_callbacks: Any) -> list[MeasureCallback]:
    """The callbacks tune_tasks calls itself: "default", None or a list of MeasureCallbacks,
    less the steps the tuner takes anyway."""
    if measure_callbacks in ("default", None):
        return []
    if isinstance(measure_callbacks, MeasureCallback):
        measure_callbacks = [measure_callbacks]
    callbacks = list(measure_callbacks)
    for i, cb in enumerate(callbacks):
        if not isinstance(cb, MeasureCallback):
            raise TuningError(
                f"measure_callbacks[{i}] is a {type(cb).__name__}; give MeasureCallback objects "
                "(subclass ms.measure_callback.PyMeasureCallback and override apply)"
            )
    return [cb for cb in callbacks if not isinstance(cb, _TunerStep)]
