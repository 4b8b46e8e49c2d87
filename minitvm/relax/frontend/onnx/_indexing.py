"""ONNX's sorting and scatter/gather family: TopK, ScatterElements, Scatter, ScatterND,
GatherND, OneHot, Compress and ReverseSequence, onto relax.op.topk / scatter_elements /
scatter_nd / gather_nd / one_hot (and take / gather_elements for the last two).

Indices follow ONNX: a negative index counts from the end of its axis; an index outside the
axis is a run-time error of the compiled kernel (ONNX leaves it undefined).
"""

from __future__ import annotations

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ... import op as R
from ...expr import TupleGetItem
from ._data_dependent import compress_at_run_time
from ._helpers import _axis, _dtype, _ndim, shape_of
from ._runtime_index import one_hot_at_run_time, topk_at_run_time

# ONNX's reduction attribute -> relax's ("none" overwrites, as relax's "update")
_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _reduction(attrs: dict) -> str:
    name = attrs.get("reduction", "none")
    name = name.decode() if isinstance(name, bytes) else str(name)
    if name not in _REDUCTIONS:
        raise OpAttributeInvalid(
            f"attribute reduction={name!r} is not one of {sorted(_REDUCTIONS)}"
        )
    return _REDUCTIONS[name]


def _int64(ctx, x):
    x = ctx.expr(x)
    return x if _dtype(x) == "int64" else ctx.emit(R.astype(x, "int64"))


def _topk(ctx, inputs, attrs):
    """TopK-1 takes k as an attribute, TopK-10 as an input (known at import or at run time);
    TopK-11 adds largest and sorted (sorted=0 allows any order: the sorted one is returned)."""
    x = ctx.expr(inputs[0])
    axis = _axis(int(attrs.get("axis", -1)), _ndim(x))
    if ctx.opset < 10:
        k = int(attrs["k"]) if "k" in attrs else None
    elif ctx.known_or_none(inputs[1]) is None:
        largest = bool(attrs.get("largest", 1))
        return topk_at_run_time(ctx, x, inputs[1], axis, largest)
    else:
        k_value = np.asarray(ctx.known(inputs[1], "K")).reshape(-1)
        if k_value.size != 1:
            raise OpAttributeInvalid(f"input 'K' must hold one value, got {k_value.size}")
        k = int(k_value[0])
    if k is None or k < 0:
        raise OpAttributeInvalid(f"k must be a non-negative integer, got {k}")
    length = shape_of(x)[axis]
    if isinstance(length, int) and k > length:
        raise OpAttributeInvalid(f"k={k} is larger than the input's axis {axis} ({length})")
    if k == 0:  # relax.topk reads k < 1 as the whole axis: an empty result is a slice
        empty = ctx.emit(R.strided_slice(x, [axis], [0], [0]))
        return [empty, ctx.emit(R.astype(empty, "int64"))]
    largest = bool(attrs.get("largest", 1))
    both = ctx.emit(R.topk(x, k, axis, "both", largest, "int64"))
    return [ctx.emit(TupleGetItem(both, 0)), ctx.emit(TupleGetItem(both, 1))]


def _scatter_elements(ctx, inputs, attrs):
    """ScatterElements (and the deprecated Scatter, the same op without reduction)."""
    data = ctx.expr(inputs[0])
    axis = _axis(int(attrs.get("axis", 0)), _ndim(data))
    updates = ctx.expr(inputs[2])
    if _dtype(updates) != _dtype(data):
        updates = ctx.emit(R.astype(updates, _dtype(data)))
    indices = _int64(ctx, inputs[1])
    return ctx.emit(R.scatter_elements(data, indices, updates, axis, _reduction(attrs)))


def _scatter_nd(ctx, inputs, attrs):
    data, updates = ctx.expr(inputs[0]), ctx.expr(inputs[2])
    indices = _int64(ctx, inputs[1])
    return ctx.emit(R.scatter_nd(data, indices, updates, _reduction(attrs)))


def _gather_nd(ctx, inputs, attrs):
    data, indices = ctx.expr(inputs[0]), _int64(ctx, inputs[1])
    return ctx.emit(R.gather_nd(data, indices, int(attrs.get("batch_dims", 0))))


def _scalar_of(ctx, values, k: int):
    """Element k of OneHot's values input: a number when known, else a 0-d tensor."""
    known = ctx.known_or_none(values)
    if isinstance(known, np.ndarray):
        return ctx.expr(np.asarray(known.reshape(-1)[k]))
    flat = ctx.emit(R.reshape(ctx.expr(values), (-1,)))
    return ctx.emit(R.reshape(ctx.emit(R.strided_slice(flat, [0], [k], [k + 1])), ()))


