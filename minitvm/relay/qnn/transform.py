"""`relay.qnn.transform`: CanonicalizeOps, which rewrites QNN calls into core Relay ops."""

from __future__ import annotations

from ...ir.transform import Pass
from ..expr import Call, Expr, Function, Op
from ..expr_functor import ExprMutator


class _Canonicalizer(ExprMutator):
    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        lower = getattr(getattr(call.op, "op_def", None), "canonicalize", None)
        if isinstance(call.op, Op) and lower is not None:
            # the types are on the original call's arguments (the rebuilt ones have none yet)
            return lower(list(new.args), [a.checked_type for a in call.args], new.attrs)
        return new


def canonicalize_ops(func: Function) -> Function:
    """`func` with every QNN call replaced by its lowering (types must be inferred)."""
    return _Canonicalizer().visit(func)


def CanonicalizeOps() -> Pass:
    """Lower QNN ops (qnn.requantize, qnn.add, ...) to core Relay ops; run InferType first."""
    from ..transform import _pass

    return _pass(canonicalize_ops, "CanonicalizeOps", 0, ("InferType",))


__all__ = ["CanonicalizeOps", "canonicalize_ops"]
