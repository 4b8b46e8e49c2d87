"""TVM's `tvm.contrib.popen_pool`: run Python functions in fresh worker processes, with a timeout.

`PopenWorker` is one worker process; `PopenPoolExecutor` is a pool of them behind futures.
A function, its arguments and its result cross a private pipe between this process and the
workers it spawned, pickled by `multiprocessing`: so they must be picklable (a module-level
function, not a lambda or a closure). Nothing read from a file or a socket is unpickled here.
A call past its timeout kills its worker (the next call starts a fresh one); an exception in
the worker is raised again in the caller, with the worker's traceback as a note.

    >>> pool = PopenPoolExecutor(max_workers=2, timeout=10)
    >>> pool.submit(pow, 2, 10).result()
    1024
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import subprocess
import threading
import traceback
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator
from enum import IntEnum
from typing import Any

from ..error import ArgumentError, TVMError

__all__ = [
    "MapResult",
    "PopenPoolExecutor",
    "PopenWorker",
    "StatusKind",
    "WorkerCrashError",
    "WorkerTimeoutError",
    "kill_child_processes",
]

# spawn, not fork: a fork would copy this process's threads' locks (the kernel thread pool,
# LLVM) in whatever state they are; a spawned worker starts from a clean interpreter.
_CONTEXT = multiprocessing.get_context("spawn")
# A call's timeout counts from when the worker starts running the function, as in TVM; starting
# the process and unpickling the function (importing its module) have this separate limit.
_STARTUP_TIMEOUT = 300.0


class StatusKind(IntEnum):
    """State of a call, as in TVM's `popen_pool.StatusKind`."""

    RUNNING = 0
    COMPLETE = 1
    EXCEPTION = 2
    TIMEOUT = 3


class MapResult(namedtuple("MapResult", ["status", "value"])):
    """One result of `map_with_error_catching`: a `StatusKind` and the value or the exception."""

    __slots__ = ()


class WorkerTimeoutError(TVMError, TimeoutError):
    """A call ran past its timeout; its worker was killed (`except TimeoutError` catches it)."""


class WorkerCrashError(TVMError, ChildProcessError):
    """The worker process died before answering (killed, crashed, or exited)."""


def kill_child_processes(pid: int) -> None:
    """Kill every descendant process of `pid` (not `pid` itself); gone processes are skipped."""
    for child in _descendants(pid):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _descendants(pid: int) -> list[int]:
    """Descendants of `pid` from /proc's parent links (Linux), children before grandchildren."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: fields resume after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found, frontier = [], [pid]
    while frontier:
        children = parents.get(frontier.pop(0), [])
        found.extend(children)
        frontier.extend(children)
    return found


def _check_stream(name: str, stream: Any) -> Any:
    """A worker's stdout/stderr: None inherits ours, `subprocess.DEVNULL` silences it."""
    if stream is None or stream == subprocess.DEVNULL:
        return stream
    raise ArgumentError(
        f"PopenWorker: {name}={stream!r} is not supported; pass None (inherit this process's "
        f"{name}) or subprocess.DEVNULL (discard it)."
    )


def _serve(conn: Any, stdout: Any, stderr: Any) -> None:
    """The worker's loop: receive (fn, args, kwargs), run it, send (status, value, traceback)."""
    for fd, stream in ((1, stdout), (2, stderr)):
        if stream == subprocess.DEVNULL:
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    while True:
        try:
            fn, args, kwargs = conn.recv()
        except EOFError:
            return  # the parent closed its end: nothing more to do
        except Exception as err:  # noqa: BLE001 - the job could not be unpickled here; say so
            conn.send((StatusKind.EXCEPTION, None, _format(err, "receiving the function")))
            continue
        conn.send((StatusKind.RUNNING, None, ""))
        try:
            reply = (StatusKind.COMPLETE, fn(*args, **kwargs), "")
        except BaseException as err:  # noqa: BLE001 - any failure is the caller's to see
            reply = (StatusKind.EXCEPTION, err, "".join(traceback.format_exception(err)))
        try:
            conn.send(reply)
        except Exception as err:  # noqa: BLE001 - a result or exception that cannot be pickled
            conn.send((StatusKind.EXCEPTION, None, _format(err, "sending the result back")))


def _format(err: BaseException, doing: str) -> str:
    return f"the worker failed {doing}: {type(err).__name__}: {err}"


