"""Worker processes for builders and runners: a fresh interpreter per worker, talking JSON
lines over pipes. A worker that crashes or passes its deadline is killed and replaced; its
job is reported as failed and the others go on.

Workers are started with `python -m minitvm.meta_schedule._worker` (not multiprocessing):
the user's script is never re-imported in them, so an unguarded notebook-style script works.
Requests name a job in `_JOBS` (a fixed table); no code or pickle crosses the pipe.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import select
import selectors
import subprocess
import sys
import tempfile
import time
from typing import Any, ClassVar

from ..error import TuningError

_STARTUP_TIMEOUT = 300.0

# job name -> (module, function); the function takes the request's payload dict.
_JOBS = {
    "build": ("minitvm.meta_schedule.builder", "_build_job"),
    "reference": ("minitvm.meta_schedule.runner", "_reference_job"),
    "run": ("minitvm.meta_schedule.runner", "_run_job"),
    "test_crash": ("minitvm.meta_schedule._worker", "_test_job"),
}


class _Worker:
    """One worker process with its pipes and a log file that keeps its stderr."""

    def __init__(self, env: dict[str, str]) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minitvm.meta_schedule._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env={**os.environ, **env},
        )
        self.buffer = b""

    def send(self, job: str, payload: dict) -> None:
        self.proc.stdin.write(json.dumps([job, payload]).encode() + b"\n")
        self.proc.stdin.flush()

    def stderr_tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-800:].strip()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


class WorkerPool:
    """`map(job, payloads, timeout)` runs payloads on up to `num_workers` processes and
    returns, in order, `(True, result)` or `(False, error message)` for each."""

    _shared: ClassVar[dict[tuple, WorkerPool]] = {}

    @classmethod
    def shared(cls, name: str, num_workers: int) -> WorkerPool:
        """A process-wide pool per (name, size): workers start once (an interpreter start
        and minitvm import each) and serve every later builder or runner of that kind."""
        key = (name, num_workers)
        if key not in cls._shared:
            cls._shared[key] = cls(num_workers)
        return cls._shared[key]

    def __init__(self, num_workers: int = 1, env: dict[str, str] | None = None) -> None:
        self.num_workers = max(1, int(num_workers))
        self.env = {"MINITVM_BUILD_JOBS": "1", **(env or {})}
        self._idle: list[_Worker] = []

    def map(self, job: str, payloads: list[dict], timeout: float) -> list[tuple[bool, Any]]:
        results: list[Any] = [None] * len(payloads)
        todo = list(range(len(payloads)))[::-1]
        busy: dict[Any, tuple[_Worker, int, float]] = {}
        sel = selectors.DefaultSelector()
        try:
            while todo or busy:
                self._start(min(len(todo), self.num_workers - len(busy)) - len(self._idle))
                while todo and len(busy) < self.num_workers:
                    i = todo.pop()
                    worker = self._idle.pop()
                    try:
                        worker.send(job, payloads[i])
                    except OSError:
                        results[i] = (
                            False,
                            f"worker died before the job started: {worker.stderr_tail()}",
                        )
                        worker.kill()
                        continue
                    busy[worker.proc.stdout] = (worker, i, time.monotonic() + timeout)
                    sel.register(worker.proc.stdout, selectors.EVENT_READ)
                deadline = min(d for _, _, d in busy.values()) if busy else time.monotonic()
                for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                    worker, i, _ = busy[key.fileobj]
                    line = self._read_line(worker)
                    if line is None:
                        continue
                    sel.unregister(key.fileobj)
                    del busy[key.fileobj]
                    results[i] = self._finish(worker, line)
                now = time.monotonic()
                for stream, (worker, i, dl) in list(busy.items()):
                    if now >= dl:
                        sel.unregister(stream)
                        del busy[stream]
                        worker.kill()
                        results[i] = (
                            False,
                            f"timeout: the job ran past {timeout:g} s and was killed",
                        )
        finally:
            for worker, _, _ in busy.values():
                worker.kill()
            sel.close()
        return results

    def _start(self, count: int) -> None:
        """Start `count` workers and wait until each has imported minitvm (job timeouts
        count from then: a slow interpreter start on a loaded machine is no job's fault)."""
        fresh = [_Worker(self.env) for _ in range(count)]
        for worker in fresh:
            line = b""
            ready = select.select([worker.proc.stdout], [], [], _STARTUP_TIMEOUT)[0]
            if ready:
                line = worker.proc.stdout.readline()
            if line.strip() != b"ready":
                tail = worker.stderr_tail()
                worker.kill()
                raise TuningError(
                    f"a meta_schedule worker process did not start ({line[:100]!r}): {tail}"
                )
            self._idle.append(worker)

    @staticmethod
    def _read_line(worker: _Worker) -> bytes | None:
        """Read what is there; a full line (or b"" at EOF) ends the job, None means wait."""
        chunk = os.read(worker.proc.stdout.fileno(), 1 << 20)
        if not chunk:
            return b""
        worker.buffer += chunk
        if b"\n" not in worker.buffer:
            return None
        line, worker.buffer = worker.buffer.split(b"\n", 1)
        return line

    def _finish(self, worker: _Worker, line: bytes) -> tuple[bool, Any]:
        if not line:  # EOF: the process died (segfault, abort, os._exit)
            code = worker.proc.wait()
            message = f"worker crashed (exit code {code})"
            tail = worker.stderr_tail()
            worker.kill()
            return False, message + (f": {tail}" if tail else "")
        self._idle.append(worker)
        try:
            ok, value = json.loads(line)
        except (ValueError, TypeError):
            return False, f"worker sent a malformed reply: {line[:200]!r}"
        return bool(ok), value

    def close(self) -> None:
        for worker in self._idle:
            worker.kill()
        self._idle.clear()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown
            pass


@atexit.register
def _close_shared() -> None:
    for pool in WorkerPool._shared.values():
        pool.close()


def _test_job(payload: dict) -> Any:
    """For tests: crash, hang, raise or echo as the payload says."""
    action = payload.get("action")
    if action == "crash":
        os.abort()
    if action == "hang":
        time.sleep(3600)
    if action == "raise":
        raise ValueError("asked to raise")
    return payload.get("value")


def _serve() -> None:
    """Worker loop: read a request line, run the job, write `[ok, value]` on the saved stdout."""
    reply = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints (Python or native) go to the log, not into the protocol
    # the imports every job needs, before "ready"

    reply.write(b"ready\n")
    reply.flush()
    for line in sys.stdin.buffer:
        job, payload = json.loads(line)
        module, name = _JOBS[job]
        try:
            value = (True, getattr(importlib.import_module(module), name)(payload))
        except Exception as err:  # noqa: BLE001 - any failure of a job is reported as data
            value = (False, f"{type(err).__name__}: {err}")
        reply.write(json.dumps(value).encode() + b"\n")
        reply.flush()


if __name__ == "__main__":
    _serve()
