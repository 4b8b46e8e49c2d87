"""The parallel-loop runtime of docs/contracts.md §2, written in LLVM IR and JIT-compiled once.

No C compiler is involved: the pool is LLVM IR text that calls libc (`pthread_create`,
`syscall(SYS_futex)`, `sched_yield`). Protocol, per launch of `minitvm_parallel_for`:

* the launcher takes the `busy` flag (a nested or concurrent launch that cannot take it runs
  its tasks serially in the calling thread), publishes task/closure/num_tasks, sets
  `next = 1`, opens the launch (`open = g`, the new generation), then stores `generation = g`
  (the futex word) and wakes sleeping workers;
* a worker that sees a new generation `g` (short `pause` spin, then futex sleep) increments
  `inside`, and only if `open == g` still, grabs task ids from `next` (when its index is below
  the launch's participant count); then it decrements `inside`;
* the caller runs task 0, grabs ids until none is left, closes the launch (`open = g + 1`,
  never equal to `g`), waits until `inside == 0` and releases `busy`. So the caller never
  waits for a sleeping worker, and a late worker never touches a closed launch
  (seq_cst on `inside`/`open` on both sides).
"""

from __future__ import annotations

import ctypes
import os
import threading

import llvmlite.binding as llvm

from .. import env
from ..error import MiniTVMError
from ..target import Target

_SPIN = 4000  # `pause` iterations (~0.2 ms) before a worker sleeps or the caller yields
_SYS_FUTEX = 202  # x86-64 Linux
_FUTEX_WAIT_PRIVATE = 128
_FUTEX_WAKE_PRIVATE = 129

