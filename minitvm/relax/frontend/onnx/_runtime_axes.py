"""ONNX inputs that name axes or slice bounds but are computed at run time (Reduce* `axes`,
Slice `starts/ends/axes/steps`).

Their length is known at import, so the output rank is; their values are not. They are turned
into small int64/bool tensors per axis of the input (which axes are named, each axis's bounds),
the data is moved with `R.dynamic_strided_slice`, and the result is reshaped to a shape tensor
computed alongside, whose dims become fresh symbolic vars. Invalid values (an axis out of range
or named twice) make that shape tensor hold -1, so the VM refuses the call instead of computing
something ONNX Runtime would reject.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import IntImm
from ... import op as R
from ...expr import Constant, Expr
from ._helpers import _dtype, _ndim, shape_of

_INT64_MAX = 2**63 - 1


def static_length(t: Expr, what: str) -> int:
    """The length of a 1-d input computed at run time (it must be known at import)."""
    sinfo = t.struct_info
    length = None
    if getattr(sinfo, "shape", None) is not None and sinfo.ndim == 1:
        length = sinfo.shape[0]
    if not isinstance(length, IntImm) or sinfo.dtype is None or not sinfo.dtype.is_integer:
        raise OpAttributeUnImplemented(
            f"input '{what}' is computed at run time as {sinfo}; minitvm needs a 1-d int tensor "
            "whose length is known at import (fix the dims in shape_dict)"
        )
    return int(length.value)


def _i64(ctx, t: Expr) -> Expr:
    return t if _dtype(t) == "int64" else ctx.emit(R.astype(t, "int64"))


def dims_tensor(ctx, x: Expr) -> Expr:
    """x's shape as a 1-d int64 tensor (a constant when every dim is known)."""
    dims = shape_of(x)
    if all(isinstance(d, int) for d in dims):
        return ctx.expr(np.asarray(dims, "int64").reshape(-1))
    return ctx.emit(R.shape_to_tensor(R.shape_of(x)))


def element(ctx, t: Expr, i: int) -> Expr:
    """Element i of a 1-d tensor as a 0-d tensor."""
    if isinstance(t, Constant):  # FoldConstant would give the folded 0-d slice shape (1,)
        return ctx.expr(t.data.numpy()[i])
    return ctx.emit(R.reshape(ctx.emit(R.strided_slice(t, [0], [i], [i + 1])), ()))


def axis_hits(ctx, axes: Expr, rank: int) -> tuple[Expr, Expr]:
    """(hits, ok): hits[j, i] says axes[j] names axis i (negative counts from the end);
    ok (0-d bool) says every axis is in [-rank, rank) and none is named twice."""
    k = static_length(axes, "axes")
    a = ctx.emit(R.reshape(_i64(ctx, axes), (k, 1)))
    norm = ctx.emit(
        R.where(R.less(a, ctx.expr(np.int64(0))), R.add(a, ctx.expr(np.int64(rank))), a)
    )
    hits = ctx.emit(R.equal(norm, ctx.expr(np.arange(rank, dtype="int64").reshape(1, rank))))
    counts = ctx.emit(R.sum(ctx.emit(R.astype(hits, "int64")), [0]))
    ok = ctx.emit(
        R.logical_and(
            R.equal(R.sum(counts), ctx.expr(np.int64(k))),  # less: one is out of range
            R.less_equal(R.max(counts), ctx.expr(np.int64(1))),  # more than 1: named twice
        )
    )
    return hits, ok


def poisoned(ctx, shape: Expr, ok: Expr) -> Expr:
    """`shape` where `ok`, else all -1 (which the VM's tensor_to_shape refuses)."""
    return ctx.emit(R.where(ok, shape, ctx.expr(np.int64(-1))))


def checked_reshape(ctx, x: Expr, shape: Expr, what: str, dims: tuple) -> Expr:
    """x reshaped to the run-time `shape` (the VM checks it: no -1, the same count), then
    given the `dims` known at import (the VM checks they match)."""
    from ...struct_info import TensorStructInfo

    out = ctx.emit(R.reshape(x, ctx.runtime_shape(shape, what)))
    return ctx.bb.match_cast(out, TensorStructInfo(dims, _dtype(x)))


def compress(ctx, dims: Expr, keep: Expr, length: int) -> Expr:
    """The dims whose `keep` flag is set, in order, as a tensor of the given length."""
    rank = int(dims.struct_info.shape[0].value)
    pos = ctx.emit(
        R.subtract(R.cumsum(ctx.emit(R.astype(keep, "int64")), 0), ctx.expr(np.int64(1)))
    )
    slots = ctx.expr(np.arange(length, dtype="int64").reshape(1, length))
    pick = ctx.emit(
        R.logical_and(R.equal(R.reshape(pos, (rank, 1)), slots), R.reshape(keep, (rank, 1)))
    )
    picked = ctx.emit(R.where(pick, R.reshape(dims, (rank, 1)), ctx.expr(np.int64(0))))
    return ctx.emit(R.sum(picked, [0]))


