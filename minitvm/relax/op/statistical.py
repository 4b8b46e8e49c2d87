"""Reductions over axes: sum, mean, max, min, prod, variance, std (keepdims keeps reduced dims
as 1), argmax/argmin, and cumsum."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import topi
from ...ir.dtype import DataType
from ...topi import reference as ref
from ...topi.utils import normalize_axes
from ...topi.utils import prod as dims_prod
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op


def _infer_reduce(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    axis, keepdims = call.attrs["axis"], call.attrs["keepdims"]
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, -1)
    axes = normalize_axes(axis, x.ndim, I.op_name(call))
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, x.ndim if keepdims else x.ndim - len(axes))
    if keepdims:
        shape = tuple(I.dim(1) if n in axes else d for n, d in enumerate(x.shape))
    else:
        shape = tuple(d for n, d in enumerate(x.shape) if n not in axes)
    return TensorStructInfo(shape, x.dtype)


def _make_reduce(name: str, te_fn: Callable, np_fn: Callable) -> Callable[..., Call]:
    op = register_op(
        f"relax.{name}",
        _infer_reduce,
        lambda x, axis, keepdims: te_fn(x, axis, keepdims),
        lambda x, axis, keepdims: ref.reduce(np_fn, x, axis, keepdims),
        OpPattern.COMM_REDUCE,
    )

    def build(x: Expr, axis: Any = None, keepdims: bool = False) -> Call:
        axes = (
            None
            if axis is None
            else ((int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis))
        )
        return make_call(op, (x,), {"axis": axes, "keepdims": bool(keepdims)})

    build.__name__ = name
    build.__doc__ = (
        f"{name} over `axis` (None: all axes): `relax.op.{name}(x, axis=[1], keepdims=True)`."
    )
    return build


sum = _make_reduce("sum", topi.sum, np.sum)
mean = _make_reduce("mean", topi.mean, np.mean)
max = _make_reduce("max", topi.max, np.max)
min = _make_reduce("min", topi.min, np.min)
prod = _make_reduce("prod", topi.prod, np.prod)


# ----------------------------------------------------------------------------- cumsum


def _infer_cumsum(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    dtype = call.attrs["dtype"] or x.dtype
    if call.attrs["axis"] is None:
        if x.shape is None:
            return TensorStructInfo(None, dtype, 1)
        return TensorStructInfo((I.dim(dims_prod(x.shape)),), dtype)
    if x.ndim != -1:
        I.axis_of(call, call.attrs["axis"], x.ndim)
    return TensorStructInfo(x.shape, dtype, x.ndim if x.shape is None else -1)


def _np_cumsum(data, axis, dtype, exclusive):
    out = np.cumsum(data, axis=axis, dtype=dtype or data.dtype)
    if exclusive:
        out = out - (data.reshape(-1) if axis is None else data).astype(out.dtype)
    return out


_cumsum = register_op(
    "relax.cumsum",
    _infer_cumsum,
    topi.cumsum,
    _np_cumsum,
    OpPattern.OPAQUE,
)


def cumsum(data: Expr, axis: int | None = None, dtype: Any = None, exclusive: bool = False) -> Call:
    """Running sum along `axis` (of the flattened data when None): `relax.op.cumsum(x, 1)`."""
    attrs = {
        "axis": None if axis is None else int(axis),
        "dtype": None if dtype is None else str(DataType(dtype)),
        "exclusive": bool(exclusive),
    }
    return make_call(_cumsum, (data,), attrs)


# ----------------------------------------------------------------------------- variance / std

variance = _make_reduce("variance", topi.variance, np.var)
std = _make_reduce("std", topi.std, np.std)


# ----------------------------------------------------------------------------- argmax / argmin


def _infer_arg_reduce(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    axis, keepdims = call.attrs["axis"], call.attrs["keepdims"]
    if x.ndim == -1:
        return TensorStructInfo(None, "int64", -1)
    axes = normalize_axes(axis, x.ndim, I.op_name(call))
    if x.shape is None:
        return TensorStructInfo(None, "int64", x.ndim if keepdims else x.ndim - len(axes))
    if keepdims:
        shape = tuple(I.dim(1) if n in axes else d for n, d in enumerate(x.shape))
    else:
        shape = tuple(d for n, d in enumerate(x.shape) if n not in axes)
    return TensorStructInfo(shape, "int64")


def _make_arg_reduce(name: str, te_fn: Callable, np_fn: Callable) -> Callable[..., Call]:
    op = register_op(
        f"relax.{name}",
        _infer_arg_reduce,
        lambda x, axis, keepdims: topi.cast(te_fn(x, axis, keepdims), "int64"),
        lambda x, axis, keepdims: np.asarray(np_fn(x, axis=axis, keepdims=keepdims)).astype(
            "int64"
        ),
        OpPattern.COMM_REDUCE,
    )

    def build(x: Expr, axis: int | None = None, keepdims: bool = False) -> Call:
        return make_call(
            op, (x,), {"axis": None if axis is None else int(axis), "keepdims": bool(keepdims)}
        )

    build.__name__ = name
    build.__doc__ = (
        f"int64 index of the {name[3:]} along `axis` (of the flattened x when None; the "
        f"first on ties, as numpy): `relax.op.{name}(x, axis=1)`."
    )
    return build


argmax = _make_arg_reduce("argmax", topi.argmax, np.argmax)
argmin = _make_arg_reduce("argmin", topi.argmin, np.argmin)
