"""Cold-cache timing: evict arrays from the CPU caches before a timed call.

A kernel timed alone, warm and repeated, keeps its weights in the last-level cache; inside a
model every layer's weights were evicted by the other layers since its last call. Tuning a
model's kernels on warm timings picks schedules that lose in the model (measured: a ResNet-18
3x3 conv whose tuned schedule was 1.6% faster warm and 16% slower in the model). TVM's
remedy, which this provides under its names, is `time_evaluator(...,
f_preproc="cache_flush_cpu_non_first_arg")`: before each timed call every argument but the
first (the input the previous layer just wrote) leaves the caches.

On x86-64 the lines are flushed with CLFLUSH (SSE2, every x86-64 CPU), from a function JIT
compiled once per process. Elsewhere the caches are evicted by streaming through a buffer of
twice the last-level cache.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import numpy as np

from ..error import ArgumentError
from ..target.host import host_arch

_LINE = 64

_CLFLUSH_IR = f"""
declare void @llvm.x86.sse2.clflush(ptr)
declare void @llvm.x86.sse2.mfence()

define void @minitvm_clflush(ptr %p, i64 %n) {{
entry:
  %begin = ptrtoint ptr %p to i64
  %first = and i64 %begin, -{_LINE}
  %end = add i64 %begin, %n
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %loop, label %done
loop:
  %a = phi i64 [ %first, %entry ], [ %next, %loop ]
  %q = inttoptr i64 %a to ptr
  call void @llvm.x86.sse2.clflush(ptr %q)
  %next = add i64 %a, {_LINE}
  %more = icmp ult i64 %next, %end
  br i1 %more, label %loop, label %done
done:
  call void @llvm.x86.sse2.mfence()
  ret void
}}
"""

_lock = threading.Lock()
_clflush: Any = None  # (engine, function): both live as long as the process
_evict_buffer: np.ndarray | None = None


def _clflush_fn() -> Any:
    """CLFLUSH over [p, p + n), JIT-compiled once per process (x86-64 only)."""
    global _clflush
    if _clflush is None:
        with _lock:
            if _clflush is None:
                import llvmlite.binding as llvm

                from ..target import Target

                mod = llvm.parse_assembly(_CLFLUSH_IR)
                mod.verify()
                engine = llvm.create_mcjit_compiler(
                    mod, Target("llvm -mcpu=x86-64").new_target_machine()
                )
                engine.finalize_object()
                fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(
                    engine.get_function_address("minitvm_clflush")
                )
                _clflush = (engine, fn)
    return _clflush[1]


def last_level_cache_bytes() -> int:
    """The largest CPU cache's size from sysfs (32 MiB when it cannot be read)."""
    best = 0
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        names = os.listdir(root)
    except OSError:
        names = []
    for name in names:
        try:
            with open(os.path.join(root, name, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or 32 << 20


def evict(nbytes: int | None = None) -> None:
    """Stream through a buffer of `nbytes` (default: twice the last-level cache), which
    pushes what the caches held out of them."""
    global _evict_buffer
    size = int(nbytes) if nbytes else 2 * last_level_cache_bytes()
    if _evict_buffer is None or _evict_buffer.nbytes < size:
        _evict_buffer = np.ones(size // 8, dtype=np.int64)
    _evict_buffer[: size // 8] += 1


def _buffer(arg: Any, where: str) -> tuple[int, int] | None:
    """(address, bytes) of a CPU NDArray or numpy array argument; None for scalars."""
    from .ndarray import NDArray

    if isinstance(arg, NDArray):
        data = arg._data  # the CPU storage itself (a device array has none)
        if data is None:
            raise ArgumentError(
                f"cache flush: {where} is on {arg.device}; only CPU caches can be flushed"
            )
        return arg.data_ptr, data.nbytes
    if isinstance(arg, np.ndarray):
        # the memory the elements occupy (a reversed or strided view starts or ends
        # elsewhere than data + nbytes: flushing past it could touch unmapped memory)
        low, high = _byte_bounds(arg)
        return low, high - low
    return None


def _byte_bounds(arr: np.ndarray) -> tuple[int, int]:
    try:
        from numpy.lib.array_utils import byte_bounds  # numpy >= 2
    except ImportError:  # numpy 1.x
        byte_bounds = np.byte_bounds
    return byte_bounds(arr)


def flush_arrays(args: Any) -> None:
    """Evict the memory of the arrays among `args` (NDArrays or numpy arrays) from the CPU
    caches; other arguments (scalars) are skipped."""
    spans = [s for i, a in enumerate(args) if (s := _buffer(a, f"argument {i}")) is not None]
    if host_arch() != "x86_64":
        evict()
        return
    fn = _clflush_fn()
    for address, nbytes in spans:
        fn(address, nbytes)


def cache_flush_cpu_non_first_arg(*args: Any) -> None:
    """TVM's f_preproc of that name: flush every argument but the first from the caches."""
    flush_arrays(args[1:])


def preproc_for(f_preproc: Any, cache_flush_bytes: int = 0) -> Any:
    """The callable (taking the timed call's arguments) that runs before each timed call, or
    None: `f_preproc` is a registered global function's name (TVM's spelling, e.g.
    "cache_flush_cpu_non_first_arg"), a callable, or ""; `cache_flush_bytes` > 0 also
    streams that many bytes through the caches."""
    from .registry import get_global_func

    steps = []
    if callable(f_preproc):
        steps.append(f_preproc)
    elif f_preproc:
        if not isinstance(f_preproc, str):
            raise ArgumentError(
                f"time_evaluator: f_preproc must be a function name or a callable, got "
                f"{type(f_preproc).__name__}"
            )
        fn = get_global_func(f_preproc, allow_missing=True)
        if fn is None:
            raise ArgumentError(
                f"time_evaluator: f_preproc '{f_preproc}' is not a registered function; use "
                f"'cache_flush_cpu_non_first_arg' or register one with tvm.register_func"
            )
        steps.append(fn)
    if cache_flush_bytes:
        if int(cache_flush_bytes) < 0:
            raise ArgumentError(
                f"time_evaluator: cache_flush_bytes must be >= 0, got {cache_flush_bytes}"
            )
        steps.append(lambda *_: evict(int(cache_flush_bytes)))
    if not steps:
        return None

    def preproc(*args: Any) -> None:
        for step in steps:
            step(*args)

    return preproc
