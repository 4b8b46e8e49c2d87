"""The native thread pool, driven by hand-written LLVM IR that follows contracts.md §2."""

import textwrap
import threading
import time

import numpy as np
import pytest
from llvm_kernels import build_result

from minitvm.error import MiniTVMError
from minitvm.runtime import Module, threadpool

# record(ids: int64[m], tids: int64[m], num_tasks: int32, spin: int64):
#   parallel_for over num_tasks tasks; task t sets ids[t] = 1 + t + 1000 * n_tasks_seen,
#   tids[t] = (pthread_self(), cycle counter at start, at end) around `spin` volatile
#   increments (a busy loop).
# nested(...same...): 2 outer tasks, each running `record`'s task over 2 inner tasks.
# width(out: int64[1]): out[0] = minitvm_num_threads()
# rendezvous(out: int64[2]): 2 tasks; task 1 sets out[1] = 1, task 0 waits (up to ~10^10
#   cycles) for it and sets out[0] = 1 if it saw task 1 start, 2 if it gave up. The caller
#   runs task 0, so seeing 1 proves that another thread ran task 1 concurrently.
POOL_IR = r"""
declare i32 @minitvm_parallel_for(ptr, ptr, i32)
declare i32 @minitvm_num_threads()
declare i64 @pthread_self()
declare i64 @llvm.readcyclecounter()

define internal void @task(ptr %closure, i32 %id, i32 %n) {
entry:
  %ids = load ptr, ptr %closure
  %tids.addr = getelementptr ptr, ptr %closure, i64 1
  %tids = load ptr, ptr %tids.addr
  %spin.addr = getelementptr ptr, ptr %closure, i64 2
  %spin = load i64, ptr %spin.addr
  %counter = alloca i64
  store volatile i64 0, ptr %counter
  %start = call i64 @llvm.readcyclecounter()
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %body]
  %more = icmp slt i64 %i, %spin
  br i1 %more, label %body, label %done
body:
  %c = load volatile i64, ptr %counter
  %c1 = add i64 %c, 1
  store volatile i64 %c1, ptr %counter
  %i.next = add i64 %i, 1
  br label %loop
done:
  %id64 = sext i32 %id to i64
  %n64 = sext i32 %n to i64
  %tag0 = mul i64 %n64, 1000
  %tag1 = add i64 %tag0, %id64
  %tag = add i64 %tag1, 1
  %slot = getelementptr i64, ptr %ids, i64 %id64
  store i64 %tag, ptr %slot
  %end = call i64 @llvm.readcyclecounter()
  %self = call i64 @pthread_self()
  %row = mul i64 %id64, 3
  %tslot = getelementptr i64, ptr %tids, i64 %row
  store i64 %self, ptr %tslot
  %sslot = getelementptr i64, ptr %tslot, i64 1
  store i64 %start, ptr %sslot
  %eslot = getelementptr i64, ptr %tslot, i64 2
  store i64 %end, ptr %eslot
  ret void
}

define internal void @outer_task(ptr %closure, i32 %id, i32 %n) {
  %r = call i32 @minitvm_parallel_for(ptr @task, ptr %closure, i32 2)
  ret void
}

define internal ptr @make_closure(ptr %args, ptr %scalars, ptr %closure) {
  %ids = load ptr, ptr %args
  %tids.addr = getelementptr ptr, ptr %args, i64 1
  %tids = load ptr, ptr %tids.addr
  %spin.addr = getelementptr i64, ptr %scalars, i64 2
  %spin = load i64, ptr %spin.addr
  store ptr %ids, ptr %closure
  %c1 = getelementptr ptr, ptr %closure, i64 1
  store ptr %tids, ptr %c1
  %c2 = getelementptr ptr, ptr %closure, i64 2
  store i64 %spin, ptr %c2
  ret ptr %closure
}

define i32 @record(ptr noalias %args, ptr noalias %scalars) {
  %closure = alloca [3 x i64]
  %cl = call ptr @make_closure(ptr %args, ptr %scalars, ptr %closure)
  %nt.addr = getelementptr i64, ptr %scalars, i64 1
  %nt64 = load i64, ptr %nt.addr
  %nt = trunc i64 %nt64 to i32
  %r = call i32 @minitvm_parallel_for(ptr @task, ptr %cl, i32 %nt)
  ret i32 %r
}

define i32 @nested(ptr noalias %args, ptr noalias %scalars) {
  %closure = alloca [3 x i64]
  %cl = call ptr @make_closure(ptr %args, ptr %scalars, ptr %closure)
  %r = call i32 @minitvm_parallel_for(ptr @outer_task, ptr %cl, i32 2)
  ret i32 %r
}

define internal void @meet_task(ptr %out, i32 %id, i32 %n) {
entry:
  %flag = getelementptr i64, ptr %out, i64 1
  %first = icmp eq i32 %id, 0
  br i1 %first, label %wait_start, label %arrive
arrive:
  store atomic i64 1, ptr %flag seq_cst, align 8
  ret void
wait_start:
  %t0 = call i64 @llvm.readcyclecounter()
  br label %wait
wait:
  %seen = load atomic i64, ptr %flag seq_cst, align 8
  %met = icmp eq i64 %seen, 1
  br i1 %met, label %done, label %check
check:
  %t = call i64 @llvm.readcyclecounter()
  %dt = sub i64 %t, %t0
  %late = icmp sgt i64 %dt, 10000000000
  br i1 %late, label %done, label %wait
done:
  %result = select i1 %met, i64 1, i64 2
  store i64 %result, ptr %out
  ret void
}

define i32 @rendezvous(ptr noalias %args, ptr noalias %scalars) {
  %out = load ptr, ptr %args
  %r = call i32 @minitvm_parallel_for(ptr @meet_task, ptr %out, i32 2)
  ret i32 %r
}

define i32 @width(ptr noalias %args, ptr noalias %scalars) {
  %out = load ptr, ptr %args
  %w = call i32 @minitvm_num_threads()
  %w64 = sext i32 %w to i64
  store i64 %w64, ptr %out
  ret i32 0
}
"""


