"""DLPack capsules for device memory (CUDA arrays to torch.from_dlpack), built with ctypes.

Host arrays use numpy's own DLPack support; this module makes the capsule for memory numpy
cannot describe. The capsule owns a reference to the array until its consumer calls the
deleter (or, never consumed, until the capsule is destroyed).
"""

from __future__ import annotations

import ctypes

import numpy as np

_CAPSULE_NAME = b"dltensor"
# numpy dtype kind -> DLPack type code (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6)
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}


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


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

_alive: dict[int, tuple] = {}  # address of a managed tensor -> what it keeps alive


@_DELETER
def _delete(managed) -> None:
    _alive.pop(ctypes.addressof(managed.contents), None)


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
# The destructor gets the dying capsule as a raw pointer: turning it into a Python object
# would take a new reference to an object being freed.
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule) -> None:
    # a consumer renames the capsule "used_dltensor" and calls the deleter itself
    if _is_valid(capsule, _CAPSULE_NAME):
        _alive.pop(_get_pointer(capsule, _CAPSULE_NAME), None)


def make_capsule(data: int, device: tuple[int, int], shape: tuple, dtype, owner) -> object:
    """A "dltensor" capsule over `data` (C-contiguous `shape` of `dtype` on DLPack `device`);
    `owner` stays alive until the consumer releases the tensor."""
    dtype = np.dtype(dtype)
    shape_arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    managed = _DLManagedTensor()
    t = managed.dl_tensor
    t.data = data
    t.device = _DLDevice(*device)
    t.ndim = len(shape)
    bits = 8 if dtype.kind == "b" else dtype.itemsize * 8
    t.dtype = _DLDataType(_CODES[dtype.kind], bits, 1)
    t.shape = shape_arr
    t.strides = None  # compact row-major
    t.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _alive[address] = (managed, shape_arr, owner)
    return _new_capsule(address, _CAPSULE_NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def to_dlpack_capsule(array) -> object:
    """The capsule of a DeviceNDArray on CUDA (its device pointer); waits for queued work."""
    array.device.sync()
    return make_capsule(array._handle.ptr, array.device._dlpack_device(), array.shape,
                        array._npdtype, array)  # fmt: skip
