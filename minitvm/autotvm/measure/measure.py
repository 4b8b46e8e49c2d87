"""Measurement records and the builder/runner interface (TVM's `autotvm.measure` names).

A Builder turns MeasureInputs into BuildResults (or MeasureResults for the ones that failed);
a Runner turns those into MeasureResults. `create_measure_batch` chains the two for a task.
"""

from __future__ import annotations

import enum
import os
from collections import namedtuple
from typing import Any

import numpy as np

from ...error import TuningError


class MeasureErrorNo(enum.IntEnum):
    """Why a measurement failed (0: it did not)."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


class MeasureInput(namedtuple("MeasureInput", ("target", "task", "config"))):
    """What is measured: a task's config on a target (a named tuple, as in TVM)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"MeasureInput(target={self.target}, task={self.task.name}, config={self.config})"


_RESULT_FIELDS = ("costs", "error_no", "all_cost", "timestamp")


class MeasureResult(namedtuple("MeasureResult", _RESULT_FIELDS)):
    """Seconds per repeat (`costs`; for a failure the error message), `error_no`,
    `all_cost` (wall seconds of build and run) and `timestamp`; a named tuple, as in TVM."""

    __slots__ = ()

    def __new__(cls, costs: Any, error_no: int, all_cost: float, timestamp: float):
        return super().__new__(cls, tuple(costs), int(error_no), float(all_cost), float(timestamp))

    @property
    def mean_cost(self) -> float:
        """Mean seconds of a successful result; inf for a failure."""
        return float(np.mean(self.costs)) if self.error_no == 0 else float("inf")

    def __repr__(self) -> str:
        return (
            f"MeasureResult(costs={self.costs!r}, error_no={self.error_no}, "
            f"all_cost={self.all_cost:.3f}, timestamp={self.timestamp:.1f})"
        )


# a built candidate: the exported module's path, its arguments (meta_schedule ArgInfo JSON)
BuildResult = namedtuple("BuildResult", ("filename", "arg_info", "error", "time_cost"))


class Builder:
    """Base of builders: `build(measure_inputs)` returns, per input, a BuildResult or the
    MeasureResult of its failure."""

    def __init__(self, timeout: float = 10, n_parallel: int | None = None, build_kwargs=None):
        self.timeout = float(timeout)
        self.n_parallel = n_parallel or os.cpu_count() or 1
        self.user_build_kwargs = dict(build_kwargs or {})
        self.build_kwargs: dict = {}
        self.task = None

    def set_task(self, task: Any, build_kwargs: dict | None = None) -> None:
        self.task = task
        self.build_kwargs = {**(build_kwargs or {}), **self.user_build_kwargs}

    def build(self, measure_inputs: list) -> list:
        raise NotImplementedError(f"{type(self).__name__}.build")


class Runner:
    """Base of runners: `run(measure_inputs, build_results)` returns a MeasureResult each
    (a MeasureResult among the build results is a build failure, passed through)."""

    def __init__(self, timeout: float = 5, n_parallel: int | None = None) -> None:
        self.timeout = float(timeout)
        self.n_parallel = n_parallel or os.cpu_count() or 1
        self.task = None

    def set_task(self, task: Any) -> None:
        self.task = task

    def get_build_kwargs(self) -> dict:
        return {}

    def run(self, measure_inputs: list, build_results: list) -> list:
        raise NotImplementedError(f"{type(self).__name__}.run")


def measure_option(builder: Any = "local", runner: Any = "local") -> dict:
    """How to measure: a builder and a runner ("local" or instances).

    >>> autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=5))
    """
    from .measure_methods import LocalBuilder, LocalRunner

    kinds = {"builder": (LocalBuilder, Builder), "runner": (LocalRunner, Runner)}
    option = {}
    for role, value in (("builder", builder), ("runner", runner)):
        local, base = kinds[role]
        if value == "local":
            value = local()
        if not isinstance(value, base):
            raise TuningError(
                f"measure_option: {role}={value!r} is not supported; use 'local' or an "
                f"autotvm.{base.__name__} such as autotvm.{local.__name__}(...)"
            )
        option[role] = value
    return option


class _MeasureBatch:
    """Measures a list of MeasureInputs of one task: builder, then runner."""

    def __init__(self, task: Any, option: dict) -> None:
        self.builder, self.runner = option["builder"], option["runner"]
        self.runner.set_task(task)
        self.builder.set_task(task, self.runner.get_build_kwargs())
        self.n_parallel = self.builder.n_parallel

    def __call__(self, measure_inputs: list) -> list:
        return self.runner.run(measure_inputs, self.builder.build(measure_inputs))

    def close(self) -> None:
        for part in (self.builder, self.runner):
            getattr(part, "close_task", lambda: None)()


def create_measure_batch(task: Any, option: dict) -> _MeasureBatch:
    """A callable measuring a list of MeasureInputs of `task` (`.n_parallel` at a time)."""
    return _MeasureBatch(task, option)