_POOL_IR = f"""
@task = internal global ptr null
@closure = internal global ptr null
@num_tasks = internal global i32 0
@participants = internal global i32 0
@next = internal global i32 0
@open = internal global i32 -1
@inside = internal global i32 0
@generation = internal global i32 0
@sleepers = internal global i32 0
@busy = internal global i32 0
@active = internal global i32 1
@started = internal global i32 0

declare i64 @syscall(i64, ...)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @sched_yield()
declare void @llvm.x86.sse2.pause()

; grab task ids from @next until none is left
define internal void @run_tasks(ptr %task, ptr %closure, i32 %n) {{
entry:
  br label %loop
loop:
  %t = atomicrmw add ptr @next, i32 1 seq_cst
  %more = icmp slt i32 %t, %n
  br i1 %more, label %run, label %done
run:
  call void %task(ptr %closure, i32 %t, i32 %n)
  br label %loop
done:
  ret void
}}

define internal void @run_serial(ptr %task, ptr %closure, i32 %n) {{
entry:
  br label %loop
loop:
  %t = phi i32 [0, %entry], [%t1, %run]
  %more = icmp slt i32 %t, %n
  br i1 %more, label %run, label %done
run:
  call void %task(ptr %closure, i32 %t, i32 %n)
  %t1 = add i32 %t, 1
  br label %loop
done:
  ret void
}}

; spin on @inside, then yield the core, until no worker is inside the launch
define internal void @wait_inside() {{
entry:
  br label %loop
loop:
  %spins = phi i32 [0, %entry], [%spins1, %again]
  %p = load atomic i32, ptr @inside seq_cst, align 4
  %zero = icmp eq i32 %p, 0
  br i1 %zero, label %done, label %again_check
again_check:
  %hot = icmp slt i32 %spins, {_SPIN}
  br i1 %hot, label %pause, label %yield
pause:
  call void @llvm.x86.sse2.pause()
  br label %again
yield:
  %r = call i32 @sched_yield()
  br label %again
again:
  %spins1 = add i32 %spins, 1
  br label %loop
done:
  ret void
}}

; worker thread: arg = index (1-based) | (generation at creation << 32)
define internal ptr @worker(ptr %arg) {{
entry:
  %packed = ptrtoint ptr %arg to i64
  %index = trunc i64 %packed to i32
  %gen_hi = lshr i64 %packed, 32
  %gen0 = trunc i64 %gen_hi to i32
  br label %wait
wait:
  %seen = phi i32 [%gen0, %entry], [%seen, %paused], [%seen, %slept], [%g, %left]
  %spins = phi i32 [0, %entry], [%spins1, %paused], [0, %slept], [0, %left]
  %g = load atomic i32, ptr @generation acquire, align 4
  %new = icmp ne i32 %g, %seen
  br i1 %new, label %enter, label %idle
idle:
  %hot = icmp slt i32 %spins, {_SPIN}
  br i1 %hot, label %paused, label %sleep
paused:
  call void @llvm.x86.sse2.pause()
  %spins1 = add i32 %spins, 1
  br label %wait
sleep:
  %s0 = atomicrmw add ptr @sleepers, i32 1 seq_cst
  %g2 = load atomic i32, ptr @generation seq_cst, align 4
  %still = icmp eq i32 %g2, %seen
  br i1 %still, label %futex_wait, label %slept
futex_wait:
  %w = call i64 (i64, ...) @syscall(i64 {_SYS_FUTEX}, ptr @generation, i32 {_FUTEX_WAIT_PRIVATE}, i32 %seen, ptr null)
  br label %slept
slept:
  %s1 = atomicrmw sub ptr @sleepers, i32 1 seq_cst
  br label %wait
enter:
  %in0 = atomicrmw add ptr @inside, i32 1 seq_cst
  %o = load atomic i32, ptr @open seq_cst, align 4
  %is_open = icmp eq i32 %o, %g
  br i1 %is_open, label %join, label %leave
join:
  %np = load i32, ptr @participants, align 4
  %takes_part = icmp slt i32 %index, %np
  br i1 %takes_part, label %run, label %leave
run:
  %task = load ptr, ptr @task, align 8
  %closure = load ptr, ptr @closure, align 8
  %n = load i32, ptr @num_tasks, align 4
  call void @run_tasks(ptr %task, ptr %closure, i32 %n)
  br label %leave
leave:
  %in1 = atomicrmw sub ptr @inside, i32 1 seq_cst
  br label %left
left:
  br label %wait
}}

define i32 @minitvm_num_threads() {{
  %a = load atomic i32, ptr @active monotonic, align 4
  ret i32 %a
}}

define i32 @minitvm_parallel_for(ptr %task, ptr %closure, i32 %num_tasks) {{
entry:
  %active = load atomic i32, ptr @active monotonic, align 4
  %default = icmp sle i32 %num_tasks, 0
  %n = select i1 %default, i32 %active, i32 %num_tasks
  %fewer = icmp slt i32 %n, %active
  %np = select i1 %fewer, i32 %n, i32 %active
  %parallel = icmp sgt i32 %np, 1
  br i1 %parallel, label %lock, label %serial
lock:
  %cas = cmpxchg ptr @busy, i32 0, i32 1 acquire monotonic
  %got = extractvalue {{ i32, i1 }} %cas, 1
  br i1 %got, label %launch, label %serial
serial:
  call void @run_serial(ptr %task, ptr %closure, i32 %n)
  ret i32 0
launch:
  %g0 = load atomic i32, ptr @generation monotonic, align 4
  %g = add i32 %g0, 1
  store ptr %task, ptr @task, align 8
  store ptr %closure, ptr @closure, align 8
  store i32 %n, ptr @num_tasks, align 4
  store i32 %np, ptr @participants, align 4
  store atomic i32 1, ptr @next seq_cst, align 4
  store atomic i32 %g, ptr @open seq_cst, align 4
  store atomic i32 %g, ptr @generation seq_cst, align 4
  %sl = load atomic i32, ptr @sleepers seq_cst, align 4
  %any_asleep = icmp sgt i32 %sl, 0
  br i1 %any_asleep, label %wake, label %run
wake:
  %woken = call i64 (i64, ...) @syscall(i64 {_SYS_FUTEX}, ptr @generation, i32 {_FUTEX_WAKE_PRIVATE}, i32 2147483647)
  br label %run
run:
  call void %task(ptr %closure, i32 0, i32 %n)
  call void @run_tasks(ptr %task, ptr %closure, i32 %n)
  %closed = add i32 %g, 1
  store atomic i32 %closed, ptr @open seq_cst, align 4
  call void @wait_inside()
  store atomic i32 0, ptr @busy release, align 4
  ret i32 0
}}

; take @busy (waiting for a running launch), start workers up to %size - 1, set the pool size
define i32 @minitvm_pool_resize(i32 %size) {{
entry:
  %tid = alloca i64, align 8
  br label %lock
lock:
  %cas = cmpxchg ptr @busy, i32 0, i32 1 acquire monotonic
  %got = extractvalue {{ i32, i1 }} %cas, 1
  br i1 %got, label %locked, label %yield
yield:
  %y = call i32 @sched_yield()
  br label %lock
locked:
  %gen = load atomic i32, ptr @generation monotonic, align 4
  %gen64 = zext i32 %gen to i64
  %gen_hi = shl i64 %gen64, 32
  %want = sub i32 %size, 1
  br label %spawn
spawn:
  %have = load i32, ptr @started, align 4
  %need = icmp slt i32 %have, %want
  br i1 %need, label %create, label %done
create:
  %index = add i32 %have, 1
  %index64 = zext i32 %index to i64
  %packed = or i64 %gen_hi, %index64
  %arg = inttoptr i64 %packed to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr %arg)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %created, label %failed
created:
  %t = load i64, ptr %tid, align 8
  %d = call i32 @pthread_detach(i64 %t)
  store atomic i32 %index, ptr @started seq_cst, align 4
  br label %spawn
failed:
  store atomic i32 0, ptr @busy release, align 4
  ret i32 %rc
done:
  store atomic i32 %size, ptr @active seq_cst, align 4
  store atomic i32 0, ptr @busy release, align 4
  ret i32 0
}}

; in a child after fork() no worker exists: forget them (called before any launch there)
define void @minitvm_pool_after_fork() {{
  store atomic i32 0, ptr @started seq_cst, align 4
  store atomic i32 0, ptr @sleepers seq_cst, align 4
  store atomic i32 0, ptr @inside seq_cst, align 4
  store atomic i32 -1, ptr @open seq_cst, align 4
  store atomic i32 0, ptr @busy seq_cst, align 4
  ret void
}}
"""


