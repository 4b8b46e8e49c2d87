"""relax.gather_elements, relax.arange and relax.sparse_reshape: the index ops Relay's
`gather`, `arange` and `sparse_reshape` become (TE in topi/indexing.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import DTypeError, ShapeError
from ...ir.dtype import DataType
from ...tir.expr import FloatImm, IntImm, PrimExpr
from ...topi import indexing as topi_index
from ...topi.utils import const_int
from ..expr import Call, Expr, PrimValue
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op


def _require_int(call: Call, sinfo: TensorStructInfo, pname: str) -> None:
    if sinfo.dtype is not None and not DataType(sinfo.dtype).is_int:
        raise DTypeError(f"{call.op.name}: {pname} must have an integer dtype, got {sinfo.dtype}")


# ----------------------------------------------------------------------------- gather_elements


def _infer_gather(call: Call) -> StructInfo:
    data = I.tensor_arg(call, 0, "data")
    indices = I.tensor_arg(call, 1, "indices")
    _require_int(call, indices, "indices")
    if data.ndim != -1 and indices.ndim != -1 and data.ndim != indices.ndim:
        raise ShapeError(
            f"relax.gather_elements: indices has rank {indices.ndim}, data has rank "
            f"{data.ndim}; they must have the same rank"
        )
    if data.ndim != -1:
        I.axis_of(call, call.attrs["axis"], data.ndim)
    if indices.shape is None:
        return TensorStructInfo(None, data.dtype, indices.ndim)
    return TensorStructInfo(indices.shape, data.dtype)


def _np_gather(data, indices, axis):
    dim = data.shape[axis]
    if np.any((indices < -dim) | (indices >= dim)):
        raise ShapeError(
            f"relax.gather_elements: an index is outside [-{dim}, {dim}) on axis {axis}"
        )
    return np.take_along_axis(data, np.where(indices < 0, indices + dim, indices), axis)


_gather = register_op(
    "relax.gather_elements",
    _infer_gather,
    lambda data, indices, axis: topi_index.gather(data, axis, indices),
    _np_gather,
    OpPattern.INJECTIVE,
)


def gather_elements(data: Expr, indices: Expr, axis: int = 0) -> Call:
    """out[i][j] = data[indices[i][j]][j] (axis 0): numpy's take_along_axis; an index may be
    negative (from the end) and one outside the axis is a run-time error."""
    return make_call(_gather, (data, indices), {"axis": int(axis)})


# ----------------------------------------------------------------------------- arange


def _arange_bounds(call: Call) -> tuple:
    bounds = []
    for name, arg in zip(("start", "end", "step"), call.args, strict=True):
        if not isinstance(arg, PrimValue):
            raise ShapeError(
                f"relax.arange: {name} must be a PrimValue (R.prim_value(T.int64(0)) or a Python "
                f"number), got {type(arg).__name__}"
            )
        bounds.append(arg.value)
    return tuple(bounds)


def _infer_arange(call: Call) -> StructInfo:
    n = topi_index.arange_length(*_arange_bounds(call))
    return TensorStructInfo((n,), call.attrs["dtype"])


_arange = register_op(
    "relax.arange",
    _infer_arange,
    lambda start, end, step, dtype: topi_index.arange(start, end, step, dtype),
    lambda start, end, step, dtype: np.arange(start, end, step, dtype="float64").astype(dtype),
    OpPattern.INJECTIVE,
)


def _arange_bound(name: str, v: Any) -> PrimValue:
    """A bound as a PrimValue: ints become int64, Python floats float64 (numpy's precision)."""
    if isinstance(v, PrimValue):
        return v
    if isinstance(v, PrimExpr):
        return PrimValue(v)
    if isinstance(v, np.integer | np.floating):
        v = v.item()
    if isinstance(v, int) and not isinstance(v, bool):
        return PrimValue(IntImm("int64", v))
    if isinstance(v, float):
        return PrimValue(FloatImm("float64", v))
    raise ShapeError(f"relax.arange: {name} must be a number, a PrimExpr or a PrimValue, got {v!r}")


def arange(start: Any, end: Any = None, step: Any = 1, dtype: str | None = None) -> Call:
    """numpy.arange with bounds that are numbers or PrimValues (symbolic lengths allowed), as
    TVM: `relax.op.arange(0, n, 1, "int64")`; dtype None is int64 for integer bounds, float32
    otherwise."""
    if end is None:
        start, end = 0, start
    bounds = tuple(
        _arange_bound(name, v) for name, v in (("start", start), ("end", end), ("step", step))
    )
    if const_int(bounds[2].value) == 0:
        raise ShapeError("relax.arange: step must not be 0")
    if dtype is None:
        ints = all(DataType(b.value.dtype).is_int for b in bounds)
        dtype = "int64" if ints else "float32"
    return make_call(_arange, bounds, {"dtype": str(DataType(dtype))})


# ----------------------------------------------------------------------------- sparse_reshape


def _infer_sparse_reshape(call: Call) -> StructInfo:
    idx = I.tensor_arg(call, 0, "sparse_indices")
    prev = I.tensor_arg(call, 1, "prev_shape")
    new = I.tensor_arg(call, 2, "new_shape")
    for name, s, rank in (
        ("sparse_indices", idx, 2),
        ("prev_shape", prev, 1),
        ("new_shape", new, 1),
    ):
        _require_int(call, s, name)
        I.require_ndim(call, s, name, (rank,))
    if idx.shape is None or new.shape is None:
        raise ShapeError(
            "relax.sparse_reshape: sparse_indices and new_shape need static shapes, got "
            f"{I.fmt(idx)} and {I.fmt(new)}"
        )
    ranks = (
        (None, None) if prev.shape is None else (const_int(prev.shape[0]), const_int(idx.shape[1]))
    )
    if None not in ranks and ranks[0] != ranks[1]:
        raise ShapeError(
            f"relax.sparse_reshape: prev_shape has {ranks[0]} dims but sparse_indices "
            f"addresses {ranks[1]}"
        )
    return TupleStructInfo(
        (
            TensorStructInfo((idx.shape[0], new.shape[0]), idx.dtype),
            TensorStructInfo(new.shape, idx.dtype),
        )
    )


def _np_sparse_reshape(sparse_indices, prev_shape, new_shape):
    prev = [int(d) for d in prev_shape]
    new = [int(d) for d in new_shape]
    total = int(np.prod(prev))
    if new.count(-1) > 1:
        raise ShapeError(f"relax.sparse_reshape: new_shape {new} has more than one -1")
    if -1 in new:
        known = int(np.prod([d for d in new if d != -1]))
        new[new.index(-1)] = total // known if known else 0
    if int(np.prod(new)) != total:
        raise ShapeError(f"relax.sparse_reshape: cannot reshape {prev} into {list(new_shape)}")
    flat = np.ravel_multi_index(tuple(sparse_indices.T), prev) if len(sparse_indices) else []
    out = np.stack(np.unravel_index(flat, new), axis=1) if len(sparse_indices) else sparse_indices
    dtype = sparse_indices.dtype
    return out.astype(dtype).reshape(len(sparse_indices), len(new)), np.asarray(new, dtype)


_sparse_reshape = register_op(
    "relax.sparse_reshape",
    _infer_sparse_reshape,
    topi_index.sparse_reshape,
    _np_sparse_reshape,
    OpPattern.OPAQUE,
)


def sparse_reshape(sparse_indices: Expr, prev_shape: Expr, new_shape: Expr) -> Call:
    """TensorFlow's sparse_reshape: (new COO indices, resolved new shape) as a tuple."""
    return make_call(_sparse_reshape, (sparse_indices, prev_shape, new_shape))


__all__ = ["arange", "gather_elements", "sparse_reshape"]