def _info(name):
    return {
        "name": name,
        "params": [
            {"name": "ids", "kind": "buffer", "dtype": "int64", "shape": ["m"]},
            {"name": "tids", "kind": "buffer", "dtype": "int64", "shape": ["m", 3]},
            {"name": "num_tasks", "kind": "scalar", "dtype": "int32"},
            {"name": "spin", "kind": "scalar", "dtype": "int64"},
        ],
        "sym_vars": [{"name": "m", "dtype": "int64", "param": 0, "dim": 0}],
    }


WIDTH_INFO = {
    "name": "width",
    "params": [{"name": "out", "kind": "buffer", "dtype": "int64", "shape": [1]}],
    "sym_vars": [],
}


RENDEZVOUS_INFO = dict(
    WIDTH_INFO, name="rendezvous", params=[dict(WIDTH_INFO["params"][0], shape=[2])]
)


@pytest.fixture(scope="module")
def pool_module():
    infos = [_info("record"), _info("nested"), WIDTH_INFO, RENDEZVOUS_INFO]
    return Module(build_result(POOL_IR, infos))


def _run(mod, num_tasks, spin=0, size=None, func="record"):
    size = size or max(num_tasks, 1)
    ids, info = np.zeros(size, "int64"), np.zeros((size, 3), "int64")
    mod[func](ids, info, num_tasks, spin)
    return ids, info[:, 0], info[:, 1:]


def test_pool_size_follows_the_environment_or_core_count(pool_module):
    import os

    from minitvm import env

    assert threadpool.num_threads() == (env.num_threads() or os.cpu_count())
    out = np.zeros(1, "int64")
    pool_module["width"](out)
    assert out[0] == threadpool.num_threads()


@pytest.mark.parametrize("num_tasks", [1, 2, 3, 7, 64])
def test_every_task_runs_exactly_once(pool_module, num_tasks):
    ids, _, _ = _run(pool_module, num_tasks)
    np.testing.assert_array_equal(ids, 1 + np.arange(num_tasks) + 1000 * num_tasks)


def test_zero_tasks_means_one_per_pool_thread(pool_module):
    n = threadpool.num_threads()
    ids, _, _ = _run(pool_module, 0, size=n)
    np.testing.assert_array_equal(ids, 1 + np.arange(n) + 1000 * n)


def test_caller_runs_task_zero_while_a_worker_runs_task_one(pool_module):
    if threadpool.num_threads() < 2:
        pytest.skip("needs a pool of at least 2 threads")
    main = threading.get_ident()  # CPython's ident is pthread_self()
    for _ in range(3):
        out = np.zeros(2, "int64")
        pool_module["rendezvous"](out)
        assert list(out) == [1, 1]
        _, tids, _ = _run(pool_module, 1)
        assert tids[0] == main