class _Pool:
    """The JIT-compiled pool; its engine and functions live as long as the process."""

    def __init__(self) -> None:
        tm = Target("llvm").new_target_machine()
        mod = llvm.parse_assembly(_POOL_IR)
        mod.verify()
        self.engine = llvm.create_mcjit_compiler(mod, tm)
        self.engine.finalize_object()
        address = self.engine.get_function_address
        self.parallel_for_addr = address("minitvm_parallel_for")
        self.num_threads_addr = address("minitvm_num_threads")
        self.resize = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(
            address("minitvm_pool_resize")
        )
        self.num_threads = ctypes.CFUNCTYPE(ctypes.c_int32)(self.num_threads_addr)
        self.after_fork = ctypes.CFUNCTYPE(None)(address("minitvm_pool_after_fork"))
        self.parallel_for = ctypes.CFUNCTYPE(
            ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32
        )(self.parallel_for_addr)


_lock = threading.Lock()
_pool: _Pool | None = None


def _default_size() -> int:
    return env.num_threads() or os.cpu_count() or 1  # env rejects what is not a positive int


def ensure_pool() -> _Pool:
    """JIT the pool once per process and register its symbols for modules loaded later."""
    global _pool
    if _pool is not None:
        return _pool
    with _lock:
        if _pool is None:
            pool = _Pool()
            llvm.add_symbol("minitvm_parallel_for", pool.parallel_for_addr)
            llvm.add_symbol("minitvm_num_threads", pool.num_threads_addr)
            _resize(pool, _default_size())
            _pool = pool
            os.register_at_fork(after_in_child=_after_fork_in_child)
    return _pool


def _resize(pool: _Pool, n: int) -> None:
    rc = pool.resize(n)
    if rc != 0:
        raise MiniTVMError(
            f"thread pool: pthread_create failed with error {rc} growing to {n} threads"
        )


def _after_fork_in_child() -> None:
    pool = _pool
    if pool is not None:
        pool.after_fork()
        _resize(pool, pool.num_threads())


def set_num_threads(n: int) -> None:
    """Use `n` threads (the caller included) for parallel loops from now on."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise MiniTVMError(f"set_num_threads: expected a positive int, got {n!r}")
    pool = ensure_pool()
    with _lock:
        _resize(pool, n)


def num_threads() -> int:
    """Threads used by parallel loops (MINITVM_NUM_THREADS, else the number of cores)."""
    return ensure_pool().num_threads()


def _config_threadpool(affinity_mode: int = 0, nthreads: int = 0) -> None:
    """TVM's global `runtime.config_threadpool(affinity_mode, nthreads)`: `nthreads` > 0 sets
    the pool size (0 keeps it); affinity is the OS scheduler's business here, so the mode is
    accepted and ignored."""
    if not isinstance(nthreads, int) or isinstance(nthreads, bool) or nthreads < 0:
        raise MiniTVMError(
            f"runtime.config_threadpool: nthreads must be an int >= 0 (0 keeps the current "
            f"size), got {nthreads!r}"
        )
    if nthreads:
        set_num_threads(nthreads)
