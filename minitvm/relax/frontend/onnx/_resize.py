"""Resize (opset 11-19) with static sizes: every mode, coordinate transform and rank.

Resize is separable: each resized axis maps output position o to a source coordinate x(o), and
the value is a weighted sum of `n` input taps around x(o) along that axis (n = 1 nearest, 2
linear, 4 cubic, more with antialias when downsampling). With static shapes the taps and
weights of every axis are computed here, in float64 numpy, by the formulas of the ONNX spec;
the graph then gathers the taps (`take`), weights them and sums, one axis after another, in the
order ONNX's reference resizes them. Rank-4 NCHW cases that relax.image.resize2d covers exactly
(H and W only, no roi or antialias, output sizes exactly in * scale) stay one resize2d call.
When scales, sizes or roi are computed at run time, _resize_runtime evaluates the same formulas
as relax ops instead.
"""

from __future__ import annotations

import math

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeRequired, OpAttributeUnImplemented
from ....ir import structural_equal
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._helpers import _dtype, _ndim, _unsupported, shape_of
from ._resize_runtime import resize_at_run_time
from ._shape import SymTensor

_MODES = ("nearest", "linear", "cubic")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")


# source coordinate of output positions y: (y, scale, in size, out size as a float, out size)
def _half_pixel(y, s, n_in, out_f, out_i):
    return (y + 0.5) / s - 0.5


def _half_pixel_symmetric(y, s, n_in, out_f, out_i):
    offset = (out_f - out_i) / (2 * s)  # n_in / 2 * (1 - out_i / out_f), fewer roundings
    return offset + (y + 0.5) / s - 0.5


def _pytorch_half_pixel(y, s, n_in, out_f, out_i):
    return np.full_like(y, -0.5) if out_f == 1 else (y + 0.5) / s - 0.5


def _align_corners(y, s, n_in, out_f, out_i):
    return np.zeros_like(y) if out_f == 1 else y * (n_in - 1) / (out_f - 1)


COORDINATE_TRANSFORMS = {
    "half_pixel": _half_pixel,
    "half_pixel_symmetric": _half_pixel_symmetric,
    "pytorch_half_pixel": _pytorch_half_pixel,
    "align_corners": _align_corners,
    "asymmetric": lambda y, s, n_in, out_f, out_i: y / s,
    "tf_half_pixel_for_nn": lambda y, s, n_in, out_f, out_i: (y + 0.5) / s,
    "tf_crop_and_resize": None,  # needs the roi: _source_coords
}


def _source_coords(coord: str, out_i: int, scale: float, n_in: int, roi: tuple) -> tuple:
    """(x(o) for each output position, mask of positions outside the input or None)."""
    y = np.arange(out_i, dtype=np.float64)
    out_f = scale * n_in
    if coord != "tf_crop_and_resize":
        return COORDINATE_TRANSFORMS[coord](y, scale, n_in, out_f, out_i), None
    start, end = roi
    if out_f == 1:
        x = np.full_like(y, (end - start) * (n_in - 1) / 2)
    else:
        x = y * (end - start) * (n_in - 1) / (out_f - 1)
    x = x + start * (n_in - 1)
    return x, (x < 0) | (x > n_in - 1)


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel at distances t."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _weights(mode: str, ratio: np.ndarray, scale: float, attrs: dict) -> np.ndarray:
    """[out, n] weights of taps ceil(x) - n/2 ... ceil(x) + n/2 - 1 (ratio = x - that tap
    below x, in (0, 1]); antialias widens the kernel by 1 / scale when downsampling."""
    if mode == "nearest":
        rounding = attrs.get("nearest_mode", "round_prefer_floor")
        up = {
            "round_prefer_floor": ratio > 0.5,
            "round_prefer_ceil": ratio >= 0.5,
            "floor": np.zeros_like(ratio, bool),
            "ceil": np.ones_like(ratio, bool),
        }[rounding]
        up = up | (ratio == 1)  # an integer coordinate picks itself
        return np.stack([~up, up], axis=1).astype(np.float64)
    a = float(attrs.get("cubic_coeff_a", -0.75))
    antialias = bool(attrs.get("antialias", 0))
    s = min(scale, 1.0) if antialias else 1.0
    reach = 1.0 if mode == "linear" else 2.0
    first = int(math.floor(-reach / s) + 1) if antialias else 1 - int(reach)
    offsets = np.arange(first, 2 - first, dtype=np.float64)  # taps relative to the one below x
    dist = (offsets[None, :] - ratio[:, None]) * s
    w = np.clip(1 - np.abs(dist), 0, 1) if mode == "linear" else _cubic(dist, a)
    return w / w.sum(axis=1, keepdims=True) if antialias else w


