"""CUDA driver API through ctypes on libcuda (loaded on first use): memory, copies, PTX, launches.

No toolkit is needed: the driver JIT-compiles the PTX that codegen/nvptx.py emits. Every
failure is a DeviceError naming the driver call and its error string.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..error import DeviceError
from .device import device_state, missing_device

_LIBS = ("libcuda.so.1", "libcuda.so")

# CUdevice_attribute codes
_ATTRIBUTES = {
    "max_threads_per_block": 1,
    "max_shared_memory_per_block": 8,
    "warp_size": 10,
    "max_block_dim_x": 2,
    "max_block_dim_y": 3,
    "max_block_dim_z": 4,
    "multiprocessor_count": 16,
    "compute_major": 75,
    "compute_minor": 76,
}


@lru_cache(maxsize=1)
def _driver():
    """libcuda, initialised; a DeviceError when there is none."""
    for name in _LIBS:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        raise DeviceError(
            "CUDA is not available: libcuda (the NVIDIA driver) is not installed on this "
            "machine; run on a machine with an NVIDIA GPU and driver, or use target 'opencl'/'llvm'"
        )
    _check(lib, lib.cuInit(0), "cuInit")
    return lib


def _check(lib, rc: int, what: str) -> None:
    if rc != 0:
        text = ctypes.c_char_p()
        lib.cuGetErrorString(rc, ctypes.byref(text))
        message = text.value.decode() if text.value else f"error {rc}"
        raise DeviceError(f"CUDA driver call {what} failed: {message}")


def _call(what: str, *args) -> None:
    lib = _driver()
    _check(lib, getattr(lib, what)(*args), what)


def device_count() -> int:
    n = ctypes.c_int()
    _call("cuDeviceGetCount", ctypes.byref(n))
    return n.value


def unavailable_reason(device_id: int) -> str | None:
    """Why cuda(device_id) cannot be used here; None when it can."""
    return missing_device("cuda", "CUDA", device_id, device_count)


@dataclass
class _Context:
    device: int  # CUdevice
    context: ctypes.c_void_p  # the primary context


_contexts: dict[int, _Context] = {}


def context(device_id: int) -> _Context:
    """The primary context of cuda(device_id), made current in this thread."""
    ctx = device_state(_contexts, device_id, unavailable_reason, _retain_context)
    _call("cuCtxSetCurrent", ctx.context)
    return ctx


def _retain_context(device_id: int) -> _Context:
    dev = ctypes.c_int()
    _call("cuDeviceGet", ctypes.byref(dev), device_id)
    handle = ctypes.c_void_p()
    _call("cuDevicePrimaryCtxRetain", ctypes.byref(handle), dev)
    return _Context(dev.value, handle)


@lru_cache(maxsize=128)  # device properties do not change while the process runs
def attribute(device_id: int, name: str):
    """max_threads_per_block, max_shared_memory_per_block, warp_size, device_name,
    compute_version ("9.0"), has_fp64 (always), has_fp16."""
    ctx = context(device_id)
    if name == "device_name":
        buf = ctypes.create_string_buffer(256)
        _call("cuDeviceGetName", buf, 256, ctx.device)
        return buf.value.decode()
    if name == "compute_version":
        return f"{attribute(device_id, 'compute_major')}.{attribute(device_id, 'compute_minor')}"
    if name in ("has_fp64", "has_fp16"):
        return True
    if name == "max_block_dims":
        return tuple(attribute(device_id, f"max_block_dim_{a}") for a in "xyz")
    value = ctypes.c_int()
    _call("cuDeviceGetAttribute", ctypes.byref(value), _ATTRIBUTES[name], ctx.device)
    return value.value


# --- memory -------------------------------------------------------------------------------
class DevicePointer:
    """Device memory owned by this object (freed with it)."""

    __slots__ = ("device_id", "nbytes", "ptr")

    def __init__(self, device_id: int, nbytes: int) -> None:
        context(device_id)
        ptr = ctypes.c_uint64()
        _call("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1)))
        self.device_id, self.nbytes, self.ptr = device_id, nbytes, ptr.value

    def __del__(self) -> None:
        try:
            context(self.device_id)
            _driver().cuMemFree_v2(ctypes.c_uint64(self.ptr))
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: the driver frees it anyway
            pass


class BorrowedPointer:
    """Device memory another library owns (a DLPack import): `release` is called once, when
    this object dies, to give it back."""

    __slots__ = ("device_id", "nbytes", "ptr", "release")

    def __init__(self, device_id: int, nbytes: int, ptr: int, release) -> None:
        self.device_id, self.nbytes, self.ptr, self.release = device_id, nbytes, ptr, release

    def __del__(self) -> None:
        release, self.release = self.release, None
        if release is not None:
            release()


def alloc(device_id: int, nbytes: int) -> DevicePointer:
    return DevicePointer(device_id, nbytes)


def copy_from_host(device_id: int, buf: DevicePointer, host: np.ndarray) -> None:
    if host.nbytes:
        context(device_id)
        _call("cuMemcpyHtoD_v2", ctypes.c_uint64(buf.ptr), ctypes.c_void_p(host.ctypes.data),
              ctypes.c_size_t(host.nbytes))  # fmt: skip


def copy_to_host(device_id: int, host: np.ndarray, buf: DevicePointer) -> None:
    if host.nbytes:
        context(device_id)
        _call("cuMemcpyDtoH_v2", ctypes.c_void_p(host.ctypes.data), ctypes.c_uint64(buf.ptr),
              ctypes.c_size_t(host.nbytes))  # fmt: skip


def copy_device(device_id: int, dst: DevicePointer, src: DevicePointer, nbytes: int) -> None:
    if nbytes:
        context(device_id)
        _call("cuMemcpyDtoD_v2", ctypes.c_uint64(dst.ptr), ctypes.c_uint64(src.ptr),
              ctypes.c_size_t(nbytes))  # fmt: skip


def sync(device_id: int) -> None:
    context(device_id)
    _call("cuCtxSynchronize")


# --- modules -------------------------------------------------------------------------------
class _Module:
    __slots__ = ("device_id", "handle")

    def __init__(self, device_id: int, handle: ctypes.c_void_p) -> None:
        self.device_id, self.handle = device_id, handle

    def __del__(self) -> None:
        try:
            context(self.device_id)
            _driver().cuModuleUnload(self.handle)
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown
            pass


def load_program(device_id: int, ptx: str, names: list[str]) -> dict:
    """JIT-load PTX text; return its kernel functions by name (each keeps its module alive)."""
    context(device_id)
    lib = _driver()
    handle = ctypes.c_void_p()
    log = ctypes.create_string_buffer(8192)
    # CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
    options = (ctypes.c_int * 2)(5, 6)
    values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, 8192)
    rc = lib.cuModuleLoadDataEx(
        ctypes.byref(handle), ctypes.c_char_p(ptx.encode() + b"\0"), 2, options, values
    )
    if rc != 0:
        detail = log.value.decode(errors="replace").strip()
        try:
            _check(lib, rc, "cuModuleLoadDataEx")
        except DeviceError as err:
            raise DeviceError(f"{err}; the PTX JIT said: {detail or '(nothing)'}") from None
    module = _Module(device_id, handle)
    kernels = {}
    for name in names:
        fn = ctypes.c_void_p()
        _call("cuModuleGetFunction", ctypes.byref(fn), handle, name.encode())
        kernels[name] = (fn, module, name)
    return kernels


def launch(device_id: int, kernel, grid: tuple, block: tuple, args: list) -> None:
    """cuLaunchKernel with each argument a ctypes value (device pointers as c_uint64)."""
    context(device_id)
    fn, _, name = kernel
    grid = (*grid, 1, 1, 1)[:3]
    block = (*block, 1, 1, 1)[:3]
    params = (ctypes.c_void_p * max(len(args), 1))(
        *[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args]
    )
    lib = _driver()
    rc = lib.cuLaunchKernel(fn, *[ctypes.c_uint(g) for g in grid], *[ctypes.c_uint(b) for b in block],
                            ctypes.c_uint(0), None, params, None)  # fmt: skip
    if rc != 0:
        try:
            _check(lib, rc, "cuLaunchKernel")
        except DeviceError as err:
            raise DeviceError(f"{err} (kernel '{name}', grid {grid}, block {block})") from None


def buffer_arg(buf: DevicePointer):
    return ctypes.c_uint64(buf.ptr)


_CTYPES = {
    np.dtype("int8"): ctypes.c_int8, np.dtype("int16"): ctypes.c_int16,
    np.dtype("int32"): ctypes.c_int32, np.dtype("int64"): ctypes.c_int64,
    np.dtype("uint8"): ctypes.c_uint8, np.dtype("uint16"): ctypes.c_uint16,
    np.dtype("uint32"): ctypes.c_uint32, np.dtype("uint64"): ctypes.c_uint64,
    np.dtype("float32"): ctypes.c_float, np.dtype("float64"): ctypes.c_double,
    np.dtype("bool"): ctypes.c_bool,
}  # fmt: skip


def scalar_arg(value, dtype: np.dtype):
    return _CTYPES[np.dtype(dtype)](value)