class PopenWorker:
    """One worker process: `send(fn, args, kwargs, timeout)` then `recv()` for the result.

    The process starts on the first `send` and is reused until a call times out, the worker
    dies, or it has served `maximum_uses` calls (then it is replaced; the initializer runs
    again in each new process and is not counted as a use).
    """

    def __init__(
        self,
        initializer: Callable | None = None,
        initargs: tuple = (),
        maximum_uses: int | None = None,
        stdout: Any = None,
        stderr: Any = None,
    ) -> None:
        if initializer is not None and not callable(initializer):
            raise ArgumentError(f"PopenWorker: initializer {initializer!r} is not callable.")
        if maximum_uses is not None and (not isinstance(maximum_uses, int) or maximum_uses < 1):
            raise ArgumentError(
                f"PopenWorker: maximum_uses={maximum_uses!r}; pass a positive int or None."
            )
        self._initializer = initializer
        self._initargs = tuple(initargs)
        self._maximum_uses = maximum_uses
        self._stdout = _check_stream("stdout", stdout)
        self._stderr = _check_stream("stderr", stderr)
        self._proc = None
        self._conn = None
        self._remaining_uses = None
        self._timeout: float | None = None
        self._pending = False

    def __del__(self) -> None:
        try:
            self.kill()
        except (ImportError, AttributeError, TypeError):
            pass  # interpreter shutdown: modules may already be torn down

    def kill(self) -> None:
        """Kill the worker process (and anything it started); the next `send` starts a new one."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        self._pending = False
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.pid is not None and proc.is_alive():
                kill_child_processes(proc.pid)
                proc.kill()
            proc.join()
            proc.close()

    def join(self, timeout: float | None = None) -> None:
        """Wait up to `timeout` seconds (forever when None) for the worker process to end."""
        if self._proc is not None:
            self._proc.join(timeout)

    def is_alive(self) -> bool:
        """Whether a worker process is running."""
        return self._proc is not None and self._proc.is_alive()

    def _start(self) -> None:
        parent_conn, child_conn = _CONTEXT.Pipe()
        proc = _CONTEXT.Process(
            target=_serve, args=(child_conn, self._stdout, self._stderr), daemon=True
        )
        proc.start()
        child_conn.close()
        self._proc, self._conn = proc, parent_conn

    def send(
        self,
        fn: Callable,
        args: Iterable = (),
        kwargs: dict | None = None,
        timeout: float | None = None,
    ) -> None:
        """Start `fn(*args, **kwargs)` in the worker; `recv()` returns its result.

        `timeout` (seconds, None for none) counts from when the worker starts `fn`. Call `recv`
        before the next `send`.
        """
        if self._pending:
            raise ArgumentError(
                "PopenWorker.send: the previous call's result was not received; call recv() "
                "before sending another function."
            )
        if timeout is not None and timeout <= 0:
            raise ArgumentError(f"PopenWorker.send: timeout={timeout!r}; pass seconds > 0 or None.")
        if self._proc is not None and self._maximum_uses and self._remaining_uses == 0:
            self.kill()
        if self._proc is None or not self._proc.is_alive():
            self.kill()
            self._start()
            if self._initializer is not None:
                self._post(self._initializer, self._initargs, {}, None)
                self.recv()
            self._remaining_uses = self._maximum_uses
        self._post(fn, tuple(args), dict(kwargs or {}), timeout)
        if self._remaining_uses:
            self._remaining_uses -= 1

    def _post(self, fn: Callable, args: tuple, kwargs: dict, timeout: float | None) -> None:
        try:
            self._conn.send((fn, args, kwargs))
        except Exception as err:  # pickling runs user objects' __reduce__
            raise ArgumentError(
                f"PopenWorker.send: cannot send {getattr(fn, '__qualname__', fn)!r} and its "
                f"arguments to the worker ({type(err).__name__}: {err}); the function and "
                "arguments must be picklable: define the function at module top level (not a "
                "lambda or a nested function)."
            ) from err
        self._timeout = timeout
        self._pending = True

    def recv(self) -> Any:
        """The result of the last `send`; its exception re-raised here.

        Raises `WorkerTimeoutError` (a `TimeoutError`) past the timeout and
        `WorkerCrashError` (a `ChildProcessError`) when the worker died; both leave the
        worker killed, to be restarted by the next `send`.
        """
        if not self._pending:
            raise ArgumentError("PopenWorker.recv: nothing was sent; call send() first.")
        self._pending = False
        status, value, text = self._read(_STARTUP_TIMEOUT, "start the function")
        if status == StatusKind.RUNNING:
            status, value, text = self._read(self._timeout, "finish within its timeout")
        if status == StatusKind.COMPLETE:
            return value
        if value is None:
            raise TVMError(f"PopenWorker: {text}")
        if text and isinstance(value, BaseException):
            value.add_note(f"raised in the PopenWorker process:\n{text.rstrip()}")
        raise value

    def _read(self, timeout: float | None, what: str) -> tuple:
        if not self._conn.poll(timeout):
            self.kill()
            raise WorkerTimeoutError(
                f"PopenWorker: the call did not {what} ({timeout} s); the worker was killed."
            )
        try:
            return self._conn.recv()
        except (EOFError, OSError) as err:
            code = None
            if self._proc is not None:
                self._proc.join(5)  # the pipe closes a moment before the exit status is ready
                code = self._proc.exitcode
            self.kill()
            raise WorkerCrashError(
                f"PopenWorker: the worker process terminated (exit code {code}) before returning "
                "a result."
            ) from err
        except Exception as err:  # the worker's reply could not be unpickled here
            raise TVMError(
                f"PopenWorker: the worker's result could not be read back ({type(err).__name__}: "
                f"{err})."
            ) from err


class PopenPoolExecutor:
    """A pool of `PopenWorker`s: `submit` returns a `concurrent.futures.Future`.

    `max_workers` defaults to `os.cpu_count()`; `timeout` applies to every call; a worker
    serves at most `maximum_process_uses` calls before it is replaced (None: no limit).
    """

    def __init__(
        self,
        max_workers: int | None = None,
        timeout: float | None = None,
        initializer: Callable | None = None,
        initargs: tuple = (),
        maximum_process_uses: int | None = None,
        stdout: Any = None,
        stderr: Any = None,
    ) -> None:
        if initializer is not None and not callable(initializer):
            raise ArgumentError(f"PopenPoolExecutor: initializer {initializer!r} is not callable.")
        self._worker_args = (
            initializer,
            tuple(initargs),
            maximum_process_uses,
            _check_stream("stdout", stdout),
            _check_stream("stderr", stderr),
        )
        if max_workers is None:
            max_workers = os.cpu_count() or 1
        # each thread of this pool drives one worker process, so at most max_workers run at once
        self._threadpool = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers)
        self._timeout = timeout
        self._workers: dict[int, PopenWorker] = {}
        self._lock = threading.Lock()

    def __del__(self) -> None:
        try:
            self.shutdown()
        except (ImportError, AttributeError, TypeError):
            pass  # interpreter shutdown or a half-built pool

    def shutdown(self, wait: bool = True) -> None:
        """Stop accepting work and kill the worker processes."""
        self._threadpool.shutdown(wait=wait)
        with self._lock:
            workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            worker.kill()

    def _worker_run(self, fn: Callable, args: tuple, kwargs: dict | None) -> Any:
        with self._lock:
            worker = self._workers.get(threading.get_ident())
            if worker is None:
                worker = PopenWorker(*self._worker_args)
                self._workers[threading.get_ident()] = worker
        worker.send(fn, args, kwargs, self._timeout)
        return worker.recv()

    def _worker_run_with_error_catching(
        self, fn: Callable, args: tuple, kwargs: dict | None
    ) -> MapResult:
        try:
            return MapResult(StatusKind.COMPLETE, self._worker_run(fn, args, kwargs))
        except TimeoutError as err:
            return MapResult(StatusKind.TIMEOUT, err)
        except Exception as err:  # noqa: BLE001 - returned to the caller, as TVM's API does
            return MapResult(StatusKind.EXCEPTION, err)

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """Run `fn(*args, **kwargs)` in a worker; the future holds its result or exception."""
        return self._threadpool.submit(self._worker_run, fn, args, kwargs)

    def map_with_error_catching(self, fn: Callable, iterator: Iterable) -> Iterator[MapResult]:
        """`fn(x)` for each x, in order, as `MapResult`s: failures are returned, not raised."""
        return self._threadpool.map(
            lambda x: self._worker_run_with_error_catching(fn, (x,), None), iterator
        )
