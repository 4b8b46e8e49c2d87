"""Runners: time built candidates in worker processes, check them against the unscheduled
function's output, and report failures (crash, hang, wrong result) as data."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..error import TuningError
from ._worker import WorkerPool
from .arg_info import ArgInfo


class RunnerInput:
    """A built artifact to time, with its arguments' descriptions."""

    def __init__(self, artifact_path: str, device_type: str, args_info: list[ArgInfo]) -> None:
        self.artifact_path = artifact_path
        self.device_type = device_type
        self.args_info = list(args_info)


class RunnerResult:
    """Seconds of each repeat (`run_secs`), or None and `error_msg` when the run failed."""

    def __init__(self, run_secs: list[float] | None, error_msg: str | None) -> None:
        self.run_secs = None if run_secs is None else [float(s) for s in run_secs]
        self.error_msg = error_msg

    def __repr__(self) -> str:
        return f"RunnerResult(run_secs={self.run_secs!r}, error_msg={self.error_msg!r})"


class RunnerFuture:
    """A finished (local) or pending (Ray) measurement: `done()`, `result()`."""

    def __init__(self, result: RunnerResult | None = None, getter: Any = None) -> None:
        self._result = result
        self._getter = getter

    def done(self) -> bool:
        return self._result is not None or self._getter is None

    def result(self) -> RunnerResult:
        if self._result is None:
            self._result = self._getter()
        return self._result


class EvaluatorConfig:
    """How to time: `repeat` rounds of `number` calls (each round at least `min_repeat_ms`).
    `enable_cpu_cache_flush=True` flushes every argument but the first from the CPU caches
    before each call, as a layer in a model finds its weights (the default of
    `tune_relax`'s runner on CPU targets; see runtime/cache_flush.py)."""

    def __init__(
        self,
        number: int = 3,
        repeat: int = 3,
        min_repeat_ms: float = 20.0,
        enable_cpu_cache_flush: bool = False,
    ) -> None:
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms
        self.enable_cpu_cache_flush = enable_cpu_cache_flush


class Runner:
    """Base class: `run(inputs) -> list[RunnerFuture]`; a reference (see `set_reference`)
    makes each run also check the candidate's outputs."""

    reference: dict | None = None

    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        raise NotImplementedError

    def set_reference(
        self, artifact_path: str | None, args_info: list, npz_path: str, seed: int = 0
    ) -> str | None:
        """Compute the outputs of `artifact_path` (the unscheduled function) on the seeded
        random inputs into `npz_path`; later runs compare against them. Returns an error
        message, or None. A runner that cannot (or `artifact_path` None) checks nothing."""
        self.reference = None
        return None

    @staticmethod
    def create(kind: Any = "local", **kwargs: Any) -> Runner:
        if isinstance(kind, Runner):
            return kind
        if kind == "ray":
            from .ray import RayRunner

            return RayRunner(**kwargs)
        return {"local": LocalRunner}[kind](**kwargs)


class PyRunner(Runner):
    """TVM's base for runners written in Python: override `run(runner_inputs)`, returning a
    RunnerFuture per input (a PyRunnerFuture subclass, or RunnerFuture(result)). Such a
    runner checks nothing against the reference unless it overrides `set_reference`."""


class PyRunnerFuture(RunnerFuture):
    """TVM's base for a Python runner's futures: override `done()` and `result()`."""

    def __init__(self) -> None:
        super().__init__(None, None)

    def result(self) -> RunnerResult:
        raise NotImplementedError(f"{type(self).__name__}.result is not implemented")


class LocalRunner(Runner):
    """Runs each measurement in a worker process (one at a time, so timings do not compete),
    killed after `timeout_sec`; a crash or hang is a failed result and tuning goes on.
    `fixed_inputs` (an .npz file, one array per argument in order: `np.savez(path, *arrays)`)
    replaces the seeded random inputs, for kernels whose inputs must be real (the index
    arrays of a sparse operator: autotvm's ref_input)."""

    def __init__(
        self,
        timeout_sec: float = 30.0,
        evaluator_config: EvaluatorConfig | None = None,
        seed: int = 0,
        fixed_inputs: str | None = None,
    ) -> None:
        if fixed_inputs is not None and not os.path.isfile(fixed_inputs):
            raise TuningError(
                f"LocalRunner(fixed_inputs={fixed_inputs!r}): no such file; give an .npz "
                "written by np.savez(path, *arrays), one array per argument"
            )
        self.timeout_sec = timeout_sec
        self.evaluator_config = evaluator_config or EvaluatorConfig()
        self.seed = seed
        self.fixed_inputs = fixed_inputs
        self.reference = None
        self._pool = WorkerPool.shared("run", 1)

    def set_reference(
        self, artifact_path: str | None, args_info: list, npz_path: str, seed: int = 0
    ) -> str | None:
        self.reference = None
        if artifact_path is None:
            return None
        payload = {
            "artifact": artifact_path,
            "args_info": [a.as_json() for a in args_info],
            "out": npz_path,
            "seed": seed,
            "inputs": self.fixed_inputs,
        }
        # The unscheduled function may be slow (a naive loop nest): give it more time.
        ((ok, value),) = self._pool.map("reference", [payload], max(120.0, 10 * self.timeout_sec))
        if not ok:
            return str(value)
        self.reference = {"npz": npz_path, "seed": seed}
        return None

    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        payloads = [
            run_payload(x, self.evaluator_config, self.reference, self.seed, self.fixed_inputs)
            for x in runner_inputs
        ]
        replies = self._pool.map("run", payloads, self.timeout_sec)
        return [RunnerFuture(reply_to_result(ok, value)) for ok, value in replies]

    def close(self) -> None:
        """Stop the (shared) run worker; the next run starts a new one."""
        self._pool.close()


