"""Resize whose scales, sizes or roi are computed at run time.

The output sizes are computed as a small int64 tensor (poisoned with -1 where the values are
invalid, so the VM refuses the call) and become fresh symbolic dims. Each resized axis then
gets its taps and weights at run time, by the same formulas `_resize.axis_taps` evaluates in
numpy for constant inputs, written as relax ops in float64 on a [out] coordinate vector: the
source coordinate x(o) of every output position, the tap indices around it (clamped into the
input) and their weights. The data is gathered with `take`, weighted and summed, one axis at a
time — a separable resize in ordinary ops, with no kernel of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ... import op as R
from ...expr import Expr
from ._helpers import _dtype, _ndim, shape_of
from ._runtime_axes import element, poisoned
from ._runtime_index import iota


def _f64(ctx, value: float) -> Expr:
    return ctx.expr(np.float64(value))


def _length(t: Expr, what: str) -> int:
    """The element count of a run-time 1-d input, which must be known at import."""
    sinfo = t.struct_info
    shape = getattr(sinfo, "shape", None)
    if shape is None or sinfo.ndim != 1 or getattr(shape[0], "value", None) is None:
        raise OpAttributeUnImplemented(
            f"Resize input '{what}' is computed at run time as {sinfo}; minitvm needs a 1-d "
            "tensor whose length is known at import (fix the dims in shape_dict)"
        )
    return int(shape[0].value)


def _input(ctx, value: Any, what: str) -> Expr | None:
    """An optional 1-d input as a relax expression; None when absent or empty."""
    if value is None:
        return None
    t = ctx.expr(value)
    return t if _length(t, what) else None


def _all(ctx, cond: Expr) -> Expr:
    bad = ctx.emit(R.sum(R.astype(R.logical_not(cond), "int64")))
    return ctx.emit(R.equal(bad, ctx.expr(np.int64(0))))


def _output_sizes(ctx, scales, sizes, n_vec: np.ndarray, attrs: dict) -> tuple:
    """(out sizes int64 [k], scales float64 [k], ok 0-d bool) by the spec's rules."""
    n = ctx.expr(n_vec.astype("float64"))
    if scales is not None:
        scale = ctx.emit(R.astype(scales, "float64"))
        out = ctx.emit(R.astype(R.floor(R.multiply(scale, n)), "int64"))
        positive = R.greater(out, ctx.expr(np.int64(0)))
        ok = ctx.emit(R.logical_and(_all(ctx, R.greater(scale, _f64(ctx, 0))), _all(ctx, positive)))
        return out, scale, ok
    wanted = ctx.emit(R.astype(sizes, "int64"))
    ratios = ctx.emit(R.divide(R.astype(wanted, "float64"), n))
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":
        return wanted, ratios, _all(ctx, R.greater(wanted, ctx.expr(np.int64(0))))
    common = ctx.emit((R.min if policy == "not_larger" else R.max)(ratios))
    scale = ctx.emit(R.multiply(common, ctx.expr(np.ones(len(n_vec), "float64"))))
    out = ctx.emit(R.astype(R.floor(R.add(R.multiply(scale, n), _f64(ctx, 0.5))), "int64"))
    return out, scale, _all(ctx, R.greater(out, ctx.expr(np.int64(0))))


def _source_coords(ctx, coord: str, y: Expr, s: Expr, n_in: int, out_i: Expr, roi) -> tuple:
    """(x(o) float64 [out], mask of positions outside the input or None); see _resize."""
    half = _f64(ctx, 0.5)
    out_f = ctx.emit(R.multiply(s, _f64(ctx, n_in)))
    one = ctx.emit(R.equal(out_f, _f64(ctx, 1)))

    def half_pixel():
        return ctx.emit(R.subtract(R.divide(R.add(y, half), s), half))

    if coord == "half_pixel":
        return half_pixel(), None
    if coord == "half_pixel_symmetric":
        offset = R.divide(R.subtract(out_f, out_i), R.multiply(s, _f64(ctx, 2)))
        return ctx.emit(R.add(offset, half_pixel())), None
    if coord == "pytorch_half_pixel":
        return ctx.emit(R.where(one, _f64(ctx, -0.5), half_pixel())), None
    if coord == "align_corners":
        x = R.divide(R.multiply(y, _f64(ctx, n_in - 1)), R.subtract(out_f, _f64(ctx, 1)))
        return ctx.emit(R.where(one, _f64(ctx, 0), x)), None
    if coord == "asymmetric":
        return ctx.emit(R.divide(y, s)), None
    if coord == "tf_half_pixel_for_nn":
        return ctx.emit(R.divide(R.add(y, half), s)), None
    start, end = roi
    span = ctx.emit(R.multiply(R.subtract(end, start), _f64(ctx, n_in - 1)))
    spread = R.divide(R.multiply(y, span), R.subtract(out_f, _f64(ctx, 1)))
    x = ctx.emit(R.where(one, R.divide(span, _f64(ctx, 2)), spread))
    x = ctx.emit(R.add(x, R.multiply(start, _f64(ctx, n_in - 1))))
    outside = R.logical_or(R.less(x, _f64(ctx, 0)), R.greater(x, _f64(ctx, n_in - 1)))
    return x, ctx.emit(outside)


