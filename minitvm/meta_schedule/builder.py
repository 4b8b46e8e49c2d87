"""Builders: compile candidate modules to exported object files in worker processes."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ..ir import IRModule
from ..target import Target
from ._worker import WorkerPool
from .utils import mod_from_text, mod_to_text, parse_target


class BuilderInput:
    """A module to build for a target."""

    def __init__(self, mod: IRModule, target: Any, params: Any = None) -> None:
        self.mod = mod
        self.target = parse_target(target)
        self.params = params


class BuilderResult:
    """Where the built artifact is (an `export_library` file), or why it failed."""

    def __init__(self, artifact_path: str | None, error_msg: str | None) -> None:
        self.artifact_path = artifact_path
        self.error_msg = error_msg

    def __repr__(self) -> str:
        return f"BuilderResult(artifact_path={self.artifact_path!r}, error_msg={self.error_msg!r})"


class Builder:
    """Base class: `build(inputs) -> list[BuilderResult]`, one per input, never raising for
    a candidate that fails to build."""

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        raise NotImplementedError

    @staticmethod
    def create(kind: Any = "local", **kwargs: Any) -> Builder:
        if isinstance(kind, Builder):
            return kind
        table = {"local": LocalBuilder}
        if kind == "ray":
            from .ray import RayBuilder

            return RayBuilder(**kwargs)
        return table[kind](**kwargs)


class PyBuilder(Builder):
    """TVM's base for builders written in Python: override `build(build_inputs)`, returning
    a BuilderResult per input (an artifact `runtime.load_module` reads, or an error)."""


class LocalBuilder(Builder):
    """Builds in `max_workers` worker processes (default: every core), `timeout_sec` each.
    Each artifact is a file in a folder of its own under the builder's temporary folder: they
    live as long as the builder."""

    def __init__(self, max_workers: int | None = None, timeout_sec: float = 30.0) -> None:
        self.max_workers = max_workers or os.cpu_count() or 1
        self.timeout_sec = timeout_sec
        self._pool = WorkerPool.shared("build", self.max_workers)
        self._dir = tempfile.TemporaryDirectory(prefix="minitvm-ms-build-")

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        payloads = [_payload(x, self._dir.name) for x in build_inputs]
        replies = self._pool.map("build", payloads, self.timeout_sec)
        return [_result(ok, value) for ok, value in replies]

    def close(self) -> None:
        """Stop the (shared) build workers; the next build starts new ones."""
        self._pool.close()


def _payload(build_input: BuilderInput, out_dir: str) -> dict:
    # each artifact in a folder of its own (as TVM): a caller may remove the file and its folder
    path = os.path.join(tempfile.mkdtemp(dir=out_dir), "tmp_func.so")
    return {"mod": mod_to_text(build_input.mod), "target": str(build_input.target), "path": path}


def _result(ok: bool, value: Any) -> BuilderResult:
    return BuilderResult(value, None) if ok else BuilderResult(None, str(value))


def _build_job(payload: dict) -> str:
    """In a worker: parse the module's JSON, build it, export it; returns the file's path."""
    from ..driver import build

    mod = mod_from_text(payload["mod"], "build job")
    build(mod, target=Target(payload["target"])).export_library(payload["path"])
    return payload["path"]
