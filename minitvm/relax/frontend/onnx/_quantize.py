"""Linear (de)quantization converters: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
QLinearMatMul and QLinearConv, for 2-, 4-, 8-, 16- and 32-bit integer types, float8 and
float4; and Cast's conversion to float8_e8m0fnu.

Everything is computed in float32 and rounded half to even once, as ONNX defines: a quantized
value is saturate(round(x / scale) + zero_point); a dequantized one (q - zero_point) * scale.
To a float8 type the value x / scale + zero_point is cast as Cast does (rounded to nearest even,
clipped to the type's largest value unless saturate=0); to float4_e2m1fn it is cast as
ml_dtypes casts, which saturates whatever `saturate` says (float4 has no inf to give). The 2-
and 4-bit types are held one per byte. Scales may be per tensor (a scalar), per axis (1-D
along `axis`) or blocked (`block_size`).
"""

from __future__ import annotations

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._helpers import _axis, _dtype, _ndim, _unsupported, shape_of

# the integer types QuantizeLinear saturates to, with their ranges
_INTEGER_RANGES = {
    "int2": (-2, 1),
    "uint2": (0, 3),
    "int4": (-8, 7),
    "uint4": (0, 15),
    **{t: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in ("int8", "uint8", "int16")},
    **{t: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in ("uint16", "int32", "uint32")},
}
_INTEGER_TYPES = tuple(_INTEGER_RANGES)
# the float types QuantizeLinear casts to (float8_e8m0fnu is no quantized type in ONNX)
_FLOAT8_TYPES = (
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float4_e2m1fn",
)


def _f32(ctx, value) -> Expr:
    x = ctx.expr(value)
    return x if _dtype(x) == "float32" else ctx.emit(R.astype(x, "float32"))


def _broadcast_param(ctx, param, x: Expr, attrs: dict, what: str) -> Expr:
    """A scale or zero point (float32) shaped to broadcast against x."""
    p = _f32(ctx, param)
    shape, ndim = shape_of(p), _ndim(x)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return p
    axis = _axis(int(attrs.get("axis", 1)), ndim)
    block = int(attrs.get("block_size", 0))
    if block == 0:
        if len(shape) != 1:
            raise OpAttributeInvalid(f"{what} of rank {len(shape)} needs block_size")
        return ctx.emit(R.reshape(p, [-1 if k == axis else 1 for k in range(ndim)]))
    if len(shape) != ndim:
        raise OpAttributeInvalid(f"blocked {what} must have the input's rank {ndim}")
    size = shape_of(x)[axis]
    if isinstance(size, PrimExpr):
        raise OpAttributeUnImplemented(f"blocked quantization along a symbolic axis ({size})")
    p = ctx.emit(R.repeat(p, block, axis))
    if shape[axis] * block != size:  # the last block is partial
        p = ctx.emit(R.strided_slice(p, [axis], [0], [size]))
    return p


def _quantize_expr(
    ctx, x: Expr, scale: Expr, zero: Expr | None, dtype: str, saturate: int = 1
) -> Expr:
    if dtype in _FLOAT8_TYPES:
        from ._elementwise import _astype

        q = ctx.emit(R.divide(x, scale))
        if zero is not None:
            q = ctx.emit(R.add(q, zero))
        return _astype(ctx, q, dtype, {"saturate": saturate})
    if dtype not in _INTEGER_TYPES:
        _unsupported("output type", dtype, [*_INTEGER_TYPES, *_FLOAT8_TYPES])
    q = ctx.emit(R.round(ctx.emit(R.divide(x, scale))))
    if zero is not None:
        q = ctx.emit(R.add(q, zero))
    low, high = _INTEGER_RANGES[dtype]
    q = ctx.emit(R.clip(q, float(low), float(high)))
    return ctx.emit(R.astype(q, dtype))


def _output_dtype(ctx, attrs: dict, zero, default: str) -> str:
    from .onnx_frontend import onnx_dtype

    if int(attrs.get("output_dtype", 0)):
        return onnx_dtype(int(attrs["output_dtype"]))
    if zero is not None:
        return str(zero.dtype) if isinstance(zero, np.ndarray) else _dtype(ctx.expr(zero))
    return default


