"""DLPack for device memory, both ways: capsules of CUDA arrays for torch, and imports of a
producer's capsule (CUDA or host memory) as an NDArray without a copy.

Host arrays export through numpy's own DLPack support. A CUDA array's capsule is numpy's
capsule of a stand-in array, pointed at the device memory: it keeps the array alive until its
consumer calls the deleter (or, never consumed, until the capsule is destroyed). An import
renames the producer's capsule "used_dltensor" and calls its deleter when the NDArray dies.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..error import ArgumentError, DTypeError

_CAPSULE_NAME = b"dltensor"
# numpy dtype kind -> DLPack type code (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6)
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
_KINDS = {code: kind for kind, code in _CODES.items()}
KDL_CPU, KDL_CUDA = 1, 2
# device types numpy reads as host memory: CPU, CUDA pinned host, ROCm host, CUDA managed
HOST_KINDS = frozenset({KDL_CPU, 3, 11, 13})


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


# a producer's deleter, called without the GIL (numpy's and torch's take it when they need it)
_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

# the C functions of a capsule, called on live capsule objects
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _StandIn:
    """A zero-strided view of one element, shaped like the exported tensor, whose numpy base
    holds the tensor's owner: numpy exports it, and its capsule then keeps the owner alive."""

    def __init__(self, shape: tuple, dtype: np.dtype, owner) -> None:
        self._cell, self._owner = np.zeros(1, dtype), owner
        self.__array_interface__ = {
            "data": (self._cell.ctypes.data, False), "shape": shape,
            "strides": (0,) * len(shape), "typestr": dtype.str, "version": 3,
        }  # fmt: skip


def make_capsule(data: int, device: tuple[int, int], shape: tuple, dtype, owner) -> object:
    """A "dltensor" capsule over `data` (C-contiguous `shape` of `dtype` on DLPack `device`);
    `owner` stays alive until the consumer releases the tensor.

    numpy makes the capsule (of a stand-in array) and this function points its tensor at
    `data` on `device`: numpy's capsule destructor and deleter are C code that is safe in every
    state of the interpreter, where a ctypes callback is not (a capsule is destroyed while the
    consumer that refused it has its exception set, and a Python callback loses that error).
    """
    dtype = np.dtype(dtype)
    capsule = np.asarray(_StandIn(tuple(shape), dtype, owner)).__dlpack__()
    t = _managed(capsule)[1].dl_tensor
    t.data, t.byte_offset = data, 0
    t.device = _DLDevice(*device)
    t.strides = None  # compact row-major (numpy wrote the stand-in's zero strides)
    return capsule


def to_dlpack_capsule(array) -> object:
    """The capsule of a DeviceNDArray on CUDA (its device pointer); waits for queued work."""
    array.device.sync()
    return make_capsule(array._handle.ptr, array.device._dlpack_device(), array.shape,
                        array._npdtype, array)  # fmt: skip


def is_capsule(obj) -> bool:
    """Whether `obj` is a PyCapsule (what a producer's __dlpack__() returns)."""
    return type(obj).__name__ == "PyCapsule" and type(obj).__module__ == "builtins"


def _managed(capsule) -> tuple[int, _DLManagedTensor]:
    """The address and struct of an unused "dltensor" capsule (an ArgumentError otherwise)."""
    if not _capsule_is_valid(capsule, _CAPSULE_NAME):
        raise ArgumentError(
            "from_dlpack: expected an unused 'dltensor' capsule (a producer's __dlpack__() "
            "result); it was consumed already or is not a DLPack capsule"
        )
    address = _capsule_pointer(capsule, _CAPSULE_NAME)
    return address, ctypes.cast(address, ctypes.POINTER(_DLManagedTensor)).contents


def capsule_device(capsule) -> tuple[int, int]:
    """The (DLPack device type, id) of an unused capsule, without consuming it."""
    device = _managed(capsule)[1].dl_tensor.device
    return device.device_type, device.device_id


def take_capsule(capsule) -> tuple:
    """Consume a "dltensor" capsule: (data address, (device type, id), shape, numpy dtype,
    release). The capsule is renamed "used_dltensor" (DLPack's rule), so `release()` (call it
    once, when done with the memory) is what gives the tensor back to its producer. A capsule
    that is refused (dtype, strides) is left unused: its producer still frees it."""
    address, managed = _managed(capsule)
    t = managed.dl_tensor
    shape = tuple(t.shape[k] for k in range(t.ndim))
    dtype = _numpy_dtype(t.dtype)
    if t.strides and not _compact(shape, [t.strides[k] for k in range(t.ndim)]):
        strides = tuple(t.strides[k] for k in range(t.ndim))
        raise ArgumentError(
            f"from_dlpack: the tensor of shape {shape} has strides {strides} (in elements), not "
            "a compact row-major layout; make it contiguous first (.contiguous())"
        )
    deleter = managed.deleter
    _capsule_set_name(capsule, b"used_dltensor")

    def release() -> None:
        if deleter:
            deleter(ctypes.cast(address, ctypes.POINTER(_DLManagedTensor)))

    device = (t.device.device_type, t.device.device_id)
    return (t.data or 0) + t.byte_offset, device, shape, dtype, release


