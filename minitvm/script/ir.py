"""The `I` namespace of TVMScript: `from minitvm.script import ir as I` (`@I.ir_module`)."""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Mapping
from typing import Any

from .pyfunc import pyfunc  # `@I.pyfunc`

__tvmscript__ = True


def ir_module(cls: type | None = None, *, check_well_formed: bool = True) -> Any:
    """Class decorator: parse a class of `@T.prim_func` methods into an `IRModule`.

    The module must be well formed (`relax.analysis.well_formed`, `tir.analysis.
    verify_well_formed`) unless `@I.ir_module(check_well_formed=False)`.

    Example::

        @I.ir_module
        class Module:
            @T.prim_func
            def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
                for i in range(4):
                    B[i] = A[i] + T.float32(1)
    """
    from .entry import parse_ir_module_class
    from .source import capture_env

    env = capture_env(sys._getframe(1))

    def decorate(klass: type) -> Any:
        mod = parse_ir_module_class(klass, env, check_well_formed)
        mod._class_name = klass.__name__
        if not any(base.__name__ == "BasePyModule" for base in klass.__mro__[1:]):
            return mod
        # as in TVM: a class deriving from BasePyModule gives a factory of module instances
        from ..relax.base_py_module import module_factory

        return module_factory(mod, klass)

    return decorate if cls is None else decorate(cls)


def module_attrs(attrs: Mapping) -> Any:
    from .entry import ModuleAttrs

    return ModuleAttrs(attrs)


class ModuleGlobalInfos:
    """`I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), ...]})` in an `@I.ir_module`
    class: the module's `global_infos`; `R.Tensor(..., "cuda:0")` annotations below it
    refer to its "vdevice" list."""

    def __init__(self, infos: Mapping):
        self.infos = {name: tuple(items) for name, items in infos.items()}


# the "vdevice" list of the module class being parsed (what "cuda:0" in R.Tensor refers to)
current_vdevices: contextvars.ContextVar[tuple] = contextvars.ContextVar(
    "tvmscript_vdevices", default=()
)


def module_global_infos(infos: Mapping) -> ModuleGlobalInfos:
    return ModuleGlobalInfos(infos)


def dummy_global_info() -> Any:
    """A `tvm.ir.DummyGlobalInfo` entry for `I.module_global_infos`."""
    from ..ir.vdevice import DummyGlobalInfo

    return DummyGlobalInfo()


def vdevice(target: Any = None, vdevice_id: int = 0, memory_scope: str = "global") -> Any:
    """A `tvm.ir.VDevice` entry for `I.module_global_infos({"vdevice": [...]})`."""
    from ..ir.vdevice import VDevice

    return VDevice(target, vdevice_id, memory_scope)


__all__ = [
    "dummy_global_info",
    "ir_module",
    "module_attrs",
    "module_global_infos",
    "pyfunc",
    "vdevice",
]
