"""AttachGlobalSymbol (TVM's semantics): every function gets a `global_symbol` attribute, its
GlobalVar's name; a PrimFunc's is prefixed by the module's `system_lib_prefix` attribute, and the
function is renamed to it (calls to it follow)."""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.transform import Pass
from ...tir.function import PrimFunc
from .. import expr as rx
from ..functor import ExprMutator


class _Renamer(ExprMutator):
    def __init__(self, renames: dict[str, GlobalVar]) -> None:
        super().__init__()
        self.renames = renames

    def visit_leaf(self, e: Any) -> Any:
        if isinstance(e, GlobalVar):
            return self.renames.get(e.name_hint, e)
        return e

    def visit_call(self, call: rx.Call) -> rx.Expr:
        call = super().visit_call(call)
        if isinstance(call.op, GlobalVar) and call.op.name_hint in self.renames:
            return call.replace(op=self.renames[call.op.name_hint])
        return call


def attach_global_symbol(mod: IRModule) -> IRModule:
    """`mod` with every relax function and PrimFunc exposed under its (prefixed) name."""
    prefix = str((mod.attrs or {}).get("system_lib_prefix", "") or "")
    entries: list[tuple[GlobalVar, Any]] = []  # in module order, renamed GlobalVars included
    renames: dict[str, GlobalVar] = {}
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc | rx.Function):
            name = prefix + gv.name_hint if isinstance(func, PrimFunc) else gv.name_hint
            if func.attrs.get("global_symbol") != name:
                func = func.with_attr("global_symbol", name)
            if name != gv.name_hint:
                renames[gv.name_hint] = GlobalVar(name)
                gv = renames[gv.name_hint]
        entries.append((gv, func))
    if not renames and all(mod[gv] is f for gv, f in entries):
        return mod
    out = mod.copy()
    for name in list(out):
        out.remove(name)
    for gv, func in entries:
        if renames and isinstance(func, rx.Function):
            func = _Renamer(renames).visit_function(func)
        out[gv] = func
    return out


def AttachGlobalSymbol() -> Pass:
    """Expose every function under its name (attach_global_symbol.py)."""
    return Pass(attach_global_symbol, "AttachGlobalSymbol")
