"""DefuseOps: each call of a `Primitive` function is replaced by the function's body with
the call's arguments in place of the parameters (the inverse of FuseOps)."""

from __future__ import annotations

from ..expr import Call, Expr, Function
from ..expr_functor import ExprMutator


class _Substitute(ExprMutator):
    def __init__(self, binds: dict) -> None:
        super().__init__()
        self.memo_map.update(binds)


class _Defuser(ExprMutator):
    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if isinstance(new.op, Function) and new.op.attrs.get("Primitive"):
            return _Substitute(dict(zip(new.op.params, new.args))).visit(new.op.body)
        return new

    def visit_function(self, func: Function) -> Expr:
        return func if func.attrs.get("Primitive") else super().visit_function(func)


def defuse_ops(func: Function) -> Function:
    """`func` with its fused Primitive functions inlined."""
    return _Defuser().visit(func)