def _one_hot(ctx, inputs, attrs):
    """OneHot: an index in [-depth, 0) counts from the end, one outside [-depth, depth) gives
    a row of off_value (a depth computed at run time takes the gather path of _runtime_index)."""
    indices = _int64(ctx, inputs[0])
    if ctx.known_or_none(inputs[1]) is None:
        off, on = _scalar_of(ctx, inputs[2], 0), _scalar_of(ctx, inputs[2], 1)
        axis = int(attrs.get("axis", -1))
        _axis(axis, _ndim(indices) + 1)
        return one_hot_at_run_time(ctx, indices, inputs[1], on, off, axis)
    depth_value = np.asarray(ctx.known(inputs[1], "depth")).reshape(-1)
    if depth_value.size != 1:
        raise OpAttributeInvalid(f"input 'depth' must hold one value, got {depth_value.size}")
    depth = int(depth_value[0])
    if depth < 1:
        raise OpAttributeInvalid(f"depth must be positive, got {depth}")
    zero, size = ctx.expr(np.asarray(0, "int64")), ctx.expr(np.asarray(depth, "int64"))
    shifted = ctx.emit(R.add(indices, size))
    indices = ctx.emit(R.where(ctx.emit(R.less(indices, zero)), shifted, indices))
    off, on = _scalar_of(ctx, inputs[2], 0), _scalar_of(ctx, inputs[2], 1)
    axis = int(attrs.get("axis", -1))
    _axis(axis, _ndim(indices) + 1)
    return ctx.emit(R.one_hot(indices, on, off, depth, axis))


def _compress(ctx, inputs, attrs):
    """Compress: the slices along `axis` (of the flattened input when absent) whose condition
    holds; a condition computed at run time goes through R.nonzero (a symbolic length)."""
    x = ctx.expr(inputs[0])
    condition = ctx.known_or_none(inputs[1])
    if not isinstance(condition, np.ndarray):
        axis = _axis(int(attrs["axis"]), _ndim(x)) if "axis" in attrs else None
        return compress_at_run_time(ctx, x, inputs[1], axis)
    if "axis" in attrs:
        axis = _axis(int(attrs["axis"]), _ndim(x))
    else:
        x, axis = ctx.emit(R.reshape(x, (-1,))), 0
    length = shape_of(x)[axis]
    keep = np.asarray(condition).reshape(-1).astype(bool)
    if isinstance(length, int):
        if keep.size > length:
            raise OpAttributeInvalid(
                f"condition has {keep.size} entries but the axis has length {length}"
            )
        keep = keep[:length]
    positions = np.nonzero(keep)[0].astype("int64")
    if positions.size == 0:
        return ctx.emit(R.strided_slice(x, [axis], [0], [0]))
    return ctx.emit(R.take(x, ctx.expr(positions), axis))


def _reverse_sequence(ctx, inputs, attrs):
    """ReverseSequence: along time_axis, the first sequence_lens[b] elements of batch b are
    reversed, the rest kept: a gather_elements with per-(time, batch) positions."""
    x = ctx.expr(inputs[0])
    shape = shape_of(x)
    time_axis, batch_axis = int(attrs.get("time_axis", 0)), int(attrs.get("batch_axis", 1))
    if {time_axis, batch_axis} != {0, 1}:
        raise OpAttributeInvalid(
            f"time_axis={time_axis} and batch_axis={batch_axis} must be 0 and 1 (ONNX)"
        )
    if not all(isinstance(d, int) for d in shape[:2]):
        raise OpAttributeUnImplemented("ReverseSequence on symbolic time or batch dims")
    lengths = _int64(ctx, inputs[1])
    steps = shape[time_axis]
    t_shape = [1] * len(shape)
    t_shape[time_axis] = steps
    b_shape = [1] * len(shape)
    b_shape[batch_axis] = shape[batch_axis]
    t = ctx.expr(np.arange(steps, dtype="int64").reshape(t_shape))
    n = ctx.emit(R.reshape(lengths, b_shape))
    one = ctx.expr(np.asarray(1, "int64"))
    reversed_pos = ctx.emit(R.subtract(ctx.emit(R.subtract(n, one)), t))
    pos = ctx.emit(R.where(ctx.emit(R.less(t, n)), reversed_pos, t))
    pos = ctx.emit(R.broadcast_to(pos, shape))
    return ctx.emit(R.gather_elements(x, pos, time_axis))


INDEXING_CONVERTERS = {
    "TopK": _topk,
    "ScatterElements": _scatter_elements,
    "Scatter": _scatter_elements,
    "ScatterND": _scatter_nd,
    "GatherND": _gather_nd,
    "OneHot": _one_hot,
    "Compress": _compress,
    "ReverseSequence": _reverse_sequence,
}

__all__ = ["INDEXING_CONVERTERS"]
