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


def list_op_freqs(mod: Any) -> dict[str, int]:
    """{op name: number of calls} over every function of `mod` (an IRModule or an expression),
    fused (Primitive) functions included: `relay.analysis.list_op_freqs(mod)["nn.conv2d"]`."""
    from .expr import Op

    counts: dict[str, int] = {}

    def visit(e: Any) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op):
            counts[e.op.name] = counts.get(e.op.name, 0) + 1

    values = [f for _, f in mod.functions_items()] if hasattr(mod, "functions_items") else [mod]
    for value in values:
        if isinstance(value, Expr):
            post_order_visit(value, visit)
    return counts


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _conv_macs(call: Call) -> int:
    """out elements x input channels per group x window (conv2d, conv2d_transpose)."""
    attrs = call.attrs
    data = call.args[0].checked_type
    channels = int(data.shape[attrs.data_layout.index("C")])
    window = _prod(call.args[1].checked_type.shape[attrs.kernel_layout.index(d)] for d in "HW")
    return _prod(call.checked_type.shape) * channels // attrs.groups * window


def _reduced_dim_macs(call: Call) -> int:
    """out elements x the reduced (last) dim of the first input (dense, matmul, batch_matmul)."""
    data = call.args[0].checked_type
    k = data.shape[-2] if getattr(call.attrs, "transpose_a", False) else data.shape[-1]
    return _prod(call.checked_type.shape) * int(k)


_MAC_RULES = {
    "nn.conv2d": _conv_macs,
    "nn.conv2d_transpose": _conv_macs,
    "nn.dense": _reduced_dim_macs,
    "nn.matmul": _reduced_dim_macs,
    "nn.batch_matmul": _reduced_dim_macs,
}


def get_total_mac_number(expr: Expr) -> int:
    """Multiply-accumulates of the convolutions and matrix products in `expr` (each call
    once): `relay.analysis.get_total_mac_number(func)`."""
    from .expr import Op
    from .type_infer import infer_type

    infer_type(expr)
    total = [0]

    def visit(e: Any) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in _MAC_RULES:
            total[0] += _MAC_RULES[e.op.name](e)

    post_order_visit(expr, visit)
    return total[0]


__all__ = [
    "all_vars",
    "bound_vars",
    "count_calls",
    "dataflow_operands",
    "free_vars",
    "get_total_mac_number",
    "list_op_freqs",
    "post_order_visit",
]
