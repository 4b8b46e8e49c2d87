"""Measuring configurations: instantiate the template, then build and time the schedule in
meta_schedule's worker processes (a crash, hang or wrong output is an error record and
tuning goes on). Every candidate's outputs are checked against the unscheduled computation.
"""

from __future__ import annotations

import enum
import logging
import os
import tempfile
import time
from typing import Any

import numpy as np

from ..error import TuningError

logger = logging.getLogger("autotvm")


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


class MeasureInput:
    """What is measured: a task's config on a target."""

    def __init__(self, target: Any, task: Any, config: Any) -> None:
        self.target, self.task, self.config = target, task, config

    def __repr__(self) -> str:
        return f"MeasureInput(target={self.target}, task={self.task.name}, config={self.config})"


class MeasureResult:
    """Seconds per repeat (`costs`; for a failure the error message), `error_no`,
    `all_cost` (wall seconds of build and run) and `timestamp`."""

    def __init__(self, costs: Any, error_no: int, all_cost: float, timestamp: float) -> None:
        self.costs = tuple(costs)
        self.error_no = int(error_no)
        self.all_cost = float(all_cost)
        self.timestamp = float(timestamp)

    @property
    def mean_cost(self) -> float:
        """Mean seconds of a successful result; inf for a failure."""
        return float(np.mean(self.costs)) if self.error_no == 0 else float("inf")

    def __repr__(self) -> str:
        return (
            f"MeasureResult(costs={self.costs!r}, error_no={self.error_no}, "
            f"all_cost={self.all_cost:.3f}, timestamp={self.timestamp:.1f})"
        )


class LocalBuilder:
    """Builds candidates in `n_parallel` worker processes (default: every core), each killed
    after `timeout` seconds (meta_schedule's LocalBuilder)."""

    def __init__(
        self,
        timeout: float = 10,
        n_parallel: int | None = None,
        build_kwargs: Any = None,
        build_func: str = "default",
        do_fork: bool = False,
        runtime: Any = None,
    ) -> None:
        if build_func != "default" or build_kwargs or runtime is not None:
            raise TuningError(
                "autotvm.LocalBuilder: build_func, build_kwargs and runtime are not supported; "
                "candidates are built with tvm.build for the task's target"
            )
        self.timeout = float(timeout)
        self.n_parallel = n_parallel or os.cpu_count() or 1
        self._ms = None

    def ms_builder(self) -> Any:
        from ..meta_schedule.builder import LocalBuilder as MsLocalBuilder

        if self._ms is None:
            self._ms = MsLocalBuilder(max_workers=self.n_parallel, timeout_sec=self.timeout)
        return self._ms


class LocalRunner:
    """Times built candidates in a worker process: `repeat` rounds of `number` calls (each
    round at least `min_repeat_ms`), killed after `timeout` seconds; outputs are checked."""

    def __init__(
        self,
        timeout: float = 10,
        number: int = 4,
        repeat: int = 3,
        min_repeat_ms: float = 0,
        cooldown_interval: float = 0.1,
        enable_cpu_cache_flush: bool = False,
        module_loader: Any = None,
    ) -> None:
        if module_loader is not None:
            raise TuningError("autotvm.LocalRunner: module_loader is not supported")
        self.timeout = float(timeout)
        self.number, self.repeat, self.min_repeat_ms = int(number), int(repeat), min_repeat_ms
        self.cooldown_interval = cooldown_interval
        self.enable_cpu_cache_flush = enable_cpu_cache_flush
        self._ms = None

    def ms_runner(self) -> Any:
        from ..meta_schedule.runner import EvaluatorConfig
        from ..meta_schedule.runner import LocalRunner as MsLocalRunner

        if self._ms is None:
            config = EvaluatorConfig(
                self.number, self.repeat, self.min_repeat_ms, self.enable_cpu_cache_flush
            )
            self._ms = MsLocalRunner(timeout_sec=self.timeout, evaluator_config=config)
        return self._ms


def RPCRunner(*args: Any, **kwargs: Any) -> Any:
    """Not supported: remote devices through TVM's RPC tracker."""
    raise TuningError(
        "autotvm.RPCRunner is not supported (no RPC tracker in minitvm); measure locally "
        "with autotvm.LocalRunner, or spread meta_schedule tuning over machines with its "
        "Ray runner"
    )


_KINDS = {"builder": {"local": LocalBuilder}, "runner": {"local": LocalRunner}}


def measure_option(builder: Any = "local", runner: Any = "local") -> dict:
    """How to measure: a builder and a runner ("local" or instances).

    >>> autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=5))
    """
    option = {}
    for role, value in (("builder", builder), ("runner", runner)):
        if isinstance(value, str):
            if value not in _KINDS[role]:
                raise TuningError(
                    f"measure_option: {role}={value!r} is not supported; use "
                    f"{sorted(_KINDS[role])} or an autotvm.Local{role.title()}"
                )
            value = _KINDS[role][value]()
        option[role] = value
    return option


