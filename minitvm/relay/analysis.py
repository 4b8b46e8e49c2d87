"""Relay analyses: which variables an expression uses, binds, or leaves free.

relay.analysis.free_vars(func.body)   # [%x, %weight]
"""

from __future__ import annotations

from typing import Any

from .expr import Call, Expr, Function, Let, Tuple, TupleGetItem, Var
from .expr_functor import ExprVisitor, post_order_visit


class _VarCollector(ExprVisitor):
    """Variables in order of first appearance: all of them, and those bound by a function or let."""

    def __init__(self) -> None:
        super().__init__()
        self.all: dict[Var, None] = {}
        self.bound: dict[Var, None] = {}

    def visit_var(self, v: Var) -> None:
        self.all.setdefault(v)

    def visit_function(self, func: Function) -> None:
        for p in func.params:
            self.bound.setdefault(p)
        super().visit_function(func)

    def visit_let(self, let: Let) -> None:
        self.bound.setdefault(let.var)
        super().visit_let(let)


def dataflow_operands(e: Any) -> tuple:
    """The expressions a call, tuple or projection reads (none for anything else)."""
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    return ()


def _collect(expr: Expr) -> _VarCollector:
    c = _VarCollector()
    c.visit(expr)
    return c


def all_vars(expr: Expr) -> list[Var]:
    """Every variable in `expr`, bound or free, in order of first appearance."""
    return list(_collect(expr).all)


def bound_vars(expr: Expr) -> list[Var]:
    """The variables `expr` binds (function parameters, let variables)."""
    return list(_collect(expr).bound)


def free_vars(expr: Expr) -> list[Var]:
    """The variables `expr` uses without binding them (a function's free vars exclude its params)."""
    c = _collect(expr)
    return [v for v in c.all if v not in c.bound]


def count_calls(expr: Expr, op_name: str | None = None) -> int:
    """How many op calls `expr` has (of `op_name` only, when given); nested functions included."""
    from .expr import Call, Op

    n = [0]

    def visit(e: Any) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op) and op_name in (None, e.op.name):
            n[0] += 1

    post_order_visit(expr, visit)
    return n[0]


__all__ = [
    "all_vars",
    "bound_vars",
    "count_calls",
    "dataflow_operands",
    "free_vars",
    "post_order_visit",
]