def axis_taps(mode, coord, n_in, out_i, scale, roi, attrs) -> tuple:
    """(indices [out, n] clamped into the input, weights [out, n], extrapolated mask or None)
    resizing one axis of length n_in to out_i."""
    x, outside = _source_coords(coord, out_i, scale, n_in, roi)
    top = np.ceil(x)
    ratio = x - (top - 1)  # in (0, 1]; 1 on integer coordinates
    w = _weights(mode, ratio, scale, attrs)
    n = w.shape[1]
    idx = top.astype(np.int64)[:, None] - n // 2 + np.arange(n)[None, :]
    if attrs.get("exclude_outside", 0):
        w = np.where((idx < 0) | (idx >= n_in), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n_in - 1), w, outside


# ----------------------------------------------------------------------------- sizes


def _static(ctx, value, what: str) -> np.ndarray | None:
    """A known input as a flat array (object dtype: symbolic sizes stay PrimExprs); None when
    absent or empty."""
    if value is None:
        return None
    known = ctx.known(value, what)
    array = known.values if isinstance(known, SymTensor) else np.asarray(known)
    return array.reshape(-1) if array.size else None


def _same_dim(a, b) -> bool:
    if isinstance(a, PrimExpr) or isinstance(b, PrimExpr):
        return isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and structural_equal(a, b)
    return int(a) == int(b)


def _plan(ctx, x: Expr, inputs: list, attrs: dict) -> list:
    """[(axis, in size, out size, scale, (roi start, roi end))] for every axis Resize names;
    an axis kept as it is (scale 1, or its own size) may be symbolic."""
    dims = shape_of(x)
    rank = len(dims)
    raw = [int(a) for a in attrs.get("axes", range(rank))]
    axes = [a % rank for a in raw]
    if len(set(axes)) != len(axes) or any(not -rank <= a < rank for a in raw):
        raise OpAttributeInvalid(f"attribute axes={raw} must be distinct axes of x (rank {rank})")
    roi = _static(ctx, inputs[1] if len(inputs) > 1 else None, "roi")
    scales = _static(ctx, inputs[2] if len(inputs) > 2 else None, "scales")
    sizes = _static(ctx, inputs[3] if len(inputs) > 3 else None, "sizes")
    if (scales is None) == (sizes is None):
        raise OpAttributeRequired("Resize needs exactly one of scales and sizes (non-empty)")
    given = scales if sizes is None else sizes
    if given.size != len(axes):
        raise OpAttributeInvalid(
            f"Resize {'scales' if sizes is None else 'sizes'} {given.tolist()} must hold one "
            f"value per resized axis ({len(axes)})"
        )
    full_roi = dict.fromkeys(range(rank), (0.0, 1.0))
    if roi is not None:
        if roi.size != 2 * len(axes):
            raise OpAttributeInvalid(f"Resize roi {roi.tolist()} must hold 2 * {len(axes)} values")
        roi = roi.astype(np.float64)
        full_roi.update({a: (roi[i], roi[len(axes) + i]) for i, a in enumerate(axes)})
    if scales is not None:
        values = scales.astype(np.float64)
        if any(v <= 0 for v in values):
            raise OpAttributeInvalid(f"Resize scales {values.tolist()} must be positive")
        kept = {a for a, v in zip(axes, values) if v == 1.0}
    else:
        kept = {a for a, v in zip(axes, sizes) if _same_dim(v, dims[a])}
        if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
            kept = set()  # one common scale: every named axis takes part
    for a in axes:
        if a not in kept and isinstance(dims[a], PrimExpr):
            raise OpAttributeUnImplemented(
                f"Resize of symbolic dim {a} ({dims[a]}); give it in shape_dict"
            )
    return _sizes(dims, axes, kept, values if scales is not None else None, sizes, attrs, full_roi)


