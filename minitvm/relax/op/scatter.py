"""relax.scatter_elements, relax.scatter_nd, relax.gather_nd and relax.one_hot (TVM's names
and signatures, ONNX's index layouts; kernels in topi/scatter.py).

Negative indices count from the end of their axis; an index outside [-dim, dim) is a run-time
error of the compiled kernel (and of the numpy reference), never a read or write elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import DTypeError, ShapeError
from ...ir.dtype import DataType
from ...tir.expr import PrimExpr, make_const
from ...topi import scatter as topi_scatter
from ...topi.utils import const_int, prove_equal
from ..expr import Call, Expr, PrimValue
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op


def _require_int(call: Call, sinfo: TensorStructInfo, pname: str) -> None:
    if sinfo.dtype is not None and not DataType(sinfo.dtype).is_int:
        raise DTypeError(f"{call.op.name}: {pname} must have an integer dtype, got {sinfo.dtype}")


def _require_reduction(call: Call) -> None:
    if call.attrs["reduction"] not in topi_scatter.REDUCTIONS:
        raise ShapeError(
            f"{call.op.name}: reduction {call.attrs['reduction']!r} is not one of "
            f"{list(topi_scatter.REDUCTIONS)}"
        )


def _wrap(indices: np.ndarray, dim: int, op: str, axis: int) -> np.ndarray:
    if np.any((indices < -dim) | (indices >= dim)):
        raise ShapeError(f"{op}: an index is outside [-{dim}, {dim}) on data's axis {axis}")
    return np.where(indices < 0, indices + dim, indices).astype("int64")


def _np_combine(out: np.ndarray, count: np.ndarray, target: tuple, value: Any, reduction: str):
    old = out[target]
    out[target] = {
        "update": lambda: value,
        "add": lambda: old + value,
        "mean": lambda: old + value,
        "mul": lambda: old * value,
        "min": lambda: np.minimum(old, value),
        "max": lambda: np.maximum(old, value),
    }[reduction]()
    count[target] += 1


def _np_mean(out: np.ndarray, count: np.ndarray, reduction: str) -> np.ndarray:
    if reduction != "mean":
        return out
    if out.dtype.kind == "f":
        return (out / count).astype(out.dtype)
    return (out // count).astype(out.dtype)


# ----------------------------------------------------------------------------- scatter_elements


def _infer_scatter_elements(call: Call) -> StructInfo:
    data = I.tensor_arg(call, 0, "data")
    indices = I.tensor_arg(call, 1, "indices")
    updates = I.tensor_arg(call, 2, "updates")
    _require_int(call, indices, "indices")
    _require_reduction(call)
    I.same_dtype(call, [("data", data), ("updates", updates)])
    ranks = {s.ndim for s in (data, indices, updates) if s.ndim != -1}
    if len(ranks) > 1:
        raise ShapeError(
            f"relax.scatter_elements: data, indices and updates must have the same rank, got "
            f"{I.fmt(data)}, {I.fmt(indices)} and {I.fmt(updates)}"
        )
    if data.ndim != -1:
        I.axis_of(call, call.attrs["axis"], data.ndim)
    if indices.shape is not None and updates.shape is not None:
        for k, (a, b) in enumerate(zip(indices.shape, updates.shape)):
            if const_int(a) is not None and const_int(b) is not None and not prove_equal(a, b):
                raise ShapeError(
                    f"relax.scatter_elements: indices has shape {I.fmt(indices)} but updates "
                    f"has shape {I.fmt(updates)}; they must be equal (dim {k})"
                )
    return data


def _np_scatter_elements(data, indices, updates, axis, reduction):
    out, count = data.copy(), np.ones(data.shape, "int64")
    pos = _wrap(indices, data.shape[axis], "relax.scatter_elements", axis)
    for j in np.ndindex(*indices.shape):
        target = j[:axis] + (int(pos[j]),) + j[axis + 1 :]
        _np_combine(out, count, target, updates[j], reduction)
    return _np_mean(out, count, reduction)


_scatter_elements = register_op(
    "relax.scatter_elements",
    _infer_scatter_elements,
    topi_scatter.scatter_elements,
    _np_scatter_elements,
    OpPattern.OPAQUE,
)


def scatter_elements(
    data: Expr, indices: Expr, updates: Expr, axis: int = 0, reduction: str = "update"
) -> Call:
    """ONNX's ScatterElements: a copy of `data` where out[.., indices[j], ..] (dim `axis`) is
    combined with updates[j]: "update" (the last one wins), "add", "mul", "min", "max", or
    "mean" (of data and every update landing there; TVM averages pairwise in update order,
    which differs only where an index repeats)."""
    attrs = {"axis": int(axis), "reduction": str(reduction)}
    return make_call(_scatter_elements, (data, indices, updates), attrs)


# ----------------------------------------------------------------------------- scatter_nd


def _last_dim(call: Call, indices: TensorStructInfo) -> int | None:
    if indices.shape is None:
        return None
    if not indices.shape:
        raise ShapeError(f"{call.op.name}: indices must have rank at least 1, got a scalar")
    m = const_int(indices.shape[-1])
    if m is None:
        raise ShapeError(
            f"{call.op.name}: the last dim of indices ({I.fmt(indices)}) must be a constant"
        )
    return m


def _infer_scatter_nd(call: Call) -> StructInfo:
    data = I.tensor_arg(call, 0, "data")
    indices = I.tensor_arg(call, 1, "indices")
    updates = I.tensor_arg(call, 2, "updates")
    _require_int(call, indices, "indices")
    _require_reduction(call)
    I.same_dtype(call, [("data", data), ("updates", updates)])
    m = _last_dim(call, indices)
    if m is not None and data.ndim != -1:
        if m > data.ndim:
            raise ShapeError(
                f"relax.scatter_nd: indices address {m} axes but data has rank {data.ndim}"
            )
        want = indices.ndim - 1 + data.ndim - m
        if updates.ndim != -1 and updates.ndim != want:
            raise ShapeError(
                f"relax.scatter_nd: updates has shape {I.fmt(updates)}, expected rank {want} "
                f"(indices.shape[:-1] + data.shape[{m}:])"
            )
        if None not in (data.shape, updates.shape):
            expected = tuple(indices.shape[:-1]) + tuple(data.shape[m:])
            for k, (a, b) in enumerate(zip(updates.shape, expected)):
                if None not in (const_int(a), const_int(b)) and const_int(a) != const_int(b):
                    raise ShapeError(
                        f"relax.scatter_nd: updates has shape {I.fmt(updates)}, expected "
                        f"indices.shape[:-1] + data.shape[{m}:] (dim {k} differs)"
                    )
    return data


def _np_scatter_nd(data, indices, updates, reduction):
    out, count = data.copy(), np.ones(data.shape, "int64")
    m = indices.shape[-1]
    pos = np.stack(
        [_wrap(indices[..., k], data.shape[k], "relax.scatter_nd", k) for k in range(m)], -1
    ) if m else indices.astype("int64")  # fmt: skip
    for j in np.ndindex(*indices.shape[:-1]):
        target = tuple(int(p) for p in pos[j])
        for t in np.ndindex(*data.shape[m:]):
            _np_combine(out, count, target + t, updates[j + t], reduction)
    return _np_mean(out, count, reduction)


_scatter_nd = register_op(
    "relax.scatter_nd",
    _infer_scatter_nd,
    topi_scatter.scatter_nd,
    _np_scatter_nd,
    OpPattern.OPAQUE,
)


def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "update") -> Call:
    """ONNX's ScatterND: indices (.., m) address the first m axes of `data`; each slice
    updates[j] is combined into out[indices[j]] ("update", "add", "mul", "min", "max",
    "mean")."""
    return make_call(_scatter_nd, (data, indices, updates), {"reduction": str(reduction)})


# ----------------------------------------------------------------------------- gather_nd


def _infer_gather_nd(call: Call) -> StructInfo:
    data = I.tensor_arg(call, 0, "data")
    indices = I.tensor_arg(call, 1, "indices")
    _require_int(call, indices, "indices")
    b = call.attrs["batch_dims"]
    m = _last_dim(call, indices)
    if b < 0:
        raise ShapeError(f"relax.gather_nd: batch_dims must be >= 0, got {b}")
    if m is None or data.ndim == -1:
        return TensorStructInfo(None, data.dtype, -1)
    if b + m > data.ndim or b > indices.ndim - 1:
        raise ShapeError(
            f"relax.gather_nd: batch_dims ({b}) + the last dim of indices ({m}) exceeds data's "
            f"rank {data.ndim} (or batch_dims exceeds indices' leading dims)"
        )
    if data.shape is None:
        return TensorStructInfo(None, data.dtype, indices.ndim - 1 + data.ndim - b - m)
    for k in range(b):
        a, c = data.shape[k], indices.shape[k]
        if const_int(a) is not None and const_int(c) is not None and const_int(a) != const_int(c):
            raise ShapeError(
                f"relax.gather_nd: batch dim {k} differs: data has {const_int(a)}, indices "
                f"has {const_int(c)}"
            )
    return TensorStructInfo(tuple(indices.shape[:-1]) + tuple(data.shape[b + m :]), data.dtype)


def _np_gather_nd(data, indices, batch_dims):
    b, m = batch_dims, indices.shape[-1]
    out = np.empty(indices.shape[:-1] + data.shape[b + m :], data.dtype)
    for j in np.ndindex(*indices.shape[:-1]):
        pos = tuple(
            int(_wrap(indices[j + (k,)], data.shape[b + k], "relax.gather_nd", b + k))
            for k in range(m)
        )
        out[j] = data[j[:b] + pos]
    return out


_gather_nd = register_op(
    "relax.gather_nd",
    _infer_gather_nd,
    topi_scatter.gather_nd,
    _np_gather_nd,
    OpPattern.INJECTIVE,
)


def gather_nd(data: Expr, indices: Expr, batch_dims: int = 0) -> Call:
    """ONNX's GatherND: out[b.., j..] = data[b.., indices[b.., j.., :]] (the first
    `batch_dims` axes shared)."""
    return make_call(_gather_nd, (data, indices), {"batch_dims": int(batch_dims)})


# ----------------------------------------------------------------------------- one_hot


def _scalar_dtype(call: Call, index: int, pname: str) -> Any:
    s = call.args[index].struct_info
    if isinstance(s, PrimStructInfo) or (isinstance(s, TensorStructInfo) and s.ndim == 0):
        return s.dtype
    raise ShapeError(f"relax.one_hot: {pname} must be a PrimValue or a 0-d tensor, got {s}")


def _infer_one_hot(call: Call) -> StructInfo:
    indices = I.tensor_arg(call, 0, "indices")
    _require_int(call, indices, "indices")
    on, off = _scalar_dtype(call, 1, "on_value"), _scalar_dtype(call, 2, "off_value")
    if on is not None and off is not None and DataType(on) != DataType(off):
        raise DTypeError(
            f"relax.one_hot: on_value is {on} but off_value is {off}; give them one dtype"
        )
    depth = call.attrs["depth"]
    if indices.ndim == -1:
        return TensorStructInfo(None, on, -1)
    axis = I.axis_of(call, call.attrs["axis"], indices.ndim + 1)
    if indices.shape is None:
        return TensorStructInfo(None, on, indices.ndim + 1)
    shape = tuple(indices.shape[:axis]) + (I.dim(depth),) + tuple(indices.shape[axis:])
    return TensorStructInfo(shape, on)


def _np_scalar(value: Any) -> np.ndarray:
    """A PrimValue reaches the reference as a Python number: its dtype is taken to be
    one_hot's default for such numbers (float32, int64); 0-d tensors keep theirs."""
    if isinstance(value, np.ndarray | np.generic):
        return np.asarray(value)
    return np.asarray(value, "float32" if isinstance(value, float) else "int64")