def _quantize_linear(ctx, inputs, attrs):
    x = _f32(ctx, inputs[0])
    saturate = int(attrs.get("saturate", 1))
    if saturate not in (0, 1):
        _unsupported("saturate", saturate, [0, 1])
    if "precision" in attrs and int(attrs["precision"]) not in (0, 1):
        _unsupported("precision", attrs["precision"], "float32")
    zero_in = inputs[2] if len(inputs) > 2 else None
    dtype = _output_dtype(ctx, attrs, zero_in, "uint8")
    scale = _broadcast_param(ctx, inputs[1], x, attrs, "y_scale")
    zero = _broadcast_param(ctx, zero_in, x, attrs, "y_zero_point") if zero_in is not None else None
    # ONNX: saturate only applies to float8 outputs; integer outputs always saturate
    return _quantize_expr(ctx, x, scale, zero, dtype, saturate)


def _dequantize_linear(ctx, inputs, attrs):
    from .onnx_frontend import onnx_dtype

    x = ctx.expr(inputs[0])
    if _dtype(x) not in _INTEGER_TYPES + _FLOAT8_TYPES:
        _unsupported("input type", _dtype(x), [*_INTEGER_TYPES, *_FLOAT8_TYPES])
    scale_in = ctx.expr(inputs[1])
    out = onnx_dtype(int(attrs["output_dtype"])) if int(attrs.get("output_dtype", 0)) else None
    xf = _f32(ctx, x)
    if len(inputs) > 2 and inputs[2] is not None:
        xf = ctx.emit(R.subtract(xf, _broadcast_param(ctx, inputs[2], x, attrs, "x_zero_point")))
    y = ctx.emit(R.multiply(xf, _broadcast_param(ctx, scale_in, x, attrs, "x_scale")))
    dtype = out or _dtype(scale_in)
    return y if dtype == "float32" else ctx.emit(R.astype(y, dtype))


def _dynamic_quantize_linear(ctx, inputs, attrs):
    """uint8 with scale = (max(x, 0) - min(x, 0)) / 255 and zero point round(-min / scale)."""
    x = _f32(ctx, inputs[0])
    zero = ctx.expr(np.asarray(0.0, "float32"))
    high = ctx.emit(R.maximum(ctx.emit(R.max(x)), zero))
    low = ctx.emit(R.minimum(ctx.emit(R.min(x)), zero))
    scale = ctx.emit(R.divide(ctx.emit(R.subtract(high, low)), ctx.expr(np.float32(255.0))))
    # an all-zero x has scale 0: every value quantizes to the zero point, 0
    safe = ctx.emit(R.where(ctx.emit(R.equal(scale, zero)), ctx.expr(np.float32(1.0)), scale))
    zp = ctx.emit(
        R.clip(ctx.emit(R.round(ctx.emit(R.divide(ctx.emit(R.negative(low)), safe)))), 0.0, 255.0)
    )
    y = _quantize_expr(ctx, x, safe, zp, "uint8")
    return [y, scale, ctx.emit(R.astype(zp, "uint8"))]


def _dequantized(ctx, q, scale, zero) -> Expr:
    """(q - zero) * scale in float32, for per-tensor parameters."""
    qf = _f32(ctx, q)
    if zero is not None:
        qf = ctx.emit(R.subtract(qf, _f32(ctx, zero)))
    return ctx.emit(R.multiply(qf, _f32(ctx, scale)))


def _per_tensor(ctx, values: list, names: list) -> None:
    for v, name in zip(values, names):
        if v is not None and int(np.prod(shape_of(ctx.expr(v)))) != 1:
            raise OpAttributeUnImplemented(f"a per-axis {name}; only per-tensor parameters")


def _qlinear_matmul(ctx, inputs, attrs):
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = inputs
    _per_tensor(
        ctx,
        [a_scale, a_zero, b_scale, b_zero],
        ["a_scale", "a_zero_point", "b_scale", "b_zero_point"],
    )
    prod = ctx.emit(
        R.matmul(_dequantized(ctx, a, a_scale, a_zero), _dequantized(ctx, b, b_scale, b_zero))
    )
    dtype = _output_dtype(ctx, {}, y_zero, "uint8")
    return _quantize_expr(ctx, prod, _f32(ctx, y_scale), _f32(ctx, y_zero), dtype)