# ----------------------------------------------------------------------------- reductions


class RuntimeAxes:
    """Reduction axes known at run time as one 0-d bool flag per axis of the input.

    `reduce` spreads each flagged axis's reduced value over the axis (an axis of 0 dims gets 1:
    the reduced value must survive it), so reductions compose (mean of means, max then
    exp-sum) before one slice at the end keeps the first of each reduced axis."""

    def __init__(self, ctx, x: Expr, flags: Expr):
        self.ctx = ctx
        self.empty = [isinstance(d, int) and d == 0 for d in shape_of(x)]
        self.shape = [1 if e else d for e, d in zip(self.empty, shape_of(x))]
        self.flags = [element(ctx, flags, i) for i in range(len(self.shape))]

    def reduce(self, op: Any, t: Expr, keepdims: bool) -> Expr:
        ctx = self.ctx
        for i, flag in enumerate(self.flags):
            spread = shape_of(t)[:i] + (self.shape[i],) + shape_of(t)[i + 1 :]
            part = ctx.emit(R.broadcast_to(ctx.emit(op(t, [i], True)), spread))
            # an empty axis left alone stays empty in the output: its values are never read
            t = part if self.empty[i] else ctx.emit(R.where(flag, part, t))
        return t

    def squeeze(self, t: Expr) -> Expr:
        return t  # reduce_at_run_time slices and reshapes once at the end


def reduce_at_run_time(ctx, x: Expr, axes: Expr, keepdims: bool, formula: Any) -> Expr:
    """ReduceX with `axes` computed at run time: `formula(ctx, x, RuntimeAxes, True)` gives
    the reduced values spread over x's shape; the first of each reduced axis is kept."""
    rank, k = _ndim(x), static_length(axes, "axes")
    if rank == 0 or k > rank:
        raise OpAttributeInvalid(
            f"input 'axes' has {k} values for an input of rank {rank}; each axis of the input "
            "may be named once"
        )
    hits, ok = axis_hits(ctx, axes, rank)
    flags = ctx.emit(R.greater(R.sum(R.astype(hits, "int64"), [0]), ctx.expr(np.int64(0))))
    y = ctx.emit(formula(ctx, x, RuntimeAxes(ctx, x, flags), True))
    dims = dims_tensor(ctx, x)
    kept = ctx.emit(R.where(flags, ctx.expr(np.int64(1)), dims))
    out = ctx.emit(
        R.dynamic_strided_slice(
            y,
            ctx.expr(np.zeros(rank, "int64")),
            kept,
            ctx.expr(np.ones(rank, "int64")),
        )
    )
    target = kept if keepdims else compress(ctx, dims, ctx.emit(R.logical_not(flags)), rank - k)
    if not keepdims and rank == k:
        # a scalar result: the count check is folded into the slice's shape instead
        ones = checked_reshape(ctx, out, poisoned(ctx, kept, ok), "axes", (1,) * rank)
        return ctx.emit(R.reshape(ones, ()))
    return ctx.emit(R.reshape(out, ctx.runtime_shape(poisoned(ctx, target, ok), "axes")))


# ----------------------------------------------------------------------------- slices


def slice_at_run_time(ctx, x: Expr, starts: Any, ends: Any, axes: Any, steps: Any) -> Expr:
    """ONNX Slice with any of starts/ends/axes/steps computed at run time: each axis's begin,
    end and stride are gathered into one tensor per kind (an axis not named keeps all of it)
    and `R.dynamic_strided_slice` applies Python's clamping, which is ONNX's."""
    rank = _ndim(x)
    starts, ends = (_i64(ctx, ctx.expr(v)) for v in (starts, ends))
    k = static_length(starts, "starts")
    if static_length(ends, "ends") != k:
        raise OpAttributeInvalid(
            f"inputs 'starts' and 'ends' differ in length ({starts.struct_info}, "
            f"{ends.struct_info}); give one start and one end per sliced axis"
        )
    axes = ctx.expr(np.arange(k, dtype="int64")) if axes is None else ctx.expr(axes)
    steps = ctx.expr(np.ones(k, "int64")) if steps is None else _i64(ctx, ctx.expr(steps))
    for name, t in (("axes", axes), ("steps", steps)):
        if static_length(t, name) != k:
            raise OpAttributeInvalid(
                f"input '{name}' has length {static_length(t, name)}; 'starts' has {k}: give "
                "one value per sliced axis"
            )
    hits, ok = axis_hits(ctx, axes, rank)
    named = ctx.emit(R.greater(R.sum(R.astype(hits, "int64"), [0]), ctx.expr(np.int64(0))))

    def per_axis(values: Expr, default: int) -> Expr:
        column = ctx.emit(R.reshape(values, (k, 1)))
        picked = ctx.emit(R.sum(R.where(hits, column, ctx.expr(np.int64(0))), [0]))
        return ctx.emit(R.where(named, picked, ctx.expr(np.int64(default))))

    out = ctx.emit(
        R.dynamic_strided_slice(
            x, per_axis(starts, 0), per_axis(ends, _INT64_MAX), per_axis(steps, 1)
        )
    )
    dims = ctx.emit(R.shape_to_tensor(R.shape_of(out)))
    return ctx.emit(R.reshape(out, ctx.runtime_shape(poisoned(ctx, dims, ok), "axes")))


