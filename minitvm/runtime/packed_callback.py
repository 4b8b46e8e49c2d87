"""The trampoline through which compiled code calls registered Python functions (call_packed).

Codegen turns `tir.call_packed("name", A, B, 1.5)` into a call of the native symbol
`minitvm_call_packed(ptr name, ptr args, i32 count) -> i32` (registered here with
`llvm.add_symbol`, like the thread pool's symbols). `name` is a NUL-terminated constant of the
module; `args` is an array of `count` descriptors laid out as `ARG_STRUCT`:

    i32 kind (KIND_*), i32 ndim, i32 dtype code (DLPack: 0 int, 1 uint, 2 float, 4 bool),
    i32 bits, i64 int value (an array's element offset), double float value,
    ptr data (an array's or a handle's address), ptr shape (ndim i64s)

The trampoline looks the function up in the global registry, wraps each array as an NDArray
over the caller's memory (no copy: the function may write its outputs) and calls it. It never
lets an exception cross into native code: it returns 1 (the generated code turns that into the
FuncInfo error that names the function) and keeps the exception for `take_error()`, which the
runtime can chain as the cause.
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
import numpy as np

from .ndarray import NDArray
from .registry import get_global_func

SYMBOL = "minitvm_call_packed"

KIND_INT, KIND_FLOAT, KIND_ARRAY, KIND_HANDLE = 0, 1, 2, 3


class ArgDescriptor(ctypes.Structure):
    """One argument of a packed call, as the generated code fills it (see module docstring)."""

    _fields_ = [
        ("kind", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("code", ctypes.c_int32),
        ("bits", ctypes.c_int32),
        ("ivalue", ctypes.c_int64),
        ("fvalue", ctypes.c_double),
        ("data", ctypes.c_void_p),
        ("shape", ctypes.c_void_p),
    ]


_DTYPE_CODES = {0: "int", 1: "uint", 2: "float", 4: "bool"}
_CALLBACK_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int32)
_pending = threading.local()
_lock = threading.Lock()
_callback = None  # the ctypes thunk; kept alive for the life of the process


def _dtype(code: int, bits: int) -> np.dtype:
    kind = _DTYPE_CODES[code]
    return np.dtype("bool") if kind == "bool" else np.dtype(f"{kind}{bits}")


def _array(d: ArgDescriptor) -> NDArray:
    """An NDArray viewing the caller's memory (C-contiguous, as every minitvm buffer is)."""
    shape = tuple(ctypes.cast(d.shape, ctypes.POINTER(ctypes.c_int64))[k] for k in range(d.ndim))
    dtype = _dtype(d.code, d.bits)
    count = int(np.prod(shape, dtype=np.int64))
    address = (d.data or 0) + d.ivalue * dtype.itemsize
    if count == 0:
        return NDArray(np.empty(shape, dtype))
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(address)
    return NDArray(np.frombuffer(raw, dtype=dtype).reshape(shape))


def _value(d: ArgDescriptor):
    if d.kind == KIND_ARRAY:
        return _array(d)
    if d.kind == KIND_FLOAT:
        return d.fvalue
    if d.kind == KIND_HANDLE:
        return ctypes.c_void_p(d.data)
    return d.ivalue


def _trampoline(name: bytes, args: int, count: int) -> int:
    try:
        fname = name.decode()
        func = get_global_func(fname, allow_missing=True)
        if func is None:
            raise LookupError(
                f"no global function named '{fname}' is registered; register it with "
                f"@tvm.register_func('{fname}') before calling the module"
            )
        descriptors = (ArgDescriptor * count).from_address(args) if count else ()
        func(*(_value(d) for d in descriptors))
        return 0
    except BaseException as err:  # noqa: BLE001 - nothing may unwind into native code: ctypes
        # would print it and return 0, reporting success for a call that did not finish
        _pending.error = err
        return 1


def take_error() -> BaseException | None:
    """The exception of this thread's last failed packed call (cleared when taken)."""
    err = getattr(_pending, "error", None)
    _pending.error = None
    return err


def ensure_registered() -> None:
    """Make `minitvm_call_packed` resolvable by the JIT (idempotent)."""
    global _callback
    with _lock:
        if _callback is None:
            _callback = _CALLBACK_TYPE(_trampoline)
            llvm.add_symbol(SYMBOL, ctypes.cast(_callback, ctypes.c_void_p).value)


ensure_registered()  # before any module is loaded: objects that call packed functions resolve
