"""Tensor creation: zeros, ones, full (shape given as a ShapeExpr); tril / triu (TVM keeps them
with creation ops: the triangle of an existing tensor)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import topi
from ...error import DTypeError, ShapeError
from ...ir.dtype import DataType
from ...tir.expr import IntImm, PrimExpr
from ..expr import Call, Expr, PrimValue, ShapeExpr, const
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op


def _as_shape_expr(shape: Any) -> Expr:
    return shape if isinstance(shape, Expr) else ShapeExpr(tuple(shape))


def _infer_fill(call: Call) -> StructInfo:
    shape = I.shape_arg(call, 0, "shape")
    dtype = call.attrs["dtype"]
    if len(call.args) > 1:  # full: the fill value must be a scalar
        v = call.args[1].struct_info
        ok = isinstance(v, PrimStructInfo) or (isinstance(v, TensorStructInfo) and v.ndim == 0)
        if not ok:
            raise DTypeError(
                f"relax.full: fill_value must be a scalar (0-d tensor or PrimValue), got {v}"
            )
        if dtype is None:
            dtype = v.dtype
    return (
        TensorStructInfo(shape, dtype)
        if shape is not None
        else TensorStructInfo(None, dtype, call.args[0].struct_info.ndim)
    )


def _te_fill(value: Any):
    return lambda shape, dtype: topi.full(shape, dtype, value)


def _np_fill(value: Any):
    return lambda shape, dtype: np.full(tuple(int(s) for s in shape), value, dtype=dtype)


def _te_full(shape, fill_value, dtype):
    value = fill_value[()] if not isinstance(fill_value, PrimExpr) else fill_value
    return topi.full(shape, dtype or fill_value.dtype, value)


def _np_full(shape, fill_value, dtype):
    return np.full(
        tuple(int(s) for s in shape), fill_value, dtype=dtype or np.asarray(fill_value).dtype
    )


_zeros = register_op("relax.zeros", _infer_fill, _te_fill(0), _np_fill(0), OpPattern.ELEMWISE)
_ones = register_op("relax.ones", _infer_fill, _te_fill(1), _np_fill(1), OpPattern.ELEMWISE)
_full = register_op("relax.full", _infer_fill, _te_full, _np_full, OpPattern.ELEMWISE)


def zeros(shape: Any, dtype: str = "float32") -> Call:
    """A tensor of zeros: `relax.op.zeros((n, 4), "float32")`."""
    return make_call(_zeros, (_as_shape_expr(shape),), {"dtype": str(DataType(dtype))})


def ones(shape: Any, dtype: str = "float32") -> Call:
    """A tensor of ones."""
    return make_call(_ones, (_as_shape_expr(shape),), {"dtype": str(DataType(dtype))})


def full(shape: Any, fill_value: Any, dtype: str | None = None) -> Call:
    """A tensor filled with `fill_value` (a scalar constant, a PrimValue or a Python number)."""
    if isinstance(fill_value, PrimExpr):
        fill_value = PrimValue(fill_value)
    elif not isinstance(fill_value, Expr):
        fill_value = const(fill_value, dtype)
    attrs = {"dtype": None if dtype is None else str(DataType(dtype))}
    return make_call(_full, (_as_shape_expr(shape), fill_value), attrs)


# ----------------------------------------------------------------------------- *_like


def _infer_like(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    dtype = call.attrs["dtype"] or x.dtype
    if len(call.args) > 1:  # full_like: the fill value must be a scalar
        v = call.args[1].struct_info
        if not (isinstance(v, PrimStructInfo) or (isinstance(v, TensorStructInfo) and v.ndim == 0)):
            raise DTypeError(
                f"relax.full_like: fill_value must be a scalar (0-d tensor or PrimValue), got {v}"
            )
    if x.shape is not None:
        return TensorStructInfo(x.shape, dtype)
    return TensorStructInfo(None, dtype, x.ndim)


def _like_rows(value: Any) -> tuple:
    return (
        lambda x, dtype: topi.full(x.shape, dtype or x.dtype, value),
        lambda x, dtype: np.full(x.shape, value, dtype=dtype or x.dtype),
    )


def _te_full_like(x, fill_value, dtype):
    value = fill_value[()] if not isinstance(fill_value, PrimExpr) else fill_value
    return topi.full(x.shape, dtype or x.dtype, value)


def _np_full_like(x, fill_value, dtype):
    return np.full(x.shape, fill_value, dtype=dtype or x.dtype)


_zeros_like = register_op("relax.zeros_like", _infer_like, *_like_rows(0), OpPattern.ELEMWISE)
_ones_like = register_op("relax.ones_like", _infer_like, *_like_rows(1), OpPattern.ELEMWISE)
_full_like = register_op(
    "relax.full_like", _infer_like, _te_full_like, _np_full_like, OpPattern.ELEMWISE
)


def _dtype_or_none(dtype: Any) -> str | None:
    return None if dtype is None or str(dtype) in ("", "void") else str(DataType(dtype))


def zeros_like(x: Expr, dtype: str | None = None) -> Call:
    """Zeros of x's shape, in `dtype` (default x's dtype), as TVM's `relax.op.zeros_like`."""
    return make_call(_zeros_like, (x,), {"dtype": _dtype_or_none(dtype)})