def _time_two_at_once(run) -> float:
    threads = [threading.Thread(target=run) for _ in range(2)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def test_two_busy_tasks_take_about_the_time_of_one(pool_module):
    """Lenient: best of a few tries; skipped when the shared machine has no free core now
    (two Python threads running the one-task kernel side by side also take twice as long)."""
    if threadpool.num_threads() < 2:
        pytest.skip("needs a pool of at least 2 threads")
    spin = 3_000_000
    ratios = []
    for _ in range(5):
        start = time.perf_counter()
        _run(pool_module, 1, spin=spin)
        one = time.perf_counter() - start
        start = time.perf_counter()
        _run(pool_module, 2, spin=spin)
        ratios.append((time.perf_counter() - start) / one)
        if ratios[-1] < 1.6:
            return
    control = _time_two_at_once(lambda: _run(pool_module, 1, spin=spin)) / one
    if control > 1.6:
        pytest.skip(f"no free core right now (two independent runs took {control:.2f}x one)")
    pytest.fail(
        f"2 tasks took {min(ratios):.2f}x the time of one; independent threads: {control:.2f}x"
    )


def test_nested_parallel_for_runs_serially_instead_of_deadlocking(pool_module):
    ids, _, _ = _run(pool_module, 0, size=2, func="nested")
    np.testing.assert_array_equal(ids, [1 + 2000, 2 + 2000])


def test_launches_from_several_python_threads(pool_module):
    failures = []

    def launch():
        for _ in range(40):
            ids, _, _ = _run(pool_module, 5, spin=1000)
            if not np.array_equal(ids, 1 + np.arange(5) + 5000):
                failures.append(ids)

    threads = [threading.Thread(target=launch) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and not failures


def test_set_num_threads_scales_the_pool(pool_module):
    before = threadpool.num_threads()
    try:
        threadpool.set_num_threads(1)
        assert threadpool.num_threads() == 1
        ids, tids, _ = _run(pool_module, 4, spin=10_000)
        assert len(set(tids)) == 1 and tids[0] == threading.get_ident()
        np.testing.assert_array_equal(ids, 1 + np.arange(4) + 4000)
        threadpool.set_num_threads(3)
        ids, _, _ = _run(pool_module, 0, size=3)
        np.testing.assert_array_equal(ids, 1 + np.arange(3) + 3000)
    finally:
        threadpool.set_num_threads(before)
    assert threadpool.num_threads() == before


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_set_num_threads_rejects_bad_sizes(bad):
    with pytest.raises(MiniTVMError, match="expected a positive int"):
        threadpool.set_num_threads(bad)


def test_pool_runs_with_the_gil_released(pool_module):
    """A Python thread keeps running while a long parallel call is in native code."""
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.005)
        start = time.perf_counter()
        _run(pool_module, 2, spin=50_000_000)
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    assert any(start < tick < end for tick in ticks)


def _python(script: str, **env_vars) -> str:
    import os
    import subprocess
    import sys

    env = {**os.environ, **env_vars}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_minitvm_num_threads_sets_the_pool_size():
    script = "from minitvm.runtime import threadpool; print(threadpool.num_threads())"
    assert _python(script, MINITVM_NUM_THREADS="3").strip() == "3"


def test_pool_works_in_a_forked_child(pool_module):
    import os

    _run(pool_module, 2)  # the parent's workers exist
    pid = os.fork()
    if pid == 0:  # child: workers are gone; the pool must start new ones
        code = 1
        try:
            ids, _, _ = _run(pool_module, 3)
            code = 0 if list(ids) == [3001, 3002, 3003] else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5", "4x"])
def test_bad_minitvm_num_threads_is_a_clear_error(value):
    """Not a traceback from int(): a MiniTVMError naming the flag, the value and what to set."""
    import os
    import subprocess
    import sys

    script = textwrap.dedent(
        """
        from minitvm import env
        from minitvm.error import MiniTVMError
        from minitvm.runtime import threadpool
        try:
            threadpool.num_threads()
        except MiniTVMError as err:
            print(err)
        """
    )
    env = {**os.environ, "MINITVM_NUM_THREADS": value}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert out.returncode == 0, out.stderr
    assert f"MINITVM_NUM_THREADS={value!r} is not a positive integer" in out.stdout
    assert "set it to the number of threads for parallel loops" in out.stdout


def test_minitvm_num_threads_ignores_surrounding_spaces(monkeypatch):
    from minitvm import env

    monkeypatch.delenv("TVM_NUM_THREADS", raising=False)
    monkeypatch.setenv("MINITVM_NUM_THREADS", " 3 ")
    assert env.num_threads() == 3
    monkeypatch.setenv("MINITVM_NUM_THREADS", "")
    assert env.num_threads() is None


def test_tvm_num_threads_is_read_when_minitvm_num_threads_is_unset(monkeypatch):
    """TVM's spelling works too; ours wins when both are set; a bad value names its flag."""
    from minitvm import env

    monkeypatch.delenv("MINITVM_NUM_THREADS", raising=False)
    monkeypatch.setenv("TVM_NUM_THREADS", "5")
    assert env.num_threads() == 5
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    assert env.num_threads() == 2
    monkeypatch.delenv("MINITVM_NUM_THREADS")
    monkeypatch.setenv("TVM_NUM_THREADS", "many")
    with pytest.raises(MiniTVMError, match="TVM_NUM_THREADS='many' is not a positive integer"):
        env.num_threads()


def test_runtime_thread_calls_and_tvms_config_threadpool(pool_module):
    """`tvm.runtime.set_num_threads` / `num_threads`, and TVM's global
    `runtime.config_threadpool(affinity, n)` (n = 0 keeps the size) resize the pool that
    parallel loops use."""
    import minitvm as tvm

    before = tvm.runtime.num_threads()
    config = tvm.get_global_func("runtime.config_threadpool")
    try:
        config(0, 1)
        assert tvm.runtime.num_threads() == 1
        ids, tids, _ = _run(pool_module, 4, spin=1000)
        assert len(set(tids)) == 1
        config(1, 0)
        assert tvm.runtime.num_threads() == 1
        tvm.runtime.set_num_threads(2)
        assert threadpool.num_threads() == 2
        with pytest.raises(MiniTVMError, match="nthreads must be an int >= 0"):
            config(0, -1)
    finally:
        tvm.runtime.set_num_threads(before)
