"""The public names of the `tvm_ffi` package (TVM 0.22+), as minitvm's own objects, so code
written for it runs with `sys.modules["tvm_ffi"] = minitvm.ffi`:
`register_global_func`, `get_global_func`, `Function`, `Tensor`, `Device`, `device`,
`from_dlpack`, `Object`, `Array`, `Map`, `Module`, `load_module`, `convert`, `dtype`, ...
"""

from __future__ import annotations

from typing import Any

from .. import _lazy

_TABLE = {
    "register_global_func": "minitvm.runtime:register_global_func",
    "register_func": "minitvm.runtime:register_func",
    "get_global_func": "minitvm.runtime:get_global_func",
    "remove_global_func": "minitvm._ffi:remove_global_func",
    "list_global_func_names": "minitvm.runtime:list_global_func_names",
    "register_object": "minitvm._ffi:register_object",
    "Function": "minitvm.runtime.packed_func:PackedFunc",
    "Tensor": "minitvm.runtime:Tensor",
    "Device": "minitvm.runtime:Device",
    "from_dlpack": "minitvm.runtime.ndarray:from_dlpack",
    "Module": "minitvm.runtime:Module",
    "load_module": "minitvm.runtime:load_module",
    "Object": "minitvm.ir:Node",
    "Array": "minitvm.container:Array",
    "Shape": "minitvm.runtime.shape_tuple:ShapeTuple",
    "List": "minitvm.container:Array",
    "Map": "minitvm.container:Map",
    "Dict": "minitvm.container:Map",
    "convert": "minitvm._convert:convert",
    "dtype": "minitvm.ir.dtype:DataType",
    "structural_equal": "minitvm.ir:structural_equal",
    "structural_hash": "minitvm.ir:structural_hash",
    "TVMError": "minitvm.error:TVMError",
}
__getattr__ = _lazy.module_getattr(__name__, _TABLE)


def device(dev_type: Any, index: int | None = None) -> Any:
    """A Device from a name with an optional index (`device("cuda:0")`, `device("cpu")`,
    `device("cuda", 1)`) or a DLPack code."""
    from ..error import ArgumentError
    from ..runtime import device as make_device

    if isinstance(dev_type, str) and ":" in dev_type:
        name, _, number = dev_type.partition(":")
        if index is not None or not number.isdigit():
            raise ArgumentError(
                f"tvm_ffi.device({dev_type!r}): write 'name:index' with a number, or pass the "
                "index separately, not both"
            )
        return make_device(name, int(number))
    return make_device(dev_type, 0 if index is None else index)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_TABLE))
