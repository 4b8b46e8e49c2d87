"""Builder and runner on a Ray cluster (optional dependency `ray`): measurements spread over
the cluster's machines. Artifacts and reference outputs travel as bytes through Ray's object
store, so builders and runners may sit on different machines. A task whose worker crashes
is a failed result; one that passes its timeout is cancelled (its worker killed).

    ray.init(address="auto")   # or a local cluster: ray.init(num_cpus=4)
    ms.tune_tir(mod, "llvm", work_dir, 256, builder=ms.ray.RayBuilder(), runner=ms.ray.RayRunner())
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from ..error import TuningError
from .builder import Builder, BuilderInput, BuilderResult, _payload
from .runner import (
    EvaluatorConfig,
    Runner,
    RunnerFuture,
    RunnerInput,
    RunnerResult,
    reply_to_result,
    run_payload,
)


def _ray(address: str | None) -> Any:
    """The ray module, connected (a local cluster is started when none is running)."""
    try:
        import ray
    except ImportError as err:
        raise TuningError(
            "the Ray builder/runner needs the optional package ray: pip install ray"
        ) from err
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False)
    return ray


_REMOTE: dict[str, Any] = {}


def _remote(ray: Any, name: str) -> Any:
    """The remote version of a job (made once; no retries: a crash is the candidate's)."""
    if name not in _REMOTE:
        _REMOTE[name] = ray.remote(max_retries=0, num_cpus=1)(_JOBS[name])
    return _REMOTE[name]


def _build_bytes(payload: dict) -> bytes:
    """On a Ray worker: build the module and return the exported file's bytes."""
    from .builder import _build_job

    with tempfile.TemporaryDirectory() as tmp:
        payload = {**payload, "path": os.path.join(tmp, "a.so")}
        _build_job(payload)
        with open(payload["path"], "rb") as f:
            return f.read()


def _with_files(payload: dict, artifact: bytes, reference: bytes | None, job: Any) -> Any:
    """On a Ray worker: write the artifact (and reference) to local files and run `job`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "a.so")
        with open(path, "wb") as f:
            f.write(artifact)
        payload = {**payload, "artifact": path}
        if reference is not None:
            npz = os.path.join(tmp, "ref.npz")
            with open(npz, "wb") as f:
                f.write(reference)
            payload["reference"] = {**payload["reference"], "npz": npz}
            payload["out"] = npz
        return job(payload)


def _run_remote(payload: dict, artifact: bytes, reference: bytes | None) -> list[float]:
    from .runner import _run_job

    return _with_files(payload, artifact, reference, _run_job)


def _reference_remote(payload: dict, artifact: bytes) -> bytes:
    from .runner import _reference_job

    def job(p: dict) -> bytes:
        out = os.path.join(os.path.dirname(p["artifact"]), "out.npz")
        _reference_job({**p, "out": out})
        with open(out, "rb") as f:
            return f.read()

    return _with_files(payload, artifact, None, job)


_JOBS = {"build": _build_bytes, "run": _run_remote, "reference": _reference_remote}


def _gather(ray: Any, refs: list, timeout: float) -> list[tuple[bool, Any]]:
    """Wait for every task up to `timeout` s each (from now); cancel the late ones."""
    deadline = time.monotonic() + timeout
    pending = list(refs)
    while pending and time.monotonic() < deadline:
        _, pending = ray.wait(
            pending, num_returns=len(pending), timeout=deadline - time.monotonic()
        )
    out = []
    for ref in refs:
        if ref in pending:
            ray.cancel(ref, force=True)
            out.append((False, f"timeout: the Ray task ran past {timeout:g} s and was cancelled"))
            continue
        try:
            out.append((True, ray.get(ref)))
        except Exception as err:  # noqa: BLE001 - a task's failure (crash included) is data
            out.append((False, f"{type(err).__name__}: {str(err)[-500:]}"))
    return out


class RayBuilder(Builder):
    """Builds each candidate as a Ray task; the artifact comes back as bytes (kept locally)."""

    def __init__(self, address: str | None = None, timeout_sec: float = 30.0) -> None:
        self.address = address
        self.timeout_sec = timeout_sec
        self._dir = tempfile.TemporaryDirectory(prefix="minitvm-ms-ray-")

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        ray = _ray(self.address)
        payloads = [_payload(x, self._dir.name) for x in build_inputs]
        refs = [_remote(ray, "build").remote(p) for p in payloads]
        results = []
        for payload, (ok, value) in zip(payloads, _gather(ray, refs, self.timeout_sec)):
            if not ok:
                results.append(BuilderResult(None, str(value)))
                continue
            with open(payload["path"], "wb") as f:
                f.write(value)
            results.append(BuilderResult(payload["path"], None))
        return results


class RayRunner(Runner):
    """Times each candidate as a Ray task (one CPU each; on a many-machine cluster the
    candidates run side by side on different machines)."""

    def __init__(
        self,
        address: str | None = None,
        timeout_sec: float = 30.0,
        evaluator_config: EvaluatorConfig | None = None,
        seed: int = 0,
    ) -> None:
        self.address = address
        self.timeout_sec = timeout_sec
        self.evaluator_config = evaluator_config or EvaluatorConfig()
        self.seed = seed
        self.reference = None
        self._reference_ref = None

    def set_reference(
        self, artifact_path: str | None, args_info: list, npz_path: str, seed: int = 0
    ) -> str | None:
        self.reference = None
        if artifact_path is None:
            return None
        ray = _ray(self.address)
        payload = {"args_info": [a.as_json() for a in args_info], "seed": seed}
        with open(artifact_path, "rb") as f:
            ref = _remote(ray, "reference").remote(payload, f.read())
        ((ok, value),) = _gather(ray, [ref], max(120.0, 10 * self.timeout_sec))
        if not ok:
            return str(value)
        with open(npz_path, "wb") as f:
            f.write(value)
        self.reference = {"npz": npz_path, "seed": seed, "ray": ray.put(value)}
        return None

    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        ray = _ray(self.address)
        reference = self.reference
        plain = None if reference is None else {"npz": reference["npz"], "seed": reference["seed"]}
        refs = []
        for x in runner_inputs:
            payload = run_payload(x, self.evaluator_config, plain, self.seed)
            with open(x.artifact_path, "rb") as f:
                artifact = f.read()
            ref_bytes = None if reference is None else reference["ray"]
            refs.append(_remote(ray, "run").remote(payload, artifact, ref_bytes))
        return [
            RunnerFuture(reply_to_result(ok, v)) for ok, v in _gather(ray, refs, self.timeout_sec)
        ]


__all__ = ["RayBuilder", "RayRunner", "RunnerResult"]
