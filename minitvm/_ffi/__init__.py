"""`tvm._ffi`: TVM's names for the global function registry and object registration.

minitvm has no C++ side, so these map onto the Python registry (`tvm.register_func`)."""

from . import base, registry, runtime_ctypes
from .base import TVMError
from .registry import (
    get_global_func,
    list_global_func_names,
    register_func,
    register_object,
    remove_global_func,
)

__all__ = [
    "TVMError",
    "base",
    "get_global_func",
    "list_global_func_names",
    "register_func",
    "register_object",
    "registry",
    "remove_global_func",
    "runtime_ctypes",
]