def _nearest_index(ctx, top: Expr, ratio: Expr, attrs: dict) -> Expr:
    """The tap nearest_mode picks: the one below x (top - 1) or top; an integer x is itself."""
    rounding = attrs.get("nearest_mode", "round_prefer_floor")
    half = _f64(ctx, 0.5)
    up = {
        "round_prefer_floor": lambda: R.greater(ratio, half),
        "round_prefer_ceil": lambda: R.greater_equal(ratio, half),
        "floor": lambda: R.equal(ratio, _f64(ctx, 2)),  # never
        "ceil": lambda: R.equal(ratio, ratio),  # always
    }[rounding]()
    up = ctx.emit(R.logical_or(up, R.equal(ratio, _f64(ctx, 1))))
    return ctx.emit(R.add(R.subtract(top, ctx.expr(np.int64(1))), R.astype(up, "int64")))


def _kernel(ctx, mode: str, dist: Expr, a: float) -> Expr:
    """Linear (triangle) or Keys' cubic kernel at distances `dist`."""
    t = ctx.emit(R.abs(dist))
    if mode == "linear":
        return ctx.emit(R.maximum(R.subtract(_f64(ctx, 1), t), _f64(ctx, 0)))
    near = R.add(
        R.multiply(R.subtract(R.multiply(_f64(ctx, a + 2), t), _f64(ctx, a + 3)), R.multiply(t, t)),
        _f64(ctx, 1),
    )
    far = R.subtract(
        R.multiply(
            R.add(
                R.multiply(R.subtract(R.multiply(_f64(ctx, a), t), _f64(ctx, 5 * a)), t),
                _f64(ctx, 8 * a),
            ),
            t,
        ),
        _f64(ctx, 4 * a),
    )
    far = R.where(R.less(t, _f64(ctx, 2)), far, _f64(ctx, 0))
    return ctx.emit(R.where(R.less_equal(t, _f64(ctx, 1)), near, far))


def _normalised(ctx, w: Expr) -> Expr:
    total = ctx.emit(R.sum(w, [1], keepdims=True))
    safe = R.where(R.equal(total, _f64(ctx, 0)), _f64(ctx, 1), total)
    return ctx.emit(R.divide(w, safe))


def _resample(ctx, x: Expr, axis: int, n_in: int, n_out: Any, xs: Expr, s: Expr, attrs) -> Expr:
    """x along `axis` resized to n_out positions whose source coordinates are `xs`."""
    mode = attrs.get("mode", "nearest")
    rank = _ndim(x)
    top = ctx.emit(R.ceil(xs))
    ratio = ctx.emit(R.subtract(xs, R.subtract(top, _f64(ctx, 1))))  # in (0, 1]
    top = ctx.emit(R.astype(top, "int64"))
    last = ctx.expr(np.int64(n_in - 1))
    zero = ctx.expr(np.int64(0))
    if mode == "nearest":
        idx = _nearest_index(ctx, top, ratio, attrs)
        return ctx.emit(R.take(x, R.minimum(R.maximum(idx, zero), last), axis))
    antialias = bool(attrs.get("antialias", 0))
    reach = 1 if mode == "linear" else 2
    # antialias widens the kernel by 1 / scale; scale >= 1 / (2 n_in) (checked) bounds the taps
    first = 1 - 2 * reach * n_in if antialias else 1 - reach
    offsets = np.arange(first, 2 - first, dtype=np.int64)
    k = len(offsets)
    ratio = ctx.emit(R.reshape(ratio, (n_out, 1)))
    dist = ctx.emit(R.subtract(ctx.expr(offsets.astype("float64").reshape(1, k)), ratio))
    if antialias:
        dist = ctx.emit(R.multiply(dist, R.minimum(s, _f64(ctx, 1))))
    w = _kernel(ctx, mode, dist, float(attrs.get("cubic_coeff_a", -0.75)))
    w = _normalised(ctx, w) if antialias else w
    idx = ctx.emit(
        R.add(
            R.reshape(R.subtract(top, ctx.expr(np.int64(1))), (n_out, 1)),
            ctx.expr(offsets.reshape(1, k)),
        )
    )
    if attrs.get("exclude_outside", 0):
        out_of_range = R.logical_or(R.less(idx, zero), R.greater(idx, last))
        w = _normalised(ctx, ctx.emit(R.where(out_of_range, _f64(ctx, 0), w)))
    idx = ctx.emit(R.minimum(R.maximum(idx, zero), last))
    dims = shape_of(x)
    taps = ctx.emit(R.take(x, ctx.emit(R.reshape(idx, (n_out * k,))), axis))
    taps = ctx.emit(R.reshape(taps, (*dims[:axis], n_out, k, *dims[axis + 1 :])))
    w = ctx.emit(R.astype(w, _dtype(x)))
    w = ctx.emit(R.reshape(w, (n_out, k) + (1,) * (rank - axis - 1)))
    return ctx.emit(R.sum(ctx.emit(R.multiply(taps, w)), [axis + 1]))


