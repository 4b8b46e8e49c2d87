"""tvm.contrib.popen_pool: functions run in separate processes, with TVM's timeout and error
semantics. The functions below are module-level so that the spawned workers can unpickle them."""

import os
import subprocess
import sys
import time

import pytest

from minitvm.contrib import popen_pool
from minitvm.contrib.popen_pool import (
    MapResult,
    PopenPoolExecutor,
    PopenWorker,
    StatusKind,
)
from minitvm.error import ArgumentError

_INITIALIZED = []


def _power(base, exp, mod=None):
    return pow(base, exp, mod)


def _pid_after(seconds):
    time.sleep(seconds)
    return os.getpid()


def _raise_value_error(text):
    raise ValueError(f"bad value {text}")


def _exit_hard(code):
    os._exit(code)


def _remember(value):
    _INITIALIZED.append(value)


def _initialized():
    return list(_INITIALIZED)


def _say(text):
    print(text, flush=True)
    return len(text)


def _start_grandchild():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    return proc.pid


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def worker():
    w = PopenWorker()
    yield w
    w.kill()


def test_worker_runs_function_in_another_process(worker):
    worker.send(_power, (3, 5), {"mod": 7})
    assert worker.recv() == pow(3, 5, 7)
    worker.send(_pid_after, (0,))
    child = worker.recv()
    assert child != os.getpid()
    worker.send(_pid_after, (0,))
    assert worker.recv() == child, "a worker is reused between calls"
    assert worker.is_alive()


def test_worker_exception_is_raised_in_caller_with_remote_traceback(worker):
    worker.send(_raise_value_error, ("x",))
    with pytest.raises(ValueError, match="bad value x") as info:
        worker.recv()
    assert "_raise_value_error" in "".join(getattr(info.value, "__notes__", []))
    worker.send(_power, (2, 3))
    assert worker.recv() == 8, "the worker survives an exception in the function"


def test_worker_timeout_kills_process_and_next_call_restarts(worker):
    worker.send(_pid_after, (0,))
    first = worker.recv()
    start = time.monotonic()
    worker.send(_pid_after, (60,), timeout=0.5)
    with pytest.raises(TimeoutError, match="within its timeout"):
        worker.recv()
    assert time.monotonic() - start < 30
    assert not _alive(first) and not worker.is_alive()
    worker.send(_pid_after, (0,))
    assert worker.recv() not in (first, os.getpid())


def test_worker_crash_is_child_process_error(worker):
    worker.send(_exit_hard, (3,))
    with pytest.raises(ChildProcessError, match="exit code 3"):
        worker.recv()
    worker.send(_power, (2, 4))
    assert worker.recv() == 16


def test_initializer_runs_in_each_new_process_and_maximum_uses_recycles():
    w = PopenWorker(initializer=_remember, initargs=("ready",), maximum_uses=2)
    try:
        pids = []
        for _ in range(3):
            w.send(_pid_after, (0,))
            pids.append(w.recv())
        w.send(_initialized)
        assert w.recv() == ["ready"], "the initializer ran once in the recycled process"
    finally:
        w.kill()
    assert pids[0] == pids[1] != pids[2]
    assert _INITIALIZED == [], "the initializer never runs in the caller"


def test_unpicklable_function_is_refused_clearly(worker):
    with pytest.raises(ArgumentError, match="picklable"):
        worker.send(lambda: 1)
    worker.send(_power, (5, 2))
    assert worker.recv() == 25


def test_send_without_recv_and_recv_without_send_are_refused(worker):
    with pytest.raises(ArgumentError, match="call send"):
        worker.recv()
    worker.send(_power, (1, 1))
    with pytest.raises(ArgumentError, match="call recv"):
        worker.send(_power, (1, 1))
    assert worker.recv() == 1


def test_bad_arguments_are_refused():
    with pytest.raises(ArgumentError, match="initializer"):
        PopenWorker(initializer=3)
    with pytest.raises(ArgumentError, match="maximum_uses"):
        PopenWorker(maximum_uses=0)
    with pytest.raises(ArgumentError, match="stdout"):
        PopenWorker(stdout=sys.stdout)
    with pytest.raises(ArgumentError, match="initializer"):
        PopenPoolExecutor(initializer="x")


def test_stdout_devnull_silences_worker(capfd):
    w = PopenWorker(stdout=subprocess.DEVNULL)
    try:
        w.send(_say, ("hidden-text",))
        assert w.recv() == len("hidden-text")
    finally:
        w.kill()
    assert "hidden-text" not in capfd.readouterr().out


def test_kill_also_kills_processes_the_worker_started(worker):
    worker.send(_start_grandchild)
    grandchild = worker.recv()
    assert _alive(grandchild)
    worker.kill()
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_pool_submit_runs_concurrently_in_distinct_processes():
    pool = PopenPoolExecutor(max_workers=2, timeout=30)
    try:
        futures = [pool.submit(_pid_after, 0.5) for _ in range(2)]
        pids = {f.result() for f in futures}
        assert len(pids) == 2 and os.getpid() not in pids
        assert pool.submit(_power, 2, 10).result() == 1024
        with pytest.raises(ValueError, match="bad value y"):
            pool.submit(_raise_value_error, "y").result()
    finally:
        pool.shutdown()


def test_pool_map_with_error_catching_reports_each_status():
    pool = PopenPoolExecutor(max_workers=2, timeout=1.0)
    try:
        results = list(pool.map_with_error_catching(_pid_after, [0, 60, "x"]))
    finally:
        pool.shutdown()
    assert all(isinstance(r, MapResult) for r in results)
    assert [r.status for r in results] == [
        StatusKind.COMPLETE,
        StatusKind.TIMEOUT,
        StatusKind.EXCEPTION,
    ]
    assert isinstance(results[1].value, TimeoutError)
    assert isinstance(results[2].value, TypeError)


def test_tvm_public_names():
    for name in ("PopenWorker", "PopenPoolExecutor", "StatusKind", "MapResult"):
        assert hasattr(popen_pool, name)
    assert callable(popen_pool.kill_child_processes)
    assert [s.name for s in StatusKind] == ["RUNNING", "COMPLETE", "EXCEPTION", "TIMEOUT"]
