"""relax.sort, relax.argsort and relax.topk (TVM's names and signatures; kernels in
topi/sorting.py). All three are stable (equal elements keep their order) and put NaN where
numpy and torch do: last when ascending, first when descending."""

from __future__ import annotations

import numpy as np

from ...error import ShapeError
from ...ir.dtype import DataType
from ...topi import sorting as topi_sort
from ...topi.utils import const_int
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op

_RET_TYPES = ("both", "values", "indices")


def np_argsort(data: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The numpy reference order: stable, NaN largest."""
    x = np.moveaxis(data, axis, -1)
    if not descending:
        order = np.argsort(x, axis=-1, kind="stable")
    elif x.dtype.kind == "f":
        nan = np.isnan(x)
        # lexsort is stable; its last key is the primary one: NaN first, then larger first
        order = np.lexsort((-np.where(nan, 0, x), ~nan), axis=-1)
    else:  # ~x reverses the order of integers without overflow (bool: as int8)
        order = np.argsort(~x.astype(np.int8 if x.dtype == bool else x.dtype), -1, kind="stable")
    return np.moveaxis(order, -1, axis)


# ----------------------------------------------------------------------------- sort, argsort


def _infer_sort(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    if x.ndim != -1:
        I.axis_of(call, call.attrs["axis"], x.ndim)
    dtype = call.attrs.get("dtype", "keep")
    if dtype == "keep":
        return x
    return I.with_shape(x, x.shape, x.ndim, dtype)


def _np_sort(x, axis, descending):
    return np.take_along_axis(x, np_argsort(x, axis, descending), axis)


def _np_argsort(x, axis, descending, dtype):
    return np_argsort(x, axis, descending).astype(dtype)


_sort = register_op(
    "relax.sort",
    _infer_sort,
    lambda x, axis, descending: topi_sort.sort(x, axis, not descending),
    _np_sort,
    OpPattern.OPAQUE,
)
_argsort = register_op(
    "relax.argsort",
    _infer_sort,
    lambda x, axis, descending, dtype: topi_sort.argsort(x, axis, not descending, dtype),
    _np_argsort,
    OpPattern.OPAQUE,
)


def sort(x: Expr, axis: int = -1, descending: bool = False) -> Call:
    """`x` sorted along `axis`: `relax.op.sort(x, axis=1, descending=True)`."""
    return make_call(_sort, (x,), {"axis": int(axis), "descending": bool(descending)})


def argsort(data: Expr, axis: int = -1, descending: bool = False, dtype: str = "int32") -> Call:
    """The positions that sort `data` along `axis` (ties: lower position first)."""
    attrs = {"axis": int(axis), "descending": bool(descending), "dtype": str(DataType(dtype))}
    return make_call(_argsort, (data,), attrs)


# ----------------------------------------------------------------------------- topk


def _infer_topk(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    a = call.attrs
    if x.ndim == -1:
        fields = (TensorStructInfo(None, x.dtype, -1), TensorStructInfo(None, a["dtype"], -1))
    else:
        axis = I.axis_of(call, a["axis"], x.ndim)
        if x.shape is None:
            fields = (
                TensorStructInfo(None, x.dtype, x.ndim),
                TensorStructInfo(None, a["dtype"], x.ndim),
            )
        else:
            n = x.shape[axis]
            k = a["k"]
            if k >= 1 and const_int(n) is not None and k > const_int(n):
                raise ShapeError(
                    f"relax.topk: k={k} is larger than data's axis {axis} (length {const_int(n)}); "
                    "use k at most the axis length"
                )
            shape = list(x.shape)
            shape[axis] = n if k < 1 else I.dim(k)
            fields = (
                TensorStructInfo(tuple(shape), x.dtype),
                TensorStructInfo(tuple(shape), a["dtype"]),
            )
    kind = a["ret_type"]
    return TupleStructInfo(fields) if kind == "both" else fields[_RET_TYPES.index(kind) - 1]


def _np_topk(x, k, axis, ret_type, largest, dtype):
    if k > x.shape[axis]:
        raise ShapeError(f"topk: k={k} is larger than the length of data's axis {axis}")
    order = np_argsort(x, axis, largest)
    if k >= 1:
        order = np.take(order, np.arange(k), axis)
    values = np.take_along_axis(x, order, axis)
    both = (values, order.astype(dtype))
    return both if ret_type == "both" else both[_RET_TYPES.index(ret_type) - 1]


def _te_topk(x, k, axis, ret_type, largest, dtype):
    return topi_sort.topk(x, k, axis, ret_type, not largest, dtype)


_topk = register_op("relax.topk", _infer_topk, _te_topk, _np_topk, OpPattern.OPAQUE)


def topk(
    data: Expr,
    k: int = 1,
    axis: int = -1,
    ret_type: str = "both",
    largest: bool = True,
    dtype: str = "int32",
) -> Call:
    """The `k` largest (smallest when not `largest`) elements along `axis`, in order, and their
    positions (ties: lower position first). ret_type "both" gives a (values, indices) tuple;
    k < 1 takes the whole axis (as TVM)."""
    if ret_type not in _RET_TYPES:
        raise ShapeError(f"relax.topk: ret_type {ret_type!r} must be one of {list(_RET_TYPES)}")
    attrs = {
        "k": int(k),
        "axis": int(axis),
        "ret_type": str(ret_type),
        "largest": bool(largest),
        "dtype": str(DataType(dtype)),
    }
    return make_call(_topk, (data,), attrs)


__all__ = ["argsort", "sort", "topk"]