def _np_one_hot(indices, on_value, off_value, depth, axis):
    on, off = _np_scalar(on_value), _np_scalar(off_value)
    hot = indices[..., None].astype("int64") == np.arange(depth)
    axis = axis if axis >= 0 else indices.ndim + 1 + axis
    return np.moveaxis(np.where(hot, on, off).astype(on.dtype), -1, axis)


def _te_one_hot(indices, on_value, off_value, depth, axis):
    dtype = on_value.dtype
    return topi_scatter.one_hot(indices, on_value, off_value, depth, axis, str(dtype))


_one_hot = register_op(
    "relax.one_hot", _infer_one_hot, _te_one_hot, _np_one_hot, OpPattern.INJECTIVE
)


def _as_scalar(value: Any, like: Any = None) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, PrimExpr):
        return PrimValue(value)
    dtype = like or ("float32" if isinstance(value, float) else "int64")
    return PrimValue(make_const(dtype, value))


def one_hot(indices: Expr, on_value: Any, off_value: Any, depth: int, axis: int = -1) -> Call:
    """A new axis of length `depth` at `axis`: `on_value` where the position equals the index,
    `off_value` elsewhere (an index outside [0, depth) gives a row of `off_value`). The values
    are PrimValues (TVM), 0-d tensors, or Python numbers; the result has on_value's dtype."""
    on = _as_scalar(on_value)
    off = _as_scalar(
        off_value, str(on.struct_info.dtype) if not isinstance(off_value, Expr) else None
    )
    return make_call(_one_hot, (indices, on, off), {"depth": int(depth), "axis": int(axis)})


__all__ = ["gather_nd", "one_hot", "scatter_elements", "scatter_nd"]
