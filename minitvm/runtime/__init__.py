"""Runtime: NDArray, devices, compiled modules, the global function registry, the thread pool."""

from . import ndarray, threadpool
from . import ndarray as nd
from .device import Device, cl, context, cpu, cuda, device, gpu, metal, opencl, rocm, vulkan
from .module import CodegenResult, Module, ProfileResult, load_module
from .ndarray import NDArray
from .packed_func import PackedFunc
from .registry import get_global_func, list_global_func_names, register_func, remove_global_func

__all__ = [
    "CodegenResult",
    "Device",
    "Module",
    "NDArray",
    "PackedFunc",
    "ProfileResult",
    "cl",
    "context",
    "cpu",
    "cuda",
    "device",
    "get_global_func",
    "gpu",
    "list_global_func_names",
    "load_module",
    "metal",
    "nd",
    "ndarray",
    "opencl",
    "register_func",
    "remove_global_func",
    "rocm",
    "threadpool",
    "vulkan",
]
