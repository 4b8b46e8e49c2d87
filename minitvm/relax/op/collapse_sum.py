"""collapse_sum_to / collapse_sum_like: sum a tensor back down to a shape it was broadcast from.

The reverse of `broadcast_to`: `collapse_sum_to(x, (3, 1))` of an x of shape (2, 3, 4) sums the
leading axis and axis 2. Reading the two shapes from the right, each target dim must equal x's
dim or be 1 (then that axis is summed); x's extra leading axes are summed. TVM refuses a pair of
dims it cannot prove equal (a symbolic dim against another one): match_cast first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te, topi
from ...error import ShapeError
from ...topi.utils import const_int, fmt_dim, fmt_shape, prove_equal
from ..expr import Call, Expr, ShapeExpr
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op


def _check_collapse(call: Call, data: tuple, target: tuple) -> None:
    """Each target dim, matched from the right, equals data's dim or is 1."""
    for k in range(1, min(len(data), len(target)) + 1):
        d, t = data[-k], target[-k]
        if const_int(t) == 1 or prove_equal(d, t):
            continue
        known = const_int(d) is not None and const_int(t) is not None
        why = "do not match" if known else "cannot be proven equal (match_cast them first)"
        raise ShapeError(
            f"{I.op_name(call)}: data has shape {fmt_shape(data)}, target shape "
            f"{fmt_shape(target)}: data dim {len(data) - k} ({fmt_dim(d)}) and target dim "
            f"{len(target) - k} ({fmt_dim(t)}) {why}; each target dim must equal the data's "
            "dim or be 1"
        )
    if len(target) > len(data):
        raise ShapeError(
            f"{I.op_name(call)}: target shape {fmt_shape(target)} has more dims than data "
            f"{fmt_shape(data)}; a sum cannot add dims"
        )


def _infer_collapse_sum_to(call: Call) -> StructInfo:
    data = I.tensor_arg(call, 0, "data")
    target = I.shape_arg(call, 1, "shape")
    if target is None:
        return TensorStructInfo(None, data.dtype, call.args[1].struct_info.ndim)
    if data.shape is not None:
        _check_collapse(call, data.shape, target)
    return TensorStructInfo(target, data.dtype)


def _infer_collapse_sum_like(call: Call) -> StructInfo:
    data = I.tensor_arg(call, 0, "data")
    like = I.tensor_arg(call, 1, "collapse_target")
    if data.shape is not None and like.shape is not None:
        _check_collapse(call, data.shape, like.shape)
    return TensorStructInfo(like.shape, data.dtype, like.ndim if like.shape is None else -1)


def _summed_axes(shape: tuple, target: tuple) -> list[int]:
    lead = len(shape) - len(target)
    return list(range(lead)) + [
        lead + k
        for k, t in enumerate(target)
        if const_int(t) == 1 and const_int(shape[lead + k]) != 1
    ]


def _te_collapse_sum_to(data: te.Tensor, shape: Any) -> te.Tensor:
    target = tuple(shape)
    axes = _summed_axes(tuple(data.shape), target)
    if not axes:
        return topi.reshape(data, target)
    return topi.reshape(topi.sum(data, axis=axes, keepdims=False), target)


def _np_collapse_sum_to(data: np.ndarray, shape: Any) -> np.ndarray:
    target = tuple(int(s) for s in shape)
    axes = tuple(_summed_axes(data.shape, target))
    return np.sum(data, axis=axes).reshape(target).astype(data.dtype)


_collapse_sum_to = register_op(
    "relax.collapse_sum_to",
    _infer_collapse_sum_to,
    _te_collapse_sum_to,
    _np_collapse_sum_to,
    OpPattern.COMM_REDUCE,
)
_collapse_sum_like = register_op(
    "relax.collapse_sum_like",
    _infer_collapse_sum_like,
    lambda data, like: _te_collapse_sum_to(data, like.shape),
    lambda data, like: _np_collapse_sum_to(data, like.shape),
    OpPattern.COMM_REDUCE,
)


def collapse_sum_to(data: Expr, shape: Any) -> Call:
    """Sum `data` down to `shape` (the reverse of broadcast_to): `collapse_sum_to(g, (1, 4))`."""
    if not isinstance(shape, Expr):
        shape = ShapeExpr(tuple(shape) if isinstance(shape, tuple | list) else (shape,))
    return make_call(_collapse_sum_to, (data, shape))


def collapse_sum_like(data: Expr, collapse_target: Expr) -> Call:
    """Sum `data` down to the shape of `collapse_target` (only its shape is read)."""
    return make_call(_collapse_sum_like, (data, collapse_target))


__all__ = ["collapse_sum_like", "collapse_sum_to"]
