"""`tvm._ffi.runtime_ctypes`: where TVM's classic releases define `Device` and `DataType`
(type annotations in TVM's tests name them here); the same classes as `tvm.runtime`'s."""

from ..ir.dtype import DataType
from ..runtime.device import Device

__all__ = ["DataType", "Device"]
