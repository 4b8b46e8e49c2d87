"""The QNN lowerings as Relay expressions (TVM's canonicalization): each takes a qnn call's
arguments, their types and its attrs, and returns the same computation in core Relay ops.
`relay.qnn.transform.CanonicalizeOps` applies them to a module; relay.build applies them to
each qnn call it translates, so both see one definition.

  quantize    q = clip(round(x / scale) + zero_point)            (round: ties to even)
  dequantize  x = (q - zero_point) * scale
  requantize  q' = clip(rescale(q - in_zero_point) + out_zero_point), rescale by
              in_scale / out_scale either in int64 fixed point (a Q31 multiplier and a shift,
              compute_dtype "int64") or in float32 / float64; rounding "UPWARD" takes ties
              toward +inf, "TONEAREST" away from zero. The fixed-point path rounds the
              product and then adds out_zero_point; the float paths round the sum.
  add, subtract  both inputs requantized to the output's parameters in int32 (only cast
              where theirs already match), combined, the output zero point removed / added
              back once, clipped to the input dtype.
  mul         (a - za) * (b - zb) in int32, a tensor of scale sa * sb and zero point 0,
              requantized to the output.
  concatenate inputs whose parameters differ from the output's requantized, then joined.
Scales and zero points are scalars or, per channel, vectors along `axis`; requantize needs
its scales as constants (the multiplier is computed at compile time).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....error import OpNotImplemented
from ... import op as R
from ...expr import Constant, Tuple, TupleGetItem, const

INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32")
CONFIG = [{"rounding": "UPWARD", "compute_dtype": "int64"}]


def dtype_range(dtype: str) -> tuple[float, float]:
    info = np.iinfo(dtype) if dtype in INT_TYPES else np.finfo(dtype)
    return float(info.min), float(info.max)


def _value(e: Any) -> np.ndarray | None:
    return e.data.numpy() if isinstance(e, Constant) else None


def _is_scalar(e: Any, number: float) -> bool:
    v = _value(e)
    return v is not None and v.size == 1 and v.item() == number


def _same(a: Any, b: Any) -> bool:
    """Two constant scalar parameters with equal values (TVM's IsEqualScalar)."""
    va, vb = _value(a), _value(b)
    return va is not None and vb is not None and va.size == vb.size == 1 and va.item() == vb.item()


def _along_axis(param: Any, ptype: Any, ndim: int, axis: int) -> Any:
    """A scalar stays; a per-channel vector is shaped (C, 1, ..., 1) to broadcast at `axis`."""
    shape = tuple(ptype.shape)
    if len(shape) == 0:
        return param
    if len(shape) == 1 and int(shape[0]) == 1:
        return R.reshape(param, ())
    axis = axis + ndim if axis < 0 else axis
    return R.reshape(param, [-1] + [1] * (ndim - axis - 1))


def _clip_cast(t: Any, dtype: str) -> Any:
    low, high = dtype_range(dtype)
    return R.cast(R.clip(t, low, high), dtype)


def quantize(args, types, attrs):
    x, scale, zero = args
    ndim = len(types[0].shape)
    scale = _along_axis(scale, types[1], ndim, attrs.axis)
    zero = R.cast(_along_axis(zero, types[2], ndim, attrs.axis), "float32")
    return _clip_cast(R.add(R.round(R.divide(x, scale)), zero), attrs.out_dtype)


def dequantize(args, types, attrs):
    q, scale, zero = args
    ndim = len(types[0].shape)
    shift = R.subtract(R.cast(q, "int32"), _along_axis(zero, types[2], ndim, attrs.axis))
    out = R.multiply(R.cast(shift, "float32"), _along_axis(scale, types[1], ndim, attrs.axis))
    return out if attrs.out_dtype == "float32" else _clip_cast(out, attrs.out_dtype)


def fixed_point_multiplier(multiplier: float) -> tuple[int, int]:
    """(m, shift) with multiplier ~= m * 2**(shift - 31), m a Q31 significand in [2**30, 2**31)."""
    if multiplier == 0.0:
        return 0, 0
    significand, exponent = math.frexp(multiplier)
    m = math.floor(significand * (1 << 31) + 0.5)  # C's round: half away from zero (m > 0)
    if m == 1 << 31:
        m, exponent = m // 2, exponent + 1
    return m, exponent


def _per_axis_const(values: np.ndarray, ndim: int, axis: int, dtype: str) -> Any:
    values = np.asarray(values, dtype)
    if values.size == 1:
        return const(values.reshape(()))
    axis = axis + ndim if axis < 0 else axis
    return const(values.reshape([-1] + [1] * (ndim - axis - 1)))


def _fixed_point_rescale(t: Any, multipliers: np.ndarray, ndim: int, attrs: Any) -> Any:
    """round(t * multiplier) in int64 fixed point; t is int32, the result int32."""
    pairs = [fixed_point_multiplier(float(m)) for m in multipliers]
    ms = np.array([p[0] for p in pairs], "int64")
    shifts = np.array([p[1] for p in pairs], "int64")
    left, right = np.maximum(shifts, 0), np.maximum(-shifts, 0) + 31

    def per_axis(values):
        return _per_axis_const(values, ndim, attrs.axis, "int64")

    t = R.cast(t, "int64")
    if left.any():
        t = R.left_shift(t, per_axis(left))
    t = R.multiply(t, per_axis(ms))
    half = per_axis(np.left_shift(np.int64(1), right - 1))
    if attrs.rounding == "TONEAREST":  # a negative tie rounds down: add one less
        below = per_axis(np.left_shift(np.int64(1), right - 1) - 1)
        half = R.where(R.greater_equal(t, const(np.int64(0))), half, below)
    return R.cast(R.right_shift(R.add(t, half), per_axis(right)), "int32")


def _round_float(t: Any, rounding: str, dtype: str) -> Any:
    half = const(np.asarray(0.5, dtype))
    if rounding == "UPWARD":
        return R.floor(R.add(t, half))
    # TONEAREST: |t| + 0.5 rounded down, the sign put back
    sign = R.where(R.less(t, const(np.asarray(0, dtype))), const(np.asarray(-1, dtype)),
                   const(np.asarray(1, dtype)))  # fmt: skip
    return R.multiply(R.floor(R.add(R.multiply(t, sign), half)), sign)


def requantize(args, types, attrs):
    x, in_scale, in_zero, out_scale, out_zero = args
    if not all(isinstance(s, Constant) for s in (in_scale, out_scale)):
        raise OpNotImplemented(
            "qnn.requantize: input_scale and output_scale must be constants (the multiplier "
            "is folded into the kernel); bind the params first"
        )
    ndim = len(types[0].shape)
    in_s = _value(in_scale).astype("float32").astype("float64").reshape(-1)
    out_s = float(np.asarray(_value(out_scale), "float32").reshape(-1)[0])
    if out_s == 0.0:
        raise OpNotImplemented("qnn.requantize: output_scale is 0")
    multipliers = in_s / out_s
    same = in_s.size == 1 and float(in_s[0]) == out_s
    dtype = "int32" if attrs.compute_dtype == "int64" else attrs.compute_dtype
    t = R.subtract(
        R.cast(x, dtype), R.cast(_along_axis(in_zero, types[2], ndim, attrs.axis), dtype)
    )
    out_zero = _along_axis(out_zero, types[4], ndim, attrs.axis)
    if attrs.compute_dtype == "int64":
        if not same:
            t = _fixed_point_rescale(t, multipliers, ndim, attrs)
        t = R.add(t, R.cast(out_zero, "int32"))
    else:
        if not same:
            t = R.multiply(t, _per_axis_const(multipliers, ndim, attrs.axis, dtype))
        t = R.add(t, R.cast(out_zero, dtype))
        t = R.cast(_round_float(t, attrs.rounding, dtype), "int32")
    return t if attrs.out_dtype == "int32" else _clip_cast(t, attrs.out_dtype)


class _Attrs:
    """The attrs of a requantize made inside another lowering."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def requantize_with_config(x, xtype, scale, zero, out_scale, out_zero, axis, out_dtype):
    """requantize with the current requantize_config, as TVM's lowerings rescale inputs."""
    attrs = _Attrs(axis=axis, out_dtype=out_dtype, **CONFIG[-1])
    scalar = type(xtype)((), "float32")  # the parameters' rank is all _along_axis reads
    ptype = [xtype, _param_type(scale, scalar), _param_type(zero, scalar),
             _param_type(out_scale, scalar), _param_type(out_zero, scalar)]  # fmt: skip
    return requantize([x, scale, zero, out_scale, out_zero], ptype, attrs)


def _param_type(e: Any, scalar: Any) -> Any:
    v = _value(e)
    if v is not None:
        return type(scalar)(v.shape, str(v.dtype))
    return e.checked_type


def _to_output(x, xtype, scale, zero, out_scale, out_zero, axis) -> Any:
    if _same(scale, out_scale) and _same(zero, out_zero):
        return R.cast(x, "int32")
    return requantize_with_config(x, xtype, scale, zero, out_scale, out_zero, axis, "int32")


def _add_or_subtract(combine: Any, restore: Any):
    def lower(args, types, attrs):
        lhs, rhs, ls, lz, rs, rz, os, oz = args
        a = _to_output(lhs, types[0], ls, lz, os, oz, attrs.lhs_axis)
        b = _to_output(rhs, types[1], rs, rz, os, oz, attrs.rhs_axis)
        out = combine(a, b)
        if not _is_scalar(oz, 0):
            out = restore(out, R.cast(oz, "int32"))
        return _clip_cast(out, types[0].dtype)

    return lower


add = _add_or_subtract(R.add, R.subtract)
subtract = _add_or_subtract(R.subtract, R.add)


def mul(args, types, attrs):
    lhs, rhs, ls, lz, rs, rz, os, oz = args
    scales = [_value(ls), _value(rs)]
    if any(v is None or v.size != 1 for v in scales):
        raise OpNotImplemented("qnn.mul: only constant per-tensor lhs_scale and rhs_scale")
    a = R.subtract(R.cast(lhs, "int32"), R.cast(lz, "int32"))
    b = R.subtract(R.cast(rhs, "int32"), R.cast(rz, "int32"))
    scale = const(np.float32(scales[0].item()) * np.float32(scales[1].item()))
    product = R.multiply(a, b)
    ptype = type(types[0])(types[0].shape, "int32")
    return requantize_with_config(product, ptype, scale, const(np.int32(0)), os, oz, -1,
                                  types[0].dtype)  # fmt: skip


def concatenate(args, types, attrs):
    data, scales, zeros, out_scale, out_zero = args
    fields = types[0].fields
    items = (
        data.fields
        if isinstance(data, Tuple)
        else [TupleGetItem(data, i) for i in range(len(fields))]
    )
    if not isinstance(scales, Tuple) or not isinstance(zeros, Tuple):
        raise OpNotImplemented("qnn.concatenate: input_scales and input_zero_points must be tuples")
    parts = []
    for x, xtype, s, z in zip(items, fields, scales.fields, zeros.fields):
        if not (_same(s, out_scale) and _same(z, out_zero)):
            x = requantize_with_config(x, xtype, s, z, out_scale, out_zero, -1, xtype.dtype)
        parts.append(x)
    return R.concatenate(parts, attrs.axis)


LOWERINGS = {
    "qnn.quantize": quantize,
    "qnn.dequantize": dequantize,
    "qnn.requantize": requantize,
    "qnn.add": add,
    "qnn.subtract": subtract,
    "qnn.mul": mul,
    "qnn.concatenate": concatenate,
}
