"""ONNX ops whose output shape depends on input values: NonZero, Unique, NonMaxSuppression and
Compress with a condition computed at run time.

Each becomes a relax op that the VM runs as a checked builtin (`R.nonzero`, `R.unique`,
`R.vision.all_class_non_max_suppression`); the sizes it finds are bound to fresh symbolic dims
with match_cast, so the kernels after it are compiled once for any count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import Var as TirVar
from ... import op as R
from ...expr import Expr, TupleGetItem
from ...struct_info import TensorStructInfo
from ._helpers import _axis, _dtype, _ndim, _prod, shape_of
from ._runtime_axes import dims_tensor


def _fresh(ctx) -> TirVar:
    """A new symbolic dim, numbered with those of run-time shapes (ctx.runtime_shape's)."""
    var = TirVar(f"rt{ctx.runtime_dims}", "int64")
    ctx.runtime_dims += 1
    return var


def _named(ctx, value: Expr, dims: tuple) -> Expr:
    """`value` with its dims named (the VM checks they hold)."""
    return ctx.bb.match_cast(value, TensorStructInfo(dims, _dtype(value)))


def _data_input(ctx, value: Any, what: str) -> Expr:
    x = ctx.expr(value)
    if not isinstance(x.struct_info, TensorStructInfo) or x.struct_info.shape is None:
        raise OpAttributeUnImplemented(
            f"input '{what}' has unknown rank ({x.struct_info}); fix its dims in shape_dict"
        )
    return x


def _nonzero(ctx, inputs, attrs):
    """NonZero: (rank, count) int64 indices; a scalar input counts as 1-d (ONNX Runtime)."""
    x = _data_input(ctx, inputs[0], "X")
    rows = max(_ndim(x), 1)
    return _named(ctx, ctx.emit(R.nonzero(x)), (rows, _fresh(ctx)))


def _unique(ctx, inputs, attrs):
    """Unique: values (ascending when sorted=1, else by first occurrence), first indices,
    inverse indices and counts; without `axis` the input is flattened (ONNX)."""
    x = _data_input(ctx, inputs[0], "X")
    shape = shape_of(x)
    sort = int(attrs.get("sorted", 1))
    if sort not in (0, 1):
        raise OpAttributeInvalid(f"attribute sorted={sort} must be 0 or 1")
    axis = attrs.get("axis")
    if axis is not None:
        if not shape:
            raise OpAttributeInvalid("attribute axis is given but the input is a scalar")
        axis = _axis(int(axis), len(shape))
    both = ctx.emit(R.unique(x, bool(sort), True, True, True, axis))
    count = _fresh(ctx)
    if axis is None:
        values_dims, length = (count,), _prod(shape) if shape else 1
    else:
        values_dims = shape[:axis] + (count,) + shape[axis + 1 :]
        length = shape[axis]
    values = _named(ctx, ctx.emit(TupleGetItem(both, 0)), values_dims)
    first = _named(ctx, ctx.emit(TupleGetItem(both, 1)), (count,))
    inverse = _named(ctx, ctx.emit(TupleGetItem(both, 2)), (length,))
    counts = _named(ctx, ctx.emit(TupleGetItem(both, 3)), (count,))
    return [values, first, inverse, counts]


def _first(ctx, cond: Expr, length: Any, x: Expr, axis: int) -> Expr:
    """cond's first `length` entries (all of it when shorter): ONNX Runtime ignores the
    entries of a condition longer than the axis."""
    (have,) = shape_of(cond)
    if isinstance(have, int) and isinstance(length, int):
        return cond if have <= length else ctx.emit(R.strided_slice(cond, [0], [0], [length]))
    end = ctx.emit(R.strided_slice(dims_tensor(ctx, x), [0], [axis], [axis + 1]))
    one, zero = ctx.expr(np.ones(1, "int64")), ctx.expr(np.zeros(1, "int64"))
    return ctx.emit(R.dynamic_strided_slice(cond, zero, end, one))


def compress_at_run_time(ctx, x: Expr, condition: Any, axis: int | None) -> Expr:
    """Compress with a condition computed at run time: take the positions nonzero reports
    (a condition shorter than the axis drops the rest, as ONNX says)."""
    cond = ctx.expr(condition)
    if _ndim(cond) != 1:
        raise OpAttributeInvalid(f"input 'condition' has rank {_ndim(cond)}; it must be 1-d")
    if axis is None:
        x, axis = ctx.emit(R.reshape(x, (-1,))), 0
    cond = _first(ctx, cond, shape_of(x)[axis], x, axis)
    k = _fresh(ctx)
    positions = _named(ctx, ctx.emit(R.nonzero(cond)), (1, k))
    positions = ctx.emit(R.reshape(positions, (k,)))
    return ctx.emit(R.take(x, positions, axis))


def _empty(ctx, dtype: str) -> Expr:
    """An omitted optional input of NonMaxSuppression: an empty tensor (the op reads it so)."""
    return ctx.expr(np.zeros((0,), dtype))


def _optional(ctx, value: Any, dtype: str) -> Expr:
    if value is None:
        return _empty(ctx, dtype)
    t = ctx.expr(value)
    if _dtype(t) != dtype:
        raise OpAttributeInvalid(f"an NMS threshold input has dtype {_dtype(t)}; expected {dtype}")
    return t


def _non_max_suppression(ctx, inputs, attrs):
    """NonMaxSuppression: [batch, class, box] rows, per batch and class by descending score."""
    boxes = _data_input(ctx, inputs[0], "boxes")
    scores = _data_input(ctx, inputs[1], "scores")
    more = list(inputs[2:]) + [None] * (5 - len(inputs))
    limit = _optional(ctx, more[0], "int64")
    iou = _optional(ctx, more[1], "float32")
    floor = _optional(ctx, more[2], "float32")
    center = int(attrs.get("center_point_box", 0))
    if center not in (0, 1):
        raise OpAttributeInvalid(f"attribute center_point_box={center} must be 0 or 1")
    both = ctx.emit(
        R.vision.all_class_non_max_suppression(
            boxes, scores, limit, iou, floor, "onnx", center_point_box=center
        )
    )
    return _named(ctx, ctx.emit(TupleGetItem(both, 0)), (_fresh(ctx), 3))


DATA_DEPENDENT_CONVERTERS = {
    "NonZero": _nonzero,
    "Unique": _unique,
    "NonMaxSuppression": _non_max_suppression,
}

__all__ = ["DATA_DEPENDENT_CONVERTERS", "compress_at_run_time"]
