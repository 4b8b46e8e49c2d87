"""SimplifyInference: inference-time forms of training ops.

`batch_norm(x, gamma, beta, mean, var)[0]` becomes `x * scale + shift` with
`scale = gamma / sqrt(var + eps)` and `shift = beta - mean * scale`, broadcast along `axis`
(center=False drops beta, scale=False drops gamma); its outputs 1 and 2 are the moving mean
and variance unchanged. `dropout(x)[0]` becomes `x`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..expr import Call, Constant, Expr, Function, Op, TupleGetItem
from ..expr_functor import ExprMutator
from ..op import tensor as T
from ..type_infer import infer_type


def _bn_output(call: Call, index: int, data_type: Any) -> Expr:
    data, gamma, beta, mean, var = call.args
    if index != 0:
        return (mean, var)[index - 1]
    attrs = call.attrs
    ndim = len(data_type.shape)
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + ndim
    dtype = data_type.dtype
    eps = Constant(np.array(attrs.epsilon, dtype=dtype))
    scale = T.rsqrt(T.add(var, eps))
    if attrs.scale:
        scale = T.multiply(scale, gamma)
    shift = T.negative(T.multiply(mean, scale))
    if attrs.center:
        shift = T.add(shift, beta)
    trailing = ndim - axis - 1  # a (C,) vector broadcasts along `axis` as (C, 1, ..., 1)
    if trailing:
        scale, shift = T.expand_dims(scale, 1, trailing), T.expand_dims(shift, 1, trailing)
    return T.add(T.multiply(data, scale), shift)


# op name -> (rewritten call, output index, type of its first argument) -> replacement
# (None: keep the projection)
_RULES: dict[str, Any] = {
    "nn.batch_norm": _bn_output,
    "nn.dropout": lambda call, index, _: call.args[0] if index == 0 else None,
}


class _Simplifier(ExprMutator):
    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem(item)
        call = new.tuple_value
        if isinstance(call, Call) and isinstance(call.op, Op) and call.op.name in _RULES:
            # types are on the original nodes (the rewritten ones are not inferred yet)
            out = _RULES[call.op.name](call, new.index, item.tuple_value.args[0].checked_type)
            if out is not None:
                return out
        return new

    def visit_function(self, func: Function) -> Expr:
        return func if func.attrs.get("Primitive") else super().visit_function(func)


def simplify_inference(func: Function) -> Function:
    """`func` with batch_norm and dropout in their inference forms."""
    infer_type(func)  # the rewrite reads the data's rank and dtype
    return _Simplifier().visit(func)
