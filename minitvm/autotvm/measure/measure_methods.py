"""The local builder and runner: candidates are instantiated here, then built and timed in
meta_schedule's worker processes (a crash, hang or wrong output is an error record and
tuning goes on). Every candidate's outputs are checked against the unscheduled computation.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from typing import Any

from ...error import TuningError
from .executor import LocalExecutor
from .measure import Builder, BuildResult, MeasureErrorNo, MeasureResult, Runner

logger = logging.getLogger("autotvm")


class LocalBuilder(Builder):
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
        super().__init__(timeout, n_parallel)
        self._ms = None

    def build(self, measure_inputs: list) -> list:
        from ...meta_schedule.builder import BuilderInput
        from ...meta_schedule.builder import LocalBuilder as MsLocalBuilder

        if self._ms is None:
            self._ms = MsLocalBuilder(max_workers=self.n_parallel, timeout_sec=self.timeout)
        start = time.time()
        out: list[Any] = [None] * len(measure_inputs)
        staged = {}
        for i, inp in enumerate(measure_inputs):
            try:
                staged[i] = instantiate(inp)
            except Exception as err:  # noqa: BLE001 - a template failure is a record, not a stop
                out[i] = _failure(MeasureErrorNo.INSTANTIATION_ERROR, err, start)
        inputs = [BuilderInput(mod, inp.target) for mod, _ in staged.values()]
        for (i, (_, args)), res in zip(staged.items(), self._ms.build(inputs)):
            if res.error_msg is None:
                out[i] = BuildResult(res.artifact_path, args, None, time.time() - start)
            else:
                timeout = res.error_msg.startswith("timeout")
                code = MeasureErrorNo.BUILD_TIMEOUT if timeout else MeasureErrorNo.COMPILE_HOST
                out[i] = _failure(code, res.error_msg, start)
        return out


def instantiate(inp: Any) -> tuple:
    """The scheduled module of a MeasureInput and its argument infos (as JSON); raises when
    the template fails or marks the config invalid (`cfg.raise_error`)."""
    from ...ir import IRModule
    from ...meta_schedule.arg_info import ArgInfo

    sch, arg_bufs = inp.task.instantiate(inp.config)
    if not inp.config.valid():
        raise TuningError("; ".join(inp.config.errors))
    func = sch.build_prim_func(list(arg_bufs), "main")
    return IRModule({"main": func}), [a.as_json() for a in ArgInfo.from_prim_func(func)]


# the worker reports failures as messages: (test on the message, error number)
_RUN_ERRORS = (
    (lambda msg: msg.startswith("timeout"), MeasureErrorNo.RUN_TIMEOUT),
    (lambda msg: "wrong result" in msg, MeasureErrorNo.WRONG_ANSWER),
)


class LocalRunner(Runner):
    """Times built candidates in a worker process: `repeat` rounds of `number` calls (each
    round at least `min_repeat_ms`), killed after `timeout` seconds. Outputs are checked
    against the unscheduled computation of the task's tensors (built once per task)."""

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
        super().__init__(timeout, 1)
        self.number, self.repeat, self.min_repeat_ms = int(number), int(repeat), min_repeat_ms
        self.cooldown_interval = cooldown_interval
        self.enable_cpu_cache_flush = enable_cpu_cache_flush
        self._ms = None
        self._dir: Any = None
        self._reference: dict | None = None
        self.executor = LocalExecutor()

    def set_task(self, task: Any) -> None:
        super().set_task(task)
        self.close_task()
        self._dir = tempfile.TemporaryDirectory(prefix="minitvm-autotvm-")

    def close_task(self) -> None:
        """Drop the task's reference outputs."""
        if self._dir is not None:
            self._dir.cleanup()
        self._dir, self._reference = None, None

    def _runner(self) -> Any:
        from ...meta_schedule.runner import EvaluatorConfig
        from ...meta_schedule.runner import LocalRunner as MsLocalRunner

        if self._ms is None:
            config = EvaluatorConfig(
                self.number, self.repeat, self.min_repeat_ms, self.enable_cpu_cache_flush
            )
            self._ms = MsLocalRunner(timeout_sec=self.timeout, evaluator_config=config)
        return self._ms

    @property
    def ref_input(self) -> Any:
        """Fixed input arrays (TVM's option): not supported, always None."""
        return None

    @ref_input.setter
    def ref_input(self, value: Any) -> None:
        if value is not None:
            _refuse_ref_input()

    def run(self, measure_inputs: list, build_results: list) -> list:
        """Submit one job per candidate to `self.executor`; a job that raises becomes an
        UNKNOWN_ERROR record."""
        built = [i for i, b in enumerate(build_results) if isinstance(b, BuildResult)]
        if built and self._reference is None:
            self._set_reference(measure_inputs[built[0]])
        futures = [
            self.executor.submit(measure_candidate, self, inp, build, ref_input=self.ref_input)
            for inp, build in zip(measure_inputs, build_results)
        ]
        results = []
        for future, build in zip(futures, build_results):
            try:
                results.append(future.result())
            except Exception as err:  # noqa: BLE001 - one failed job is a record, not a stop
                results.append(_failure(MeasureErrorNo.UNKNOWN_ERROR, err, time.time()))
                if isinstance(build, BuildResult):  # the job never got to delete it
                    _remove(build.filename)
        return results

    def _set_reference(self, inp: Any) -> None:
        """Build the unscheduled computation of `inp`'s tensors and record its outputs on
        the runner's seeded inputs; later runs compare against them."""
        from ...ir import IRModule
        from ...meta_schedule.arg_info import ArgInfo
        from ...meta_schedule.builder import BuilderInput
        from ...meta_schedule.builder import LocalBuilder as MsLocalBuilder
        from ...te import create_prim_func

        _, arg_bufs = inp.task.instantiate(inp.config)
        func = create_prim_func(list(arg_bufs)).with_attr("global_symbol", "main")
        builder = MsLocalBuilder()  # its artifacts live as long as it does
        (built,) = builder.build([BuilderInput(IRModule({"main": func}), inp.target)])
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="minitvm-autotvm-")
        npz = os.path.join(self._dir.name, "reference.npz")
        error = built.error_msg or self._runner().set_reference(
            built.artifact_path, ArgInfo.from_prim_func(func), npz
        )
        _remove(built.artifact_path)
        if error:
            logger.warning(
                "autotvm: task %s: outputs are not checked, the unscheduled computation did "
                "not run: %s",
                inp.task.name,
                error,
            )
        self._reference = self._runner().reference or {}