def _axes(attrs: dict, rank: int) -> list:
    raw = [int(a) for a in attrs.get("axes", range(rank))]
    axes = [a % rank for a in raw]
    if len(set(axes)) != len(axes) or any(not -rank <= a < rank for a in raw):
        raise OpAttributeInvalid(f"attribute axes={raw} must be distinct axes of x (rank {rank})")
    return axes


def resize_at_run_time(ctx, x: Expr, inputs: list, attrs: dict, coord: str) -> Expr:
    """Resize of x (float32/float64 for linear and cubic) with run-time scales/sizes/roi."""
    dims = shape_of(x)
    rank = len(dims)
    axes = _axes(attrs, rank)
    if any(not isinstance(d, int) for d in dims):
        raise OpAttributeUnImplemented(
            f"Resize of an input of shape {list(dims)} with scales/sizes/roi computed at run "
            "time; give every dim in shape_dict"
        )
    picked = [
        _input(ctx, inputs[i] if len(inputs) > i else None, w)
        for i, w in ((1, "roi"), (2, "scales"), (3, "sizes"))
    ]
    roi, scales, sizes = picked
    if (scales is None) == (sizes is None):
        raise OpAttributeInvalid("Resize needs exactly one of scales and sizes (non-empty)")
    what = "scales" if sizes is None else "sizes"
    given = scales if sizes is None else sizes
    if _length(given, what) != len(axes):
        raise OpAttributeInvalid(
            f"Resize input '{what}' has {_length(given, what)} values; it needs one per resized "
            f"axis ({len(axes)})"
        )
    n_vec = np.asarray([dims[a] for a in axes], "int64")
    out, scale, ok = _output_sizes(ctx, scales, sizes, n_vec, attrs)
    if attrs.get("antialias", 0):  # the tap bound of _resample
        enough = R.greater_equal(
            R.multiply(scale, ctx.expr(n_vec.astype("float64"))), _f64(ctx, 0.5)
        )
        ok = ctx.emit(R.logical_and(ok, _all(ctx, enough)))
    pieces = [
        ctx.emit(R.strided_slice(out, [0], [axes.index(a)], [axes.index(a) + 1]))
        if a in axes
        else ctx.expr(np.asarray([d], "int64"))
        for a, d in enumerate(dims)
    ]
    shape = poisoned(ctx, ctx.emit(R.concat(pieces, 0)), ok)
    expect = [None if a in axes else d for a, d in enumerate(dims)]
    new_dims = list(ctx.runtime_shape(shape, what, expect).struct_info.values)
    if coord == "tf_crop_and_resize" and roi is not None and _length(roi, "roi") != 2 * len(axes):
        raise OpAttributeInvalid(
            f"Resize input 'roi' has {_length(roi, 'roi')} values; it needs 2 * {len(axes)}"
        )
    roi = None if roi is None else ctx.emit(R.astype(roi, "float64"))
    fill = float(attrs.get("extrapolation_value", 0.0))
    for i, a in enumerate(axes):
        y = ctx.emit(R.astype(iota(ctx, shape, new_dims, a), "float64"))
        s = element(ctx, scale, i)
        out_i = ctx.emit(R.astype(element(ctx, out, i), "float64"))
        bounds = (
            (element(ctx, roi, i), element(ctx, roi, len(axes) + i))
            if roi is not None
            else (_f64(ctx, 0), _f64(ctx, 1))
        )
        xs, outside = _source_coords(ctx, coord, y, s, dims[a], out_i, bounds)
        x = _resample(ctx, x, a, dims[a], new_dims[a], xs, s, attrs)
        if outside is not None:
            mask = ctx.emit(R.reshape(outside, (new_dims[a],) + (1,) * (rank - a - 1)))
            x = ctx.emit(R.where(mask, ctx.expr(np.asarray(fill, _dtype(x))), x))
    return x
