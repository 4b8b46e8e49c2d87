"""Variable analyses of relax expressions (TVM's `relax.analysis` names): which variables an
expression defines, uses or leaves free, which functions it names, its use-def chain, and which
functions of a module call each other recursively."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..error import MiniTVMError
from ..ir.module import GlobalVar, IRModule
from ..ir.node import FrozenDict, Node, field_names
from . import expr as rx
from . import struct_info as si


def _walk(expr: Any) -> Iterator[tuple[Any, bool]]:
    """Every relax Var and GlobalVar under `expr` in pre-order (a definition before what
    follows it), with True where the occurrence defines the Var (a parameter or a binding's
    variable). Struct info and tir code are not entered: they hold no relax variables."""
    stack: list[tuple[Any, bool]] = [(expr, False)]
    while stack:
        n, defining = stack.pop()
        if isinstance(n, rx.Var | GlobalVar):
            yield n, defining
            continue
        if isinstance(n, tuple | list):
            stack.extend((x, defining) for x in reversed(n))
            continue
        if isinstance(n, FrozenDict) or not isinstance(n, rx.Expr | rx.Binding | rx.BindingBlock):
            continue
        defs = type(n)._def_fields
        children = [
            (getattr(n, f), f in defs)
            for f in field_names(type(n))
            if not isinstance(getattr(n, f), si.StructInfo)
        ]
        stack.extend(reversed(children))


def _unique(items: Iterator[Any]) -> list[Any]:
    seen: dict[int, Any] = {}
    for v in items:
        seen.setdefault(id(v), v)
    return list(seen.values())


def _check(expr: Any, what: str) -> None:
    if not isinstance(expr, Node):
        raise MiniTVMError(
            f"relax.analysis.{what}: expected a relax expression, got {type(expr).__name__}"
        )


def all_vars(expr: rx.Expr) -> list[rx.Var]:
    """Every relax Var (bound or free, DataflowVars included), each once, in order of first
    appearance."""
    _check(expr, "all_vars")
    return _unique(v for v, _ in _walk(expr) if isinstance(v, rx.Var))


def bound_vars(expr: rx.Expr) -> list[rx.Var]:
    """The Vars `expr` defines (function parameters, binding variables), in order."""
    _check(expr, "bound_vars")
    return _unique(v for v, d in _walk(expr) if d and isinstance(v, rx.Var))


def free_vars(expr: rx.Expr) -> list[rx.Var]:
    """The Vars `expr` uses without defining them (a closure's captured variables), in order."""
    _check(expr, "free_vars")
    occurrences = [(v, d) for v, d in _walk(expr) if isinstance(v, rx.Var)]
    bound = {id(v) for v, d in occurrences if d}
    return _unique(v for v, d in occurrences if id(v) not in bound)


def all_global_vars(expr: rx.Expr) -> list[GlobalVar]:
    """The GlobalVars (functions of a module) `expr` names, each once, in order."""
    _check(expr, "all_global_vars")
    return _unique(v for v, _ in _walk(expr) if isinstance(v, GlobalVar))


def udchain(dfb: rx.BindingBlock) -> dict[rx.Var, list[rx.Var]]:
    """For each Var a block defines or uses: the binding variables of the block that use it
    (an output nobody in the block uses maps to [])."""
    if not isinstance(dfb, rx.BindingBlock):
        raise MiniTVMError(
            f"relax.analysis.udchain: expected a (Dataflow)BindingBlock, got {type(dfb).__name__}"
        )
    users: dict[rx.Var, list[rx.Var]] = {}
    for binding in dfb.bindings:
        for used in free_vars(binding.value):
            seen = users.setdefault(used, [])
            if not any(u is binding.var for u in seen):
                seen.append(binding.var)
        users.setdefault(binding.var, [])
    return users


def name_to_binding(func: rx.Function) -> dict[str, list[rx.Binding]]:
    """The bindings of `func` grouped by their variable's name (names may repeat)."""
    if not isinstance(func, rx.Function):
        raise MiniTVMError(
            f"relax.analysis.name_to_binding: expected a relax.Function, got {type(func).__name__}"
        )
    out: dict[str, list[rx.Binding]] = {}
    stack: list[Any] = [func.body]
    while stack:
        n = stack.pop()
        if isinstance(n, rx.SeqExpr):
            for block in n.blocks:
                for b in block.bindings:
                    out.setdefault(b.var.name_hint, []).append(b)
                    stack.append(b.value)
            stack.append(n.body)
        elif isinstance(n, rx.If):
            stack.extend((n.true_branch, n.false_branch))
        elif isinstance(n, rx.Function):
            stack.append(n.body)
    return out


def detect_recursion(mod: IRModule) -> list[list[GlobalVar]]:
    """The groups of relax functions of `mod` that call themselves, directly or through each
    other (the call graph's cycles, merged where they share a function); each group once."""
    if not isinstance(mod, IRModule):
        raise MiniTVMError(
            f"relax.analysis.detect_recursion: expected an IRModule, got {type(mod).__name__}"
        )
    gvars = {gv.name_hint: gv for gv in mod.get_global_vars()}
    funcs = {name: mod[name] for name in gvars if isinstance(mod[name], rx.Function)}
    calls = {
        name: [g.name_hint for g in all_global_vars(f) if g.name_hint in funcs]
        for name, f in funcs.items()
    }
    groups = []
    for component in _strongly_connected(list(funcs), calls):
        if len(component) > 1 or component[0] in calls[component[0]]:
            groups.append([gvars[name] for name in component])
    return groups


def defined_symbolic_vars(func: rx.Function) -> list[Any]:
    """The symbolic (tir) variables `func` defines: those standing alone in a parameter's
    struct info or in a MatchCast's, in order."""
    from .analysis import definable_tir_vars_in_struct_info

    if not isinstance(func, rx.Function):
        raise MiniTVMError(
            "relax.analysis.defined_symbolic_vars: expected a relax.Function, got "
            f"{type(func).__name__}"
        )
    found = [t for p in func.params for t in definable_tir_vars_in_struct_info(p.struct_info)]
    stack: list[Any] = [func.body]
    while stack:
        n = stack.pop()
        if isinstance(n, rx.SeqExpr):
            for block in n.blocks:
                for b in block.bindings:
                    if isinstance(b, rx.MatchCast):
                        found.extend(definable_tir_vars_in_struct_info(b.struct_info))
                    stack.append(b.value)
            stack.append(n.body)
        elif isinstance(n, rx.If):
            stack.extend((n.false_branch, n.true_branch))
    return _unique(iter(found))


def free_symbolic_vars(func: rx.Function) -> list[Any]:
    """The symbolic variables `func` uses (anywhere: struct infos, shapes, values) without
    defining them, in order of first use."""
    from ..tir.expr import Var as TirVar
    from ..tir.functor import post_order_visit

    defined = {id(v) for v in defined_symbolic_vars(func)}
    used: list[Any] = []
    post_order_visit(func, lambda n: used.append(n) if isinstance(n, TirVar) else None)
    return _unique(v for v in used if id(v) not in defined)


def _strongly_connected(nodes: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (call graphs of generated modules can be deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            succ = edges[v]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                out.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


__all__ = [
    "all_global_vars",
    "all_vars",
    "bound_vars",
    "defined_symbolic_vars",
    "detect_recursion",
    "free_symbolic_vars",
    "free_vars",
    "name_to_binding",
    "udchain",
]
