"""TVM's op-level gradient interface over the op table's rules.

TVM attaches each op's gradient as the attribute `FPrimalGradient`:
`Op.get("relax.add").get_attr("FPrimalGradient")(orig_var, orig_call, output_grad, ctx)`
returns one Expr per argument, and an argument without a gradient (indices, shapes, boolean
inputs) gets `relax.grad.no_grad(arg)`; a tuple argument (concat's) gets a Tuple. The op
table's rules (grad.py) take the same four arguments and say "no gradient" with None, so this
module only translates: there is one set of rules.

`relax.op.grad.no_grad(x)` marks "no gradient flows to x". Built, it is zeros for a tensor
(the contribution of a constant) and the value itself for a shape or scalar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import topi
from ...ir.op import register_op_attr_provider
from ..expr import Call, Expr, Op, Tuple, TupleGetItem
from ..struct_info import StructInfo, TensorStructInfo
from ._table import OpPattern, make_call, register_op
from .shape_ops import BUILTIN_LOWERING


def _infer_no_grad(call: Call) -> StructInfo:
    return call.args[0].struct_info


_no_grad = register_op(
    "relax.grad.no_grad",
    _infer_no_grad,
    lambda x: topi.full(x.shape, x.dtype, 0),
    lambda x: np.zeros_like(x),
    OpPattern.ELEMWISE,
)


def no_grad(x: Expr) -> Call:
    """`x` marked as receiving no gradient (TVM's `relax.op.grad.no_grad`)."""
    return make_call(_no_grad, (x,))


def _lower_no_grad(call: Call) -> Any:
    # a tensor becomes zeros through the TE row; a shape or scalar is passed through unchanged
    if isinstance(call.args[0].struct_info, TensorStructInfo):
        return None
    return call.args[0]


BUILTIN_LOWERING["relax.grad.no_grad"] = _lower_no_grad


def _no_grad_of(arg: Expr, grad: Any) -> Expr:
    if grad is None:
        return no_grad(arg)
    if isinstance(grad, list | tuple):  # a tuple argument: one gradient per field
        fields = arg.fields if isinstance(arg, Tuple) else None
        out = []
        for i, g in enumerate(grad):
            field = fields[i] if fields is not None else TupleGetItem(arg, i)
            out.append(_no_grad_of(field, g))
        return Tuple(tuple(out))
    return grad


def _primal_gradient(op: Op) -> Callable | None:
    from .grad import NOT_DIFFERENTIABLE

    op_def = getattr(op, "op_def", None)
    if op_def is None:
        return None
    if op_def.grad is None:
        if op.name not in NOT_DIFFERENTIABLE:
            return None  # a differentiable op without a rule yet (grad.NO_GRAD_RULE says why)

        def none_flows(orig_var, orig_call, output_grad, ctx):
            return [no_grad(a) for a in orig_call.args]

        return none_flows
    rule = op_def.grad

    def primal_gradient(orig_var, orig_call, output_grad, ctx):
        grads = rule(orig_var, orig_call, output_grad, ctx)
        return [_no_grad_of(a, g) for a, g in zip(orig_call.args, grads)]

    return primal_gradient


def _infer_struct_info(op: Op) -> Callable | None:
    op_def = getattr(op, "op_def", None)
    return None if op_def is None else (lambda call, ctx=None: op_def.infer(call))


def _op_pattern(op: Op) -> int | None:
    op_def = getattr(op, "op_def", None)
    return None if op_def is None else int(op_def.pattern)


register_op_attr_provider("FPrimalGradient", _primal_gradient)
register_op_attr_provider("FInferStructInfo", _infer_struct_info)
register_op_attr_provider("TOpPattern", _op_pattern)

__all__ = ["no_grad"]
