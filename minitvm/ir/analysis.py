"""`tvm.ir.analysis`: analyses that span every kind of function in an IRModule."""

from __future__ import annotations

from typing import Any

from .module import GlobalVar, IRModule
from .node import FrozenDict, Node, field_names


def collect_call_map(module: IRModule) -> dict[GlobalVar, list[GlobalVar]]:
    """For each function of `module`, the functions it refers to (its callees), each once, in
    order of first reference.

    >>> {g.name_hint: [c.name_hint for c in cs] for g, cs in collect_call_map(mod).items()}
    {'main': ['subroutine'], 'subroutine': []}
    """
    return {gvar: _callees(func, module) for gvar, func in module.functions_items()}


def _callees(func: Any, module: IRModule) -> list[GlobalVar]:
    """GlobalVars reachable from `func`'s fields (walked with a stack: bodies can be deep)."""
    found: dict[int, GlobalVar] = {}
    seen: set[int] = set()
    stack = [func]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, GlobalVar):
            found.setdefault(id(value), _canonical(value, module))
            continue
        if isinstance(value, Node):
            children = [getattr(value, name, None) for name in field_names(type(value))]
        elif isinstance(value, FrozenDict | dict):
            children = [*value.keys(), *value.values()]
        elif isinstance(value, tuple | list):
            children = list(value)
        else:
            continue
        stack.extend(reversed(children))  # visit fields in declaration order
    callees: list[GlobalVar] = []
    for gvar in found.values():
        if all(gvar is not c for c in callees):
            callees.append(gvar)
    return callees


def _canonical(gvar: GlobalVar, module: IRModule) -> GlobalVar:
    """The module's own GlobalVar of that name (a reference may be a copy)."""
    return module.get_global_var(gvar.name_hint) if gvar.name_hint in module else gvar


__all__ = ["collect_call_map"]