def create_measure_batch(task: Any, option: dict) -> _MeasureBatch:
    """A callable measuring a list of MeasureInputs of `task` (`.n_parallel` at a time)."""
    return _MeasureBatch(task, option["builder"], option["runner"])


# the runner reports failures as messages: (test on the message, error number)
_RUN_ERRORS = (
    (lambda msg: msg.startswith("timeout"), MeasureErrorNo.RUN_TIMEOUT),
    (lambda msg: "wrong result" in msg, MeasureErrorNo.WRONG_ANSWER),
)


class _MeasureBatch:
    """Instantiates configs here, builds and runs them in meta_schedule's workers."""

    def __init__(self, task: Any, builder: LocalBuilder, runner: LocalRunner) -> None:
        self.task = task
        self.builder = builder.ms_builder()
        self.runner = runner.ms_runner()
        self.n_parallel = builder.n_parallel
        self._dir = tempfile.TemporaryDirectory(prefix="minitvm-autotvm-")
        self._reference = None  # the runner's reference, once computed

    def __call__(self, inputs: list) -> list[MeasureResult]:
        from ..meta_schedule.builder import BuilderInput

        start = time.time()
        results: list[Any] = [None] * len(inputs)
        staged = {}
        for i, inp in enumerate(inputs):
            try:
                staged[i] = self._instantiate(inp)
            except Exception as err:  # noqa: BLE001 - a template failure is a record, not a stop
                results[i] = (MeasureErrorNo.INSTANTIATION_ERROR, f"{type(err).__name__}: {err}")
        if staged and self._reference is None:
            self._set_reference(next(iter(staged.values()))[2])
        built = dict(
            zip(
                staged,
                self.builder.build(
                    [BuilderInput(m, self.task.target) for m, _, _ in staged.values()]
                ),
            )
        )
        self._run(staged, built, results)
        elapsed = (time.time() - start) / max(1, len(inputs))
        return [_to_result(r, elapsed) for r in results]

    def _instantiate(self, inp: Any) -> tuple:
        """The scheduled module, its argument infos and its tensors; raises when the config
        is invalid."""
        from ..ir import IRModule
        from ..meta_schedule.arg_info import ArgInfo

        sch, arg_bufs = self.task.instantiate(inp.config)
        if not inp.config.valid():
            raise TuningError("; ".join(inp.config.errors))
        func = sch.build_prim_func(list(arg_bufs), "main")
        return IRModule({"main": func}), ArgInfo.from_prim_func(func), arg_bufs

    def _set_reference(self, arg_bufs: list) -> None:
        """Build the unscheduled computation and record its outputs on the runner's inputs."""
        from ..ir import IRModule
        from ..meta_schedule.arg_info import ArgInfo
        from ..meta_schedule.builder import BuilderInput
        from ..te import create_prim_func

        func = create_prim_func(list(arg_bufs)).with_attr("global_symbol", "main")
        (built,) = self.builder.build([BuilderInput(IRModule({"main": func}), self.task.target)])
        npz = os.path.join(self._dir.name, "reference.npz")
        error = built.error_msg or self.runner.set_reference(
            built.artifact_path, ArgInfo.from_prim_func(func), npz
        )
        _remove(built.artifact_path)
        if error:
            logger.warning(
                "autotvm: task %s: outputs are not checked, the unscheduled computation did "
                "not run: %s",
                self.task.name,
                error,
            )
        self._reference = self.runner.reference or {}

    def _run(self, staged: dict, built: dict, results: list) -> None:
        from ..meta_schedule.runner import RunnerInput

        ok = [i for i in staged if built[i].error_msg is None]
        for i in staged:
            if built[i].error_msg is not None:
                msg = built[i].error_msg
                code = (
                    MeasureErrorNo.BUILD_TIMEOUT
                    if msg.startswith("timeout")
                    else MeasureErrorNo.COMPILE_HOST
                )
                results[i] = (code, msg)
        self.runner.reference = self._reference or None
        futures = self.runner.run(
            [RunnerInput(built[i].artifact_path, "cpu", staged[i][1]) for i in ok]
        )
        for i, future in zip(ok, futures):
            res = future.result()
            _remove(built[i].artifact_path)
            if res.run_secs:
                results[i] = (MeasureErrorNo.NO_ERROR, res.run_secs)
                continue
            msg = res.error_msg or "no timing"
            code = next((c for test, c in _RUN_ERRORS if test(msg)), MeasureErrorNo.RUNTIME_DEVICE)
            results[i] = (code, msg)

    def close(self) -> None:
        self._dir.cleanup()


def _to_result(outcome: tuple, elapsed: float) -> MeasureResult:
    code, value = outcome
    costs = value if code == MeasureErrorNo.NO_ERROR else (str(value),)
    return MeasureResult(costs, code, elapsed, time.time())


def _remove(path: str | None) -> None:
    if path and os.path.exists(path):
        os.remove(path)