def _sizes(dims, axes, kept, scales, sizes, attrs, roi) -> list:
    """The plan's output sizes and scales, by the spec's rules for scales / sizes / policy."""
    scale = {a: 1.0 for a in axes}
    out = {a: dims[a] for a in axes}
    moved = [a for a in axes if a not in kept]
    if scales is not None:
        scale.update({a: float(v) for a, v in zip(axes, scales)})
        out.update({a: int(scale[a] * dims[a]) for a in moved})
    else:
        wanted = {a: v for a, v in zip(axes, sizes)}
        if any(isinstance(wanted[a], PrimExpr) for a in moved):
            raise OpAttributeUnImplemented(
                f"Resize sizes {[str(v) for v in sizes]} are symbolic; give them in shape_dict"
            )
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy not in _POLICIES:
            _unsupported("keep_aspect_ratio_policy", policy, list(_POLICIES))
        ratios = {a: int(wanted[a]) / dims[a] for a in moved}
        if policy == "stretch":
            scale.update(ratios)
            out.update({a: int(wanted[a]) for a in moved})
        else:
            common = (min if policy == "not_larger" else max)(ratios.values())
            scale.update(dict.fromkeys(axes, common))
            out.update({a: int(common * dims[a] + 0.5) for a in axes})
    if any(out[a] <= 0 for a in moved):
        raise OpAttributeInvalid(
            f"Resize of shape {list(dims)} gives output sizes {[out[a] for a in axes]}; each "
            "must be positive"
        )
    return [(a, dims[a], out[a], scale[a], roi[a]) for a in axes]


# ----------------------------------------------------------------------------- convert


def _check_attrs(attrs: dict) -> tuple[str, str]:
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    if mode not in _MODES:
        _unsupported("mode", mode, list(_MODES))
    if coord not in COORDINATE_TRANSFORMS:
        _unsupported("coordinate_transformation_mode", coord, list(COORDINATE_TRANSFORMS))
    if attrs.get("nearest_mode", "round_prefer_floor") not in _NEAREST:
        _unsupported("nearest_mode", attrs["nearest_mode"], list(_NEAREST))
    if mode == "nearest" and attrs.get("antialias", 0):
        raise OpAttributeInvalid("antialias=1 applies to linear and cubic modes, not nearest")
    return mode, coord


def _identity(step: tuple, coord: str) -> bool:
    _, n_in, n_out, scale, roi = step
    same = n_in is n_out or (isinstance(n_in, int) and isinstance(n_out, int) and n_in == n_out)
    return (
        same
        and math.isclose(scale, 1.0)
        and (
            coord != "tf_crop_and_resize"
            or (math.isclose(roi[0], 0.0) and math.isclose(roi[1], 1.0))
        )
    )


def _resize2d_fits(x: Expr, plan: list, mode: str, coord: str, attrs: dict) -> bool:
    """Whether relax.image.resize2d computes exactly this Resize (plan: the resized axes)."""
    return (
        _ndim(x) == 4
        and all(p[0] in (2, 3) for p in plan)
        and coord not in ("tf_crop_and_resize", "half_pixel_symmetric")
        and not attrs.get("antialias", 0)
        and (mode == "cubic" or not attrs.get("exclude_outside", 0))
        and all(n_out == scale * n_in for _, n_in, n_out, scale, _ in plan)
    )


def _at_run_time(ctx, inputs: list) -> bool:
    """Whether roi, scales or sizes is computed at run time (not known at import)."""
    return any(v is not None and ctx.known_or_none(v) is None for v in inputs[1:4])


