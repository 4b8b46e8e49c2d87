"""`tvm.script.ir_builder.ir` (I): the IRModule frame and its functions and attributes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...ir.module import GlobalVar, IRModule
from .base import IRBuilder, IRBuilderError, IRBuilderFrame


class IRModuleFrame(IRBuilderFrame):
    """`with I.ir_module():` — functions declared or defined inside become the module's."""

    def __init__(self) -> None:
        super().__init__()
        self.gvars: dict[str, GlobalVar] = {}
        self.functions: dict[str, Any] = {}
        self.attrs: dict[str, Any] = {}
        self.global_infos: dict[str, Any] = {}

    def exit(self) -> None:
        missing = [name for name in self.gvars if name not in self.functions]
        if missing:
            raise IRBuilderError(f"I.ir_module: functions {missing} are declared but never defined")
        mod = IRModule(attrs=self.attrs, global_infos=self.global_infos)
        for name, func in self.functions.items():
            mod[self.gvars[name]] = func
        IRBuilder.current().set_result(mod)


def ir_module() -> IRModuleFrame:
    return IRModuleFrame()


def _module_frame(what: str) -> IRModuleFrame:
    frame = IRBuilder.current().find_frame(IRModuleFrame)
    if frame is None:
        raise IRBuilderError(f"I.{what} must be called inside `with I.ir_module():`")
    return frame


def decl_function(func_name: str, func_signature: Any = None) -> GlobalVar:
    """Declare function `func_name` of the module (defined later by def_function)."""
    frame = _module_frame("decl_function")
    if func_name in frame.gvars:
        raise IRBuilderError(f"I.decl_function: function {func_name!r} is declared twice")
    frame.gvars[func_name] = GlobalVar(func_name)
    return frame.gvars[func_name]


def def_function(func_name: str, func: Any) -> None:
    """Define declared function `func_name` as `func`."""
    frame = _module_frame("def_function")
    if func_name not in frame.gvars:
        raise IRBuilderError(f"I.def_function: declare {func_name!r} with I.decl_function first")
    frame.functions[func_name] = func


def module_attrs(attrs: Mapping[str, Any], allow_overwrite: bool = False) -> None:
    frame = _module_frame("module_attrs")
    if frame.attrs and not allow_overwrite:
        raise IRBuilderError("I.module_attrs: the module's attributes are already set")
    frame.attrs = dict(attrs)


def module_global_infos(global_infos: Mapping[str, Any]) -> None:
    frame = _module_frame("module_global_infos")
    frame.global_infos = {k: tuple(v) for k, v in global_infos.items()}


__all__ = [
    "IRModuleFrame",
    "decl_function",
    "def_function",
    "ir_module",
    "module_attrs",
    "module_global_infos",
]
