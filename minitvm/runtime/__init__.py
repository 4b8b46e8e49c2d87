"""Runtime: NDArray, devices, compiled modules, the global function registry, the thread pool."""

from .. import _lazy
from ..ir.dtype import DataType  # tvm.runtime.DataType
from . import (  # noqa: F401 - device_module registers its loader, vm_builtin the VM's builtins
    cache_flush,
    container,
    device_module,
    ndarray,
    object_path,
    threadpool,
    vm_builtin,
)
from . import ndarray as nd
from .container import String
from .device import (
    Device,
    cl,
    context,
    cpu,
    cuda,
    device,
    enabled,
    gpu,
    metal,
    opencl,
    rocm,
    vulkan,
)
from .module import CodegenResult, Module, ProfileResult, load_module
from .ndarray import (
    NDArray,
    empty,  # TVM 0.20+: tvm.runtime.empty(shape, dtype, device=)
)
from .ndarray import NDArray as Tensor  # TVM 0.20+ name
from .ndarray import array as tensor  # TVM 0.20+: tvm.runtime.tensor(np_array, device)
from .object_path import ObjectPath, ObjectPathPair
from .packed_func import PackedFunc
from .registry import get_global_func, list_global_func_names, register_func, remove_global_func
from .registry import register_func as register_global_func  # TVM 0.20+ name
from .shape_tuple import ShapeTuple
from .threadpool import num_threads, set_num_threads

register_func("runtime.config_threadpool", threadpool._config_threadpool, override=True)
register_func(
    "cache_flush_cpu_non_first_arg", cache_flush.cache_flush_cpu_non_first_arg, override=True
)

__all__ = [
    "CodegenResult",
    "DataType",
    "Device",
    "Module",
    "NDArray",
    "ObjectPath",
    "ObjectPathPair",
    "PackedFunc",
    "ProfileResult",
    "ShapeTuple",
    "String",
    "Tensor",
    "cl",
    "container",
    "context",
    "cpu",
    "cuda",
    "device",
    "empty",
    "enabled",
    "get_global_func",
    "gpu",
    "list_global_func_names",
    "load_module",
    "metal",
    "nd",
    "ndarray",
    "num_threads",
    "object_path",
    "opencl",
    "register_func",
    "register_global_func",
    "remove_global_func",
    "rocm",
    "set_num_threads",
    "tensor",
    "threadpool",
    "vulkan",
]

# tvm.runtime.convert builds IR values (tir constants), so it lives above the runtime in
# minitvm/_convert.py and resolves on first use.
__getattr__ = _lazy.module_getattr(
    __name__,
    {
        "convert": "minitvm._convert:convert",
        "save_param_dict": "minitvm.runtime.params:save_param_dict",
        "load_param_dict": "minitvm.runtime.params:load_param_dict",
        "save_param_dict_to_file": "minitvm.runtime.params:save_param_dict_to_file",
        "load_param_dict_from_file": "minitvm.runtime.params:load_param_dict_from_file",
        "params": "minitvm.runtime.params",
    },
)