def measure_candidate(
    runner: LocalRunner, measure_input: Any, build_result: Any, ref_input: Any = None
) -> MeasureResult:
    """Time one built candidate in `runner`'s worker process (a build failure's record
    passes through); its outputs are checked against the task's reference."""
    from ...meta_schedule.arg_info import ArgInfo
    from ...meta_schedule.runner import RunnerInput

    if ref_input is not None:
        _refuse_ref_input()
    if not isinstance(build_result, BuildResult):
        return build_result
    start = time.time()
    ms_runner = runner._runner()
    ms_runner.reference = runner._reference or None
    args_info = [ArgInfo.from_json(a) for a in build_result.arg_info]
    (future,) = ms_runner.run([RunnerInput(build_result.filename, "cpu", args_info)])
    res = future.result()
    _remove(build_result.filename)
    cost = build_result.time_cost + time.time() - start
    if res.run_secs:
        return MeasureResult(res.run_secs, 0, cost, time.time())
    msg = res.error_msg or "no timing"
    code = next((c for test, c in _RUN_ERRORS if test(msg)), MeasureErrorNo.RUNTIME_DEVICE)
    return MeasureResult((msg,), code, cost, time.time())


def _refuse_ref_input() -> None:
    raise TuningError(
        "autotvm.LocalRunner.ref_input is not supported: candidates run on seeded random "
        "inputs in meta_schedule's worker process, and their outputs are checked against the "
        "unscheduled computation on the same inputs; give an operator that needs particular "
        "inputs (sparse indices) those values as constants in its template"
    )


def RPCRunner(*args: Any, **kwargs: Any) -> Any:
    """Not supported: remote devices through TVM's RPC tracker."""
    raise TuningError(
        "autotvm.RPCRunner is not supported (no RPC tracker in minitvm); measure locally "
        "with autotvm.LocalRunner, or spread meta_schedule tuning over machines with its "
        "Ray runner"
    )


def _failure(code: MeasureErrorNo, err: Any, start: float) -> MeasureResult:
    msg = f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else str(err)
    return MeasureResult((msg,), code, time.time() - start, time.time())


def _remove(path: str | None) -> None:
    if path and os.path.exists(path):
        os.remove(path)
