"""`tvm.tir.stmt_functor`: TVM's function-style walkers over statements and expressions."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..error import ArgumentError
from ..ir.node import Node
from .expr import PrimExpr, Var, make_const
from .function import PrimFunc
from .functor import Mutator, allows_deep_recursion, post_order_visit, pre_order_visit
from .functor import substitute as _substitute
from .stmt import Stmt


def _type_keys(only_enable: Sequence[Any] | None) -> Callable[[Node], bool]:
    """A predicate for the node kinds `only_enable` names ("tir.For", "For" or the class)."""
    if only_enable is None:
        return lambda n: True
    names, classes = set(), []
    for item in only_enable:
        if isinstance(item, str):
            names.add(item.removeprefix("tir."))
        elif isinstance(item, type):
            classes.append(item)
        else:
            raise ArgumentError(
                f"ir_transform: only_enable holds {item!r}; give type keys such as 'tir.For'"
            )
    return lambda n: type(n).__name__ in names or isinstance(n, tuple(classes))


class _Transform(Mutator):
    def __init__(self, preorder: Callable | None, postorder: Callable | None, enabled: Callable):
        super().__init__()
        self.preorder, self.postorder, self.enabled = preorder, postorder, enabled

    def visit(self, n: Any) -> Any:
        if not isinstance(n, Stmt | PrimExpr) or not self.enabled(n):
            return super().visit(n)
        if self.preorder is not None:
            replaced = self.preorder(n)
            if replaced is not None:  # a replacement from preorder is not visited further
                return replaced
        out = super().visit(n)
        if self.postorder is not None:
            replaced = self.postorder(out)
            if replaced is not None:
                return replaced
        return out


@allows_deep_recursion
def ir_transform(
    stmt: Any,
    preorder: Callable[[Any], Any] | None,
    postorder: Callable[[Any], Any] | None,
    only_enable: Sequence[Any] | None = None,
) -> Any:
    """Rewrite `stmt`: `preorder(node)` runs before the children (a non-None result replaces the
    node and skips its children), `postorder(node)` after them (non-None replaces the rebuilt
    node); `only_enable=["tir.For"]` restricts both callbacks to those node kinds.

    >>> ir_transform(body, None, lambda n: n.body if isinstance(n, tir.AttrStmt) else None)
    """
    return _Transform(preorder, postorder, _type_keys(only_enable)).visit(stmt)


def substitute(node: Any, vmap: Mapping | Callable[[Any], Any]) -> Any:
    """Replace variables in `node`; `vmap` maps Var -> expression (Python numbers become
    constants of the variable's dtype) or is a function Var -> expression or None."""
    if isinstance(vmap, Mapping):
        vmap = {k: _as_value(k, v) for k, v in vmap.items()}
    return _substitute(node, vmap)


class _Renew(Mutator):
    """Every variable gets a fresh twin (same name and dtype), once; every buffer is rebuilt
    around the fresh variables. Memoised by identity, so shared definitions stay shared."""

    def visit_Var(self, v: Var) -> Var:
        return dataclasses.replace(v)


@allows_deep_recursion
def renew_defs(func: PrimFunc) -> PrimFunc:
    """A copy of the PrimFunc `func` with new variables and buffers: the same behaviour and
    structure, but no definition shared with `func`."""
    if not isinstance(func, PrimFunc):
        raise ArgumentError(f"renew_defs: expected a tir.PrimFunc, got {type(func).__name__}")
    return _Renew().visit(func)


def _as_value(var: Any, value: Any) -> Any:
    if isinstance(value, bool | int | float) and isinstance(var, Var):
        return make_const(var.dtype, value)
    return value


__all__ = ["ir_transform", "post_order_visit", "pre_order_visit", "renew_defs", "substitute"]