def run_payload(
    x: RunnerInput,
    config: EvaluatorConfig,
    reference: dict | None,
    seed: int,
    inputs: str | None = None,
) -> dict:
    """The plain-data request of one measurement (shared by the local and Ray runners)."""
    return {
        "inputs": inputs,
        "artifact": x.artifact_path,
        "args_info": [a.as_json() for a in x.args_info],
        "number": config.number,
        "repeat": config.repeat,
        "min_repeat_ms": config.min_repeat_ms,
        "cache_flush": bool(config.enable_cpu_cache_flush),
        "reference": reference,
        "seed": reference["seed"] if reference else seed,
        "device": x.device_type,
    }


def device_of(target: Any) -> str:
    """The runtime device a target's kernels run on ("cpu", "opencl", "cuda", ...)."""
    from ..target.kinds import kind_spec

    return "cpu" if target is None else kind_spec(target.kind.name).device


def check_device(target: Any) -> None:
    """Raise TuningError when this machine lacks the device `target`'s kernels run on: a
    local runner measures there, and no measurement is ever made up."""
    from ..runtime import device

    name = device_of(target)
    if name == "cpu":
        return
    reason = device(name, 0).unavailable_reason()
    if reason is not None:
        raise TuningError(
            f"meta_schedule: tuning for target '{target}' measures each candidate on "
            f"{name}(0), which this machine cannot run: {reason}. Tune on a machine with that "
            "device, pass a runner that measures on one, or tune for a device this machine has "
            "(e.g. 'opencl' or 'llvm')"
        )


def reply_to_result(ok: bool, value: Any) -> RunnerResult:
    if ok and isinstance(value, list) and value and all(isinstance(v, float) for v in value):
        return RunnerResult(value, None)
    return RunnerResult(None, str(value) if not ok else f"malformed timing reply {value!r}")


# ---------------------------------------------------------------- in the worker process
def random_inputs(args_info: list, seed: int) -> list[np.ndarray]:
    """Seeded random arrays for the arguments (normal floats, small non-negative ints)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for info in (ArgInfo.from_json(a) for a in args_info):
        dtype = np.dtype(info.dtype)
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(info.shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, info.shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 8, info.shape).astype(dtype))
    return arrays


def job_inputs(payload: dict) -> list[np.ndarray]:
    """The arrays a job calls the kernel with: the fixed inputs' file when given (checked
    against the arguments), else seeded random ones."""
    path = payload.get("inputs")
    if not path:
        return random_inputs(payload["args_info"], payload["seed"])
    infos = [ArgInfo.from_json(a) for a in payload["args_info"]]
    with np.load(path, allow_pickle=False) as npz:
        arrays = [npz[f"arr_{i}"] for i in range(len(npz.files)) if f"arr_{i}" in npz.files]
    if len(arrays) != len(infos):
        raise TuningError(
            f"fixed inputs '{path}' hold {len(arrays)} arrays (arr_0, arr_1, ...), the kernel "
            f"takes {len(infos)} arguments: save one array per argument, outputs included"
        )
    for i, (arr, info) in enumerate(zip(arrays, infos)):
        if tuple(arr.shape) != tuple(info.shape) or np.dtype(arr.dtype) != np.dtype(info.dtype):
            raise TuningError(
                f"fixed inputs '{path}': argument {i} is {tuple(arr.shape)} {arr.dtype}, the "
                f"kernel's is {tuple(info.shape)} {info.dtype}"
            )
    return arrays


def _load_and_call(artifact: str, arrays: list[np.ndarray], dev: Any = None) -> tuple[Any, list]:
    """Load an exported module, call its entry function once on copies of `arrays` on `dev`
    (the CPU when None)."""
    from .. import runtime
    from ..runtime import ndarray

    mod = runtime.load_module(artifact)
    nds = [ndarray.array(a, dev) if dev is not None else ndarray.array(a) for a in arrays]
    mod[mod.entry_name](*nds)
    return mod, nds


def _reference_job(payload: dict) -> str:
    """Run the unscheduled function once on the seeded inputs; save every array after it."""
    _, nds = _load_and_call(payload["artifact"], job_inputs(payload))
    np.savez(payload["out"], *[x.numpy() for x in nds])
    return payload["out"]


def _run_job(payload: dict) -> list[float]:
    """Check the candidate's outputs against the reference, then time it; every repeat's
    mean is returned (the tuner takes the minimum)."""
    from ..runtime import device

    dev = device(payload.get("device") or "cpu", 0)
    mod, nds = _load_and_call(payload["artifact"], job_inputs(payload), dev)
    if payload["reference"]:
        _check_outputs(nds, payload["reference"]["npz"])
    timer = mod.time_evaluator(
        mod.entry_name,
        dev,
        number=payload["number"],
        repeat=payload["repeat"],
        min_repeat_ms=payload["min_repeat_ms"],
        f_preproc="cache_flush_cpu_non_first_arg"
        if payload.get("cache_flush") and not dev.is_gpu
        else "",
    )
    return [float(s) for s in timer(*nds).results]


def _check_outputs(nds: list, npz_path: str) -> None:
    with np.load(npz_path, allow_pickle=False) as ref:
        expected = [ref[f"arr_{i}"] for i in range(len(ref.files))]
    for i, (got, want) in enumerate(zip((x.numpy() for x in nds), expected)):
        scale = float(np.max(np.abs(want))) if want.size and want.dtype.kind == "f" else 0.0
        if not np.allclose(got, want, rtol=1e-3, atol=1e-4 * max(1.0, scale), equal_nan=True):
            err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            raise ValueError(
                f"wrong result: argument {i} differs from the unscheduled function's "
                f"(max abs error {err:.3g}); the schedule is not equivalent"
            )