def _numpy_dtype(dt: _DLDataType) -> np.dtype:
    from .ndarray import _dtype_str

    kind = _KINDS.get(dt.code)
    try:
        if kind is None or dt.lanes != 1 or dt.bits % 8 or (kind == "b" and dt.bits != 8):
            raise TypeError("not an NDArray element type")
        dtype = np.dtype("bool" if kind == "b" else f"{kind}{dt.bits // 8}")
        _dtype_str(dtype)  # float8, int128, float128 have numpy names but no NDArray form
    except (TypeError, DTypeError) as err:
        raise DTypeError(
            f"from_dlpack: DLPack dtype (code {dt.code}, {dt.bits} bits, {dt.lanes} lanes) has no "
            "NDArray form; use int8-64, uint8-64, float16-64 or bool elements with one lane"
        ) from err
    return dtype


def _compact(shape: tuple, strides: list) -> bool:
    """Whether element strides describe a row-major layout (unit dims may have any stride)."""
    expected = 1
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


class _HostMemory:
    """A producer's host memory as numpy sees it (__array_interface__); the numpy array keeps
    this object as its base, so the producer's deleter runs when the last view dies."""

    def __init__(self, data: int, shape: tuple, dtype: np.dtype, release) -> None:
        self.__array_interface__ = {
            "data": (data, False), "shape": shape, "typestr": dtype.str, "version": 3,
        }  # fmt: skip
        self._release = release

    def __del__(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


def foreign_device_error(kind: int, device_id: int, what: str):
    return ArgumentError(
        f"from_dlpack: the {what} is on DLPack device type {kind} (id {device_id}); minitvm "
        f"imports host ({', '.join(map(str, sorted(HOST_KINDS)))}) and CUDA ({KDL_CUDA}) memory; "
        "copy it to the CPU first"
    )


def array_from_capsule(capsule):
    """An NDArray over the memory of a "dltensor" capsule (CPU or CUDA), without a copy."""
    from .ndarray import NDArray

    kind, device_id = capsule_device(capsule)
    if kind == KDL_CUDA:
        return _cuda_array(capsule, device_id, "capsule")
    if kind not in HOST_KINDS:
        raise foreign_device_error(kind, device_id, "capsule")
    data, _, shape, dtype, release = take_capsule(capsule)
    return NDArray(np.asarray(_HostMemory(data, shape, dtype, release)))


def _cuda_stream_capsule(tensor):
    """tensor.__dlpack__ ordered after its pending work: minitvm's copies and launches run on
    the legacy default stream (DLPack stream 1); a producer without the keyword is older."""
    try:
        return tensor.__dlpack__(stream=1)
    except TypeError:
        return tensor.__dlpack__()


def cuda_array_from_dlpack(tensor):
    """A DeviceNDArray on CUDA over the memory of `tensor` (a producer whose __dlpack_device__
    is kDLCUDA, e.g. a torch CUDA tensor), sharing it without a copy."""
    kind, device_id = tensor.__dlpack_device__()
    if kind != KDL_CUDA:
        raise foreign_device_error(kind, device_id, type(tensor).__name__)
    return _cuda_array(tensor, device_id, type(tensor).__name__)


def _cuda_array(source, device_id: int, what: str):
    """The CUDA DeviceNDArray of a producer or a capsule on cuda(device_id)."""
    from .cuda_api import BorrowedPointer
    from .device import cuda, device_api
    from .ndarray import DeviceNDArray, _dtype_str

    dev = cuda(device_id)
    dev.check_available()  # before taking the capsule: an error leaves the tensor untouched
    capsule = source if is_capsule(source) else _cuda_stream_capsule(source)
    data, (got_kind, got_id), shape, dtype, release = take_capsule(capsule)
    if (got_kind, got_id) != (KDL_CUDA, device_id):
        release()
        raise ArgumentError(
            f"from_dlpack: the {what} said it is on cuda({device_id}) but its capsule is on "
            f"DLPack device {(got_kind, got_id)}"
        )
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    # DeviceNDArray.__init__ allocates; an imported array takes the producer's memory instead
    array = DeviceNDArray.__new__(DeviceNDArray)
    array._npdtype, array._dtype, array._shape = dtype, _dtype_str(dtype), shape
    array._nbytes, array._api = nbytes, device_api("cuda")
    array._handle = BorrowedPointer(device_id, nbytes, data, release)
    array._data, array._ptr, array.device = None, None, dev
    return array
