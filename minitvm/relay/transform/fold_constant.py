"""FoldConstant: a call whose arguments are all constants is computed now and replaced by a
Constant (a Tuple of Constants for multi-output ops).

The call is evaluated through its relax form (the op's row in relay/op) by the relax
reference evaluator, i.e. by the numpy references of the relax op table: the values are the
ones the built program would compute, with no kernel compiled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...relax import expr as rx
from ...relax.block_builder import BlockBuilder
from ...relax.eval_ref import evaluate
from ..expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem
from ..expr_functor import ExprMutator
from ..ty import TensorType, TupleType
from ..type_infer import op_result_type


def _is_constant(e: Any) -> bool:
    return isinstance(e, Constant) or (isinstance(e, Tuple) and all(map(_is_constant, e.fields)))


def _to_relax(e: Any) -> Any:
    if isinstance(e, Tuple):
        return rx.Tuple([_to_relax(f) for f in e.fields])
    return rx.const(e.data.numpy())


def _type_of(e: Any) -> Any:
    if isinstance(e, Tuple):
        return TupleType([_type_of(f) for f in e.fields])
    return TensorType(e.data.shape, e.data.dtype)


def _from_value(value: Any, ty: Any) -> Expr:
    """A Relay constant (or tuple of them) holding `value`, in the dtype and shape of `ty`."""
    if isinstance(ty, TupleType):
        return Tuple([_from_value(v, t) for v, t in zip(value, ty.fields)])
    array = np.asarray(value, dtype=ty.dtype)
    assert array.shape == tuple(ty.shape), (
        f"FoldConstant: evaluation gave shape {array.shape}, the call's type is {ty}"
    )
    return Constant(np.array(array, order="C"))


def evaluate_call(call: Call) -> Expr:
    """The value of a call of an op on constants, as a Relay constant (or tuple of them)."""
    ty = op_result_type(call.op, [_type_of(a) for a in call.args], call.attrs)
    bb = BlockBuilder()
    with bb.function("fold", []):
        out = call.op.op_def.to_relax(bb.emit, [_to_relax(a) for a in call.args], call.attrs)
        bb.emit_func_output(bb.emit(out))
    return _from_value(evaluate(bb.get(), func_name="fold"), ty)


class _Folder(ExprMutator):
    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if (
            isinstance(new.op, Op)
            and new.op.op_def is not None
            and new.args  # creation ops would only turn into large constants
            and all(map(_is_constant, new.args))
        ):
            return evaluate_call(new)
        return new

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem(item)
        if isinstance(new.tuple_value, Tuple):  # (a, b).1 -> b
            return new.tuple_value.fields[new.index]
        return new

    def visit_let(self, let: Let) -> Expr:
        value = self.visit(let.value)
        if _is_constant(value):  # uses see the constant; the binding goes
            self.memo_map[let.var] = value
            return self.visit(let.body)
        body = self.visit(let.body)
        if value is let.value and body is let.body:
            return let
        return Let(let.var, value, body)

    def visit_function(self, func: Function) -> Expr:
        if func.attrs.get("Primitive"):
            return func  # a fused kernel is folded as one unit or not at all
        return super().visit_function(func)


def fold_constant(func: Function) -> Function:
    """`func` with every all-constant call computed (see the module docstring)."""
    return _Folder().visit(func)