def _qlinear_conv(ctx, inputs, attrs):
    from ._nn import _conv

    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = inputs[:8]
    bias = inputs[8] if len(inputs) > 8 else None
    _per_tensor(
        ctx,
        [x_scale, x_zero, w_scale, w_zero],
        ["x_scale", "x_zero_point", "w_scale", "w_zero_point"],
    )
    xf, wf = _dequantized(ctx, x, x_scale, x_zero), _dequantized(ctx, w, w_scale, w_zero)
    if bias is not None:  # int32, in units of x_scale * w_scale
        bias = ctx.emit(
            R.multiply(
                _f32(ctx, bias), ctx.emit(R.multiply(_f32(ctx, x_scale), _f32(ctx, w_scale)))
            )
        )
    y = _conv(ctx, [xf, wf] + ([bias] if bias is not None else []), attrs)
    dtype = _output_dtype(ctx, {}, y_zero, "uint8")
    return _quantize_expr(ctx, y, _f32(ctx, y_scale), _f32(ctx, y_zero), dtype)


def _integer(op: str):
    """MatMulInteger / ConvInteger: (a - a_zero) op (b - b_zero) accumulated exactly, as int32."""

    def convert(ctx, inputs, attrs):
        from ._nn import _conv

        a, b = ctx.expr(inputs[0]), ctx.expr(inputs[1])
        zeros = [inputs[2] if len(inputs) > 2 else None, inputs[3] if len(inputs) > 3 else None]
        # float64 holds every 8-bit product sum exactly (up to 2**53), and all kernels take it
        wide = []
        for v, zero in zip((a, b), zeros):
            if _dtype(v) not in ("int8", "uint8"):
                _unsupported("input type", _dtype(v), ["int8", "uint8"])
            vf = ctx.emit(R.astype(v, "float64"))
            if zero is not None:
                z = ctx.emit(R.astype(ctx.expr(zero), "float64"))
                if op == "conv" and v is b and _ndim(z) == 1:  # per output channel
                    z = ctx.emit(R.reshape(z, [-1] + [1] * (_ndim(b) - 1)))
                vf = ctx.emit(R.subtract(vf, z))
            wide.append(vf)
        y = ctx.emit(R.matmul(*wide)) if op == "matmul" else _conv(ctx, wide, attrs)
        return ctx.emit(R.astype(y, "int32"))

    return convert


_E8M0_ROUND_MODES = ("up", "down", "nearest")


def cast_to_e8m0(ctx, x: Expr, saturate: int, round_mode: str) -> Expr:
    """ONNX's Cast to float8_e8m0fnu, which differs from relax's astype (ml_dtypes' rule):
    from x's float32 bits, the code is the biased exponent, sign ignored, plus one when
    `round_mode` rounds the mantissa up; zero gives 2^-127, inf and NaN give NaN, and
    saturate=1 keeps the largest power of two from rounding up into NaN."""
    if round_mode not in _E8M0_ROUND_MODES:
        _unsupported("round_mode", round_mode, list(_E8M0_ROUND_MODES))

    def u32(value: int) -> Expr:
        return ctx.expr(np.array(value, "uint32"))

    bits = ctx.emit(R.reinterpret(_f32(ctx, x), "uint32"))

    def has(mask: int) -> Expr:
        return ctx.emit(R.not_equal(ctx.emit(R.bitwise_and(bits, u32(mask))), u32(0)))

    exp = ctx.emit(R.bitwise_and(ctx.emit(R.right_shift(bits, u32(23))), u32(0xFF)))
    up = None
    if round_mode == "up":  # any mantissa bit
        up = has(0x7FFFFF)
    elif round_mode == "nearest":  # the half bit, then the rest or an implicit leading one
        rest = ctx.emit(R.logical_or(has(0x3FFFFF), ctx.emit(R.greater(exp, u32(0)))))
        up = ctx.emit(R.logical_and(has(0x400000), rest))
    if up is not None:
        if saturate:
            up = ctx.emit(R.logical_and(up, ctx.emit(R.not_equal(exp, u32(254)))))
        exp = ctx.emit(R.add(exp, ctx.emit(R.astype(up, "uint32"))))
    special = ctx.emit(R.equal(ctx.emit(R.bitwise_and(bits, u32(0x7F800000))), u32(0x7F800000)))
    code = ctx.emit(R.astype(ctx.emit(R.where(special, u32(255), exp)), "uint8"))
    return ctx.emit(R.reinterpret(code, "float8_e8m0fnu"))
