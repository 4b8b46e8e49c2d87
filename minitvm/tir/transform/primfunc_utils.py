"""Module bookkeeping passes (TVM's primfunc_utils): BindTarget, AnnotateEntryFunc, Filter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...ir.module import IRModule
from ...ir.transform import Pass
from ..function import PrimFunc
from ._pass import _run_per_prim_func

ATTR_TARGET = "target"
ATTR_GLOBAL_SYMBOL = "global_symbol"
ATTR_IS_HOST_FUNC = "tir.is_host_func"
ATTR_IS_ENTRY_FUNC = "tir.is_entry_func"


def bind_target(func: PrimFunc, target: Any) -> PrimFunc:
    """Give `func` the attr "target" unless it has one. Externally exposed functions (with a
    global_symbol) get the target with its host, internal ones without; functions marked
    tir.is_host_func get the host. An existing target only gains the host, when exposed."""
    from ...target import Target

    target = Target(target)
    host = target._host
    exposed = ATTR_GLOBAL_SYMBOL in (func.attrs or {})
    own = (func.attrs or {}).get(ATTR_TARGET)
    if own is not None:
        if host is not None and own._host is None and exposed:
            func = func.with_attr(ATTR_TARGET, Target(own, host=host))
    elif (func.attrs or {}).get(ATTR_IS_HOST_FUNC):
        cpu = host if host is not None else Target("llvm")
        func = func.with_attr(ATTR_TARGET, Target(cpu, host=cpu))
    elif exposed:
        func = func.with_attr(ATTR_TARGET, target)
    else:
        func = func.with_attr(ATTR_TARGET, Target(str(target)))
    if ATTR_IS_HOST_FUNC in (func.attrs or {}):
        func = func.without_attr(ATTR_IS_HOST_FUNC)
    return func


def BindTarget(target: Any) -> Pass:
    """`tvm.tir.transform.BindTarget(Target("cuda", host="llvm"))(mod)`: see `bind_target`."""
    return Pass(
        lambda mod: _run_per_prim_func(lambda f, _m, _c: bind_target(f, target), mod),
        "BindTarget",
    )


def annotate_entry_func(mod: IRModule) -> IRModule:
    """Mark the entry PrimFunc with tir.is_entry_func: the only function of the module, or
    else the only externally exposed one (when it is a PrimFunc); otherwise nothing."""
    items = list(mod.functions_items())
    if len(items) == 1:
        gv, func = items[0]
        if isinstance(func, PrimFunc) and not (func.attrs or {}).get(ATTR_IS_ENTRY_FUNC):
            out = mod.copy()
            out[gv] = func.with_attr(ATTR_IS_ENTRY_FUNC, True)
            return out
        return mod
    exposed = [(gv, f) for gv, f in items if ATTR_GLOBAL_SYMBOL in (f.attrs or {})]
    if len(exposed) == 1 and isinstance(exposed[0][1], PrimFunc):
        out = mod.copy()
        out[exposed[0][0]] = exposed[0][1].with_attr(ATTR_IS_ENTRY_FUNC, True)
        return out
    return mod


def AnnotateEntryFunc() -> Pass:
    """`tvm.tir.transform.AnnotateEntryFunc()(mod)`: see `annotate_entry_func`."""
    return Pass(annotate_entry_func, "AnnotateEntryFunc")


def Filter(fcond: Callable[[PrimFunc], bool]) -> Pass:
    """`tvm.tir.transform.Filter(cond)(mod)`: keep only the PrimFuncs for which `cond` holds."""
    return Pass(
        lambda mod: _run_per_prim_func(lambda f, _m, _c: f if fcond(f) else None, mod),
        "Filter",
    )