def ones_like(x: Expr, dtype: str | None = None) -> Call:
    """Ones of x's shape, in `dtype` (default x's dtype)."""
    return make_call(_ones_like, (x,), {"dtype": _dtype_or_none(dtype)})


def full_like(x: Expr, fill_value: Any, dtype: str | None = None) -> Call:
    """x's shape filled with the scalar `fill_value`, in `dtype` (default x's dtype)."""
    if isinstance(fill_value, PrimExpr):
        fill_value = PrimValue(fill_value)
    elif not isinstance(fill_value, Expr):
        x_dtype = getattr(x.struct_info, "dtype", None)
        fill_value = const(fill_value, _dtype_or_none(dtype) or (str(x_dtype) if x_dtype else None))
    return make_call(_full_like, (x, fill_value), {"dtype": _dtype_or_none(dtype)})


# ----------------------------------------------------------------------------- tril / triu


def _infer_trilu(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    k = call.args[1].struct_info if len(call.args) > 1 else None
    if not isinstance(k, PrimStructInfo):
        raise ShapeError(
            f"{I.op_name(call)}: k must be a PrimValue (an int or an integer expression), got "
            f"{type(k).__name__}"
        )
    if x.ndim != -1 and x.ndim < 2:
        raise ShapeError(
            f"{I.op_name(call)}: x has shape {I.fmt(x)} (rank {x.ndim}); it needs at least two "
            "dims (the triangle is taken over the last two)"
        )
    return x  # same shape, dtype and device: the other triangle is zeroed


def _trilu_rows(upper: bool) -> tuple:
    np_fn = np.triu if upper else np.tril
    return (
        lambda x, k: topi.trilu(x, k, upper),
        lambda x, k: np_fn(x, int(k)),
    )


_tril = register_op("relax.tril", _infer_trilu, *_trilu_rows(False), OpPattern.ELEMWISE)
_triu = register_op("relax.triu", _infer_trilu, *_trilu_rows(True), OpPattern.ELEMWISE)


def _offset(k: Any) -> Expr:
    if isinstance(k, Expr):
        return k
    if isinstance(k, PrimExpr):
        return PrimValue(k)
    if isinstance(k, bool) or not isinstance(k, int):
        raise ShapeError(f"relax.tril/triu: k must be an int or an integer expression, got {k!r}")
    return PrimValue(IntImm("int64", k))


def tril(x: Expr, k: Any = 0) -> Call:
    """x with the elements above diagonal `k` of its last two dims zeroed (numpy's tril):
    `relax.op.tril(scores, k=0)`; k may be an int, a PrimExpr or a PrimValue."""
    return make_call(_tril, (x, _offset(k)))


def triu(x: Expr, k: Any = 0) -> Call:
    """x with the elements below diagonal `k` of its last two dims zeroed (numpy's triu)."""
    return make_call(_triu, (x, _offset(k)))