def _resize(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    mode, coord = _check_attrs(attrs)
    if _at_run_time(ctx, inputs):
        return _resize_at_run_time(ctx, x, inputs, attrs, mode, coord)
    plan = [step for step in _plan(ctx, x, inputs, attrs) if not _identity(step, coord)]
    if not plan:
        return x
    for axis, n_in, *_ in plan:
        if isinstance(n_in, PrimExpr):
            raise OpAttributeUnImplemented(
                f"Resize of symbolic dim {axis} ({n_in}); give it in shape_dict"
            )
    dtype = _dtype(x)
    if mode != "nearest" and not dtype.startswith("float"):
        raise OpAttributeUnImplemented(
            f"Resize mode={mode!r} of {dtype} data; only float data (cast it first), or "
            "mode='nearest'"
        )
    if _resize2d_fits(x, plan, mode, coord, attrs):
        dims = shape_of(x)
        size = tuple(next((p[2] for p in plan if p[0] == a), dims[a]) for a in (2, 3))
        rounding = attrs.get("nearest_mode", "round_prefer_floor") if mode == "nearest" else "round"
        return ctx.emit(
            R.image.resize2d(
                x,
                size,
                layout="NCHW",
                method="nearest_neighbor" if mode == "nearest" else mode,
                coordinate_transformation_mode=coord,
                rounding_method=rounding,
                cubic_alpha=float(attrs.get("cubic_coeff_a", -0.75)),
                cubic_exclude=int(attrs.get("exclude_outside", 0)),
            )
        )
    if mode != "nearest" and dtype != "float64":  # weights and sums in at least float32
        x = ctx.emit(R.astype(x, "float32")) if dtype != "float32" else x
    extrapolation = float(attrs.get("extrapolation_value", 0.0))
    for axis, n_in, n_out, scale, roi in plan:
        idx, w, outside = axis_taps(mode, coord, n_in, n_out, scale, roi, attrs)
        x = _resample_axis(ctx, x, axis, idx, w, mode == "nearest")
        if outside is not None and outside.any():
            mask = outside.reshape((n_out,) + (1,) * (_ndim(x) - axis - 1))
            fill = ctx.expr(np.asarray(extrapolation, _dtype(x)))
            x = ctx.emit(R.where(ctx.expr(mask), fill, x))
    return x if _dtype(x) == dtype else ctx.emit(R.astype(x, dtype))


def _resize_at_run_time(ctx, x: Expr, inputs: list, attrs: dict, mode: str, coord: str):
    """Resize with run-time scales/sizes/roi, weighting in at least float32 as above."""
    dtype = _dtype(x)
    if mode != "nearest" and not dtype.startswith("float"):
        raise OpAttributeUnImplemented(
            f"Resize mode={mode!r} of {dtype} data; only float data (cast it first), or "
            "mode='nearest'"
        )
    if mode != "nearest" and dtype not in ("float32", "float64"):
        x = ctx.emit(R.astype(x, "float32"))
    y = resize_at_run_time(ctx, x, inputs, attrs, coord)
    return y if _dtype(y) == dtype else ctx.emit(R.astype(y, dtype))


def _resample_axis(ctx, x: Expr, axis: int, idx: np.ndarray, w: np.ndarray, nearest: bool):
    """x along `axis` replaced by sum_k w[o, k] * x[idx[o, k]] (one tap, no weights, if nearest)."""
    if nearest:
        pick = idx[np.arange(len(idx)), np.argmax(w, axis=1)]
        return ctx.emit(R.take(x, ctx.expr(pick.astype("int64")), axis))
    n_out, n = w.shape
    dims = shape_of(x)
    taps = ctx.emit(R.take(x, ctx.expr(idx.reshape(-1).astype("int64")), axis))
    split = (*dims[:axis], n_out, n, *dims[axis + 1 :])
    taps = ctx.emit(R.reshape(taps, split))
    weights = w.reshape((n_out, n) + (1,) * (len(dims) - axis - 1)).astype(_dtype(x))
    return ctx.emit(R.sum(ctx.emit(R.multiply(taps, ctx.expr(weights))), [axis + 1]))
