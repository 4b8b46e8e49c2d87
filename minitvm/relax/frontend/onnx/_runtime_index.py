"""ONNX ops whose output extents come from values computed at run time (Pad `pads`, Tile
`repeats`, Range bounds, TopK `K`, OneHot `depth`).

Each output shape is computed as an int64 tensor, poisoned with -1 where the values are
invalid (the VM then refuses the call), and turned into fresh symbolic dims. The output is
then built by gathering along each axis with an index vector of that symbolic length (an iota
mapped through the op's rule: shift and clamp for Pad, modulo for Tile), so the kernels are
ordinary TE kernels with symbolic shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import OpAttributeInvalid
from ... import op as R
from ...expr import Expr, TupleGetItem
from ._helpers import _const_like, _dtype, _ndim, check_import_entries, shape_of
from ._runtime_axes import (
    _i64,
    axis_hits,
    checked_reshape,
    dims_tensor,
    element,
    poisoned,
    static_length,
)


def _int(ctx, value: int) -> Expr:
    return ctx.expr(np.int64(value))


def symbolic_dims(ctx, shape: Expr, what: str) -> tuple[Expr, list]:
    """(shape, dims): the 1-d int64 shape tensor and its values as fresh symbolic dims."""
    return shape, list(ctx.runtime_shape(shape, what).struct_info.values)


def iota(ctx, shape: Expr, dims: list, axis: int) -> Expr:
    """0, 1, ..., n-1 (int64) for n = dims[axis], the symbolic dim of element `axis` of the
    shape tensor. The ones it sums are made from a Shape variable (so by the VM's checked
    builtin: a TE kernel cannot take a dim that no argument's shape carries)."""
    n = ctx.emit(R.strided_slice(shape, [0], [axis], [axis + 1]))
    ones = ctx.emit(R.full(ctx.runtime_shape(n, "shape", [dims[axis]]), _int(ctx, 1), "int64"))
    return ctx.emit(R.subtract(R.cumsum(ones, 0), _int(ctx, 1)))


def _scalar(ctx, value: Any, what: str) -> Expr:
    """A one-element input as a 0-d tensor."""
    t = ctx.expr(value)
    sinfo = t.struct_info
    if (
        sinfo.shape is None
        or int(np.prod([int(getattr(d, "value", -1)) for d in sinfo.shape])) != 1
    ):
        raise OpAttributeInvalid(f"input '{what}' has shape {sinfo}; it must hold one value")
    return ctx.emit(R.reshape(t, ())) if sinfo.ndim else t


def _all(ctx, cond: Expr) -> Expr:
    """A 0-d bool: every element of `cond` holds."""
    bad = ctx.emit(R.sum(R.astype(R.logical_not(cond), "int64")))
    return ctx.emit(R.equal(bad, _int(ctx, 0)))


def _along(t: Expr, axis: int, rank: int, n: Any) -> Any:
    """`t` (shape (n,)) reshaped to broadcast along `axis` of a rank-`rank` tensor."""
    return R.reshape(t, tuple(n if i == axis else 1 for i in range(rank)))


# ----------------------------------------------------------------------------- Pad


def _per_axis(ctx, values: Expr, hits: Expr | None, k: int) -> Expr:
    """Per axis of the input: the value named for it (0 for an axis not named)."""
    if hits is None:
        return values
    column = ctx.emit(R.reshape(values, (k, 1)))
    return ctx.emit(R.sum(R.where(hits, column, _int(ctx, 0)), [0]))


def pad_at_run_time(ctx, x: Expr, pads: Expr, axes: Expr | None, mode: str, fill: Any) -> Expr:
    """Pad with `pads` (or `axes`) computed at run time, or in wrap mode. A negative pad
    first crops (as ONNX Runtime does); along each axis the output index minus the leading pad
    is then an index into the cropped input, clamped (edge, constant), reflected (reflect) or
    taken modulo its length (wrap); constant mode puts `fill` where it fell outside."""
    rank = _ndim(x)
    pads = _i64(ctx, ctx.expr(pads))
    k = rank if axes is None else static_length(ctx.expr(axes), "axes")
    if static_length(pads, "pads") != 2 * k:
        raise OpAttributeInvalid(
            f"input 'pads' has {static_length(pads, 'pads')} values; it needs 2 per padded axis "
            f"({k} axes)"
        )
    hits, ok = (None, None) if axes is None else axis_hits(ctx, ctx.expr(axes), rank)
    before = _per_axis(ctx, ctx.emit(R.strided_slice(pads, [0], [0], [k])), hits, k)
    after = _per_axis(ctx, ctx.emit(R.strided_slice(pads, [0], [k], [2 * k])), hits, k)
    zero = _int(ctx, 0)
    dims = dims_tensor(ctx, x)
    lead = ctx.emit(R.maximum(before, zero))
    crop_lo = ctx.emit(R.maximum(R.negative(before), zero))
    kept = ctx.emit(R.subtract(R.subtract(dims, crop_lo), R.maximum(R.negative(after), zero)))
    out = ctx.emit(R.add(R.add(dims, before), after))
    # an axis cropped to nothing has no element to clamp to (constant mode included: refused)
    valid = _all(ctx, ctx.emit(R.greater(kept, zero)))
    valid = valid if ok is None else ctx.emit(R.logical_and(valid, ok))
    shape, n = symbolic_dims(ctx, poisoned(ctx, out, valid), "pads")
    y, inside = x, None
    for a in range(rank):
        c = element(ctx, kept, a)
        src = ctx.emit(R.subtract(iota(ctx, shape, n, a), element(ctx, lead, a)))
        if mode == "reflect":
            period = ctx.emit(
                R.maximum(R.multiply(R.subtract(c, _int(ctx, 1)), _int(ctx, 2)), _int(ctx, 1))
            )
            m = ctx.emit(R.floor_mod(src, period))
            index = ctx.emit(R.where(R.less(m, c), m, R.subtract(period, m)))
        elif mode == "wrap":
            index = ctx.emit(R.floor_mod(src, c))
        else:
            index = ctx.emit(R.minimum(R.maximum(src, zero), R.subtract(c, _int(ctx, 1))))
        if mode == "constant":
            hit = ctx.emit(_along(ctx.emit(R.equal(index, src)), a, rank, n[a]))
            inside = hit if inside is None else ctx.emit(R.logical_and(inside, hit))
        y = ctx.emit(R.take(y, ctx.emit(R.add(index, element(ctx, crop_lo, a))), a))
    if mode != "constant":
        return y
    return ctx.emit(R.where(inside, y, fill))


# ----------------------------------------------------------------------------- Tile


def tile_at_run_time(ctx, x: Expr, repeats: Expr) -> Expr:
    """Tile with `repeats` computed at run time: output index modulo the input's dim."""
    rank = _ndim(x)
    repeats = _i64(ctx, ctx.expr(repeats))
    if static_length(repeats, "repeats") != rank:
        raise OpAttributeInvalid(
            f"input 'repeats' has {static_length(repeats, 'repeats')} values for an input of "
            f"rank {rank}; give one per axis"
        )
    dims = dims_tensor(ctx, x)
    valid = _all(ctx, ctx.emit(R.greater_equal(repeats, _int(ctx, 0))))
    shape, n = symbolic_dims(
        ctx, poisoned(ctx, ctx.emit(R.multiply(dims, repeats)), valid), "repeats"
    )
    y = x
    for a in range(rank):
        # an empty input axis gives an empty output axis: no index is ever computed
        d = ctx.emit(R.maximum(element(ctx, dims, a), _int(ctx, 1)))
        y = ctx.emit(R.take(y, ctx.emit(R.floor_mod(iota(ctx, shape, n, a), d)), a))
    return y


# ----------------------------------------------------------------------------- Range


def range_at_run_time(ctx, start: Any, limit: Any, delta: Any) -> Expr:
    """Range with bounds computed at run time: max(ceil((limit - start) / delta), 0) values
    start + i * delta (the count in float64, as ONNX's reference computes it)."""
    start, limit, delta = (
        _scalar(ctx, v, name) for v, name in ((start, "start"), (limit, "limit"), (delta, "delta"))
    )
    dtype = _dtype(start)
    wide = [ctx.emit(R.astype(v, "float64")) for v in (start, limit, delta)]
    count = ctx.emit(R.ceil(R.divide(R.subtract(wide[1], wide[0]), wide[2])))
    count = ctx.emit(R.maximum(R.astype(count, "int64"), _int(ctx, 0)))
    nonzero = ctx.emit(R.not_equal(delta, _const_like(ctx, delta, 0)))
    shape = poisoned(ctx, ctx.emit(R.reshape(count, (1,))), nonzero)
    shape, n = symbolic_dims(ctx, shape, "delta")
    steps = ctx.emit(R.astype(iota(ctx, shape, n, 0), dtype))
    return ctx.emit(R.add(start, R.multiply(steps, delta)))


# ----------------------------------------------------------------------------- TopK


def topk_at_run_time(ctx, x: Expr, k: Any, axis: int, largest: bool) -> list:
    """TopK with K computed at run time: the whole axis sorted (ties by index, as ONNX asks),
    then its first K; a K outside [0, axis length] is refused by the VM."""
    rank = _ndim(x)
    k = _i64(ctx, _scalar(ctx, k, "K"))
    dims = dims_tensor(ctx, x)
    length = element(ctx, dims, axis)
    ok = ctx.emit(R.logical_and(R.greater_equal(k, _int(ctx, 0)), R.less_equal(k, length)))
    at_axis = ctx.expr(np.arange(rank) == axis)
    target = poisoned(ctx, ctx.emit(R.where(at_axis, k, dims)), ok)
    shape = ctx.runtime_shape(target, "K")
    both = ctx.emit(R.topk(x, 0, axis, "both", largest, "int64"))
    zeros, ones = ctx.expr(np.zeros(rank, "int64")), ctx.expr(np.ones(rank, "int64"))
    out = []
    for i in range(2):
        part = ctx.emit(
            R.dynamic_strided_slice(ctx.emit(TupleGetItem(both, i)), zeros, target, ones)
        )
        out.append(ctx.emit(R.reshape(part, shape)))
    return out


# ----------------------------------------------------------------------------- OneHot


def one_hot_at_run_time(ctx, indices: Expr, depth: Any, on: Any, off: Any, axis: int) -> Expr:
    """OneHot with `depth` computed at run time: index == iota(depth) along the new axis (an
    index in [-depth, 0) counts from the end; one outside [-depth, depth) hits nothing)."""
    rank = _ndim(indices) + 1
    axis = axis + rank if axis < 0 else axis
    depth = _scalar(ctx, depth, "depth")
    size = ctx.emit(R.astype(depth if _dtype(depth).startswith("int") else R.floor(depth), "int64"))
    shape = poisoned(ctx, ctx.emit(R.reshape(size, (1,))), ctx.emit(R.greater(size, _int(ctx, 0))))
    shape, n = symbolic_dims(ctx, shape, "depth")
    shifted = ctx.emit(R.where(R.less(indices, _int(ctx, 0)), R.add(indices, size), indices))
    spread = ctx.emit(R.expand_dims(shifted, axis))
    hit = ctx.emit(R.equal(spread, _along(iota(ctx, shape, n, 0), axis, rank, n[0])))
    return ctx.emit(R.where(hit, on, off))


# ----------------------------------------------------------------------------- Dropout


def dropout_at_run_time(ctx, x: Expr, training: Any, ratio: Any, seed: int | None = None):
    """Dropout whose training_mode is computed at run time: the identity (what ONNX gives for
    training false, or a ratio of 0), and with it a mask of all true.

    Training true with a nonzero ratio draws random numbers. With a `seed` they are numpy's
    RandomState(seed).uniform over x's shape, as ONNX's reference draws them (so the same mask
    every call; ONNX Runtime's generator draws others). Without a seed no draw can be
    reproduced, so the VM refuses that call."""
    known = ctx.known_or_none(ratio)
    if isinstance(known, np.ndarray) and float(known.reshape(-1)[0]) == 0.0:
        return x, None
    drawing = ctx.emit(R.astype(_scalar(ctx, training, "training_mode"), "bool"))
    rate = _scalar(ctx, ratio, "ratio")
    drawing = ctx.emit(R.logical_and(drawing, R.not_equal(rate, _const_like(ctx, rate, 0))))
    dims = shape_of(x)
    if seed is None or not all(isinstance(d, int) for d in dims):
        check = ctx.emit(R.where(drawing, _int(ctx, -1), dims_tensor(ctx, x)))
        return checked_reshape(ctx, x, check, "training_mode", dims), None
    check_import_entries(int(np.prod(dims)), "Dropout's random draw")
    draw = np.random.RandomState(int(seed)).uniform(0, 1.0, dims)
    keep = ctx.emit(R.greater_equal(ctx.expr(draw), ctx.emit(R.astype(rate, "float64"))))
    one = _const_like(ctx, rate, 1.0)
    scale = ctx.emit(R.astype(R.divide(one, R.subtract(one, rate)), _dtype(x)))
    dropped = ctx.emit(R.multiply(ctx.emit(R.multiply(R.astype(keep, _dtype(x)), x)), scale))
    mask = ctx.emit(R.logical_or(keep, R.logical_not(drawing)))
    return ctx.emit(R.where(drawing, dropped, x)), mask