# ----------------------------------------------------------------------------- reshapes


def _flags(ctx, hits: Expr) -> Expr:
    """Per axis: is it named (any row of `hits`)."""
    return ctx.emit(R.greater(R.sum(R.astype(hits, "int64"), [0]), ctx.expr(np.int64(0))))


def unsqueeze_at_run_time(ctx, x: Expr, axes: Expr) -> Expr:
    """Unsqueeze with `axes` computed at run time (the output rank is x's plus their count):
    a reshape to x's dims spread over the axes not named, 1 on those named."""
    rank, k = _ndim(x), static_length(axes, "axes")
    hits, ok = axis_hits(ctx, axes, rank + k)
    flags = _flags(ctx, hits)
    if rank == 0:
        spread = ctx.expr(np.ones(k, "int64"))
    else:
        keep = ctx.emit(R.logical_not(flags))
        pos = ctx.emit(
            R.subtract(R.cumsum(ctx.emit(R.astype(keep, "int64")), 0), ctx.expr(np.int64(1)))
        )
        slots = ctx.expr(np.arange(rank, dtype="int64").reshape(1, rank))
        pick = ctx.emit(
            R.logical_and(
                R.equal(R.reshape(pos, (rank + k, 1)), slots), R.reshape(keep, (rank + k, 1))
            )
        )
        dims = ctx.emit(R.reshape(dims_tensor(ctx, x), (1, rank)))
        spread = ctx.emit(R.sum(R.where(pick, dims, ctx.expr(np.int64(0))), [1]))
    target = ctx.emit(R.where(flags, ctx.expr(np.int64(1)), spread))
    return ctx.emit(R.reshape(x, ctx.runtime_shape(poisoned(ctx, target, ok), "axes")))


def squeeze_at_run_time(ctx, x: Expr, axes: Expr) -> Expr:
    """Squeeze with `axes` computed at run time: a reshape to the dims not named; a named dim
    other than 1 is refused by the VM."""
    rank, k = _ndim(x), static_length(axes, "axes")
    if k > rank:
        raise OpAttributeInvalid(
            f"input 'axes' has {k} values for an input of rank {rank}; each axis may be named once"
        )
    hits, ok = axis_hits(ctx, axes, rank)
    flags = _flags(ctx, hits)
    dims = dims_tensor(ctx, x)
    wide = ctx.emit(R.logical_and(flags, R.not_equal(dims, ctx.expr(np.int64(1)))))
    ok = ctx.emit(R.logical_and(ok, R.equal(R.sum(R.astype(wide, "int64")), ctx.expr(np.int64(0)))))
    if rank == k:
        target = ctx.emit(R.where(ok, ctx.expr(np.ones(rank, "int64")), ctx.expr(np.int64(-1))))
        return ctx.emit(R.reshape(checked_reshape(ctx, x, target, "axes", (1,) * rank), ()))
    target = compress(ctx, dims, ctx.emit(R.logical_not(flags)), rank - k)
    return ctx.emit(R.reshape(x, ctx.runtime_shape(poisoned(ctx, target, ok), "axes")))


def split_at_run_time(ctx, x: Expr, axis: int, split: Expr, parts: int) -> list:
    """Split with sizes computed at run time: one `dynamic_strided_slice` per part; sizes that
    are negative or do not add up to the axis's length are refused by the VM."""
    rank = _ndim(x)
    if static_length(split, "split") != parts:
        raise OpAttributeInvalid(
            f"input 'split' has {static_length(split, 'split')} sizes for {parts} outputs; give "
            "one size per output"
        )
    sizes = _i64(ctx, ctx.expr(split))
    dims = dims_tensor(ctx, x)
    length = element(ctx, dims, axis)
    ok = ctx.emit(
        R.logical_and(
            R.equal(R.sum(sizes), length), R.greater_equal(R.min(sizes), ctx.expr(np.int64(0)))
        )
    )
    ends = ctx.emit(R.cumsum(sizes, 0))
    begins = ctx.emit(R.subtract(ends, sizes))
    at_axis = ctx.expr(np.arange(rank) == axis)
    out = []
    for j in range(parts):
        begin = ctx.emit(R.where(at_axis, element(ctx, begins, j), ctx.expr(np.int64(0))))
        end = ctx.emit(R.where(at_axis, element(ctx, ends, j), dims))
        piece = ctx.emit(R.dynamic_strided_slice(x, begin, end, ctx.expr(np.ones(rank, "int64"))))
        target = ctx.emit(R.where(at_axis, element(ctx, sizes, j), dims))
        out.append(
            ctx.emit(R.reshape(piece, ctx.runtime_shape(poisoned(ctx, target, ok), "split")))
        )
    return out
