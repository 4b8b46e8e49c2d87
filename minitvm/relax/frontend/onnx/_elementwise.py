"""Elementwise ONNX converters: arithmetic, comparisons, activations, casts, constants."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....error import (
    OpAttributeInvalid,
    OpAttributeRequired,
    OpAttributeUnImplemented,
    OpNotImplemented,
)
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._helpers import (
    _axis,
    _const_like,
    _dtype,
    _ndim,
    _operands,
    _required,
    _scalar,
    _tensor,
    _unsupported,
    shape_of,
)

# ----------------------------------------------------------------------------- elementwise


def _unary(relax_op: Callable) -> Callable:
    def convert(ctx, inputs, attrs):
        return ctx.emit(relax_op(ctx.expr(inputs[0])))

    return convert


def _binary(relax_op: Callable) -> Callable:
    def convert(ctx, inputs, attrs):
        return ctx.emit(relax_op(*_operands(ctx, inputs[0], inputs[1])))

    return convert


def _variadic(relax_op: Callable) -> Callable:
    """Sum/Max/Min/Mean of any number of broadcast inputs."""

    def convert(ctx, inputs, attrs):
        out = ctx.expr(inputs[0])
        for value in inputs[1:]:
            out = ctx.emit(relax_op(*_operands(ctx, out, value)))
        return out

    return convert


def _mean(ctx, inputs, attrs):
    total = _variadic(R.add)(ctx, inputs, attrs)
    return ctx.emit(R.divide(total, ctx.expr(np.asarray(len(inputs), _dtype(total)))))


def _div(ctx, inputs, attrs):
    a, b = _operands(ctx, inputs[0], inputs[1])
    if _dtype(a).startswith(("int", "uint")):
        # ONNX integer Div truncates toward zero: the floor quotient, plus one where a remainder
        # is left and the signs differ (no |a| or a*b, which overflow for small int types)
        q = ctx.emit(R.floor_divide(a, b))
        if _dtype(a).startswith("uint"):
            return q
        zero = _const_like(ctx, q, 0)
        inexact = ctx.emit(R.not_equal(ctx.emit(R.floor_mod(a, b)), zero))
        signs = ctx.emit(R.not_equal(ctx.emit(R.less(a, zero)), ctx.emit(R.less(b, zero))))
        up = ctx.emit(R.logical_and(inexact, signs))
        return ctx.emit(R.where(up, ctx.emit(R.add(q, _const_like(ctx, q, 1))), q))
    return ctx.emit(R.divide(a, b))


def _pow(ctx, inputs, attrs):
    base = ctx.expr(inputs[0])
    exponent = inputs[1]
    if isinstance(exponent, np.ndarray) and exponent.size == 1 and float(exponent) == 2.0:
        return ctx.emit(R.multiply(base, base))
    if not _dtype(base).startswith(("float", "bfloat")):
        return _int_pow(ctx, base, ctx.expr(exponent))
    return ctx.emit(
        R.power(
            base,
            _tensor(ctx, exponent, base)
            if not isinstance(exponent, Expr)
            else ctx.emit(R.astype(exponent, _dtype(base))),
        )
    )


def _int_pow(ctx, base: Expr, exponent: Expr) -> Expr:
    """Pow of integer data: in float64, then back to the base's type, as ONNX's reference; an
    integer exponent's result is rounded first (libm's pow may miss an exact integer by an ulp),
    a float exponent's truncated, as numpy's cast does."""
    wide = ctx.emit(
        R.power(ctx.emit(R.astype(base, "float64")), ctx.emit(R.astype(exponent, "float64")))
    )
    if not _dtype(exponent).startswith(("float", "bfloat")):
        wide = ctx.emit(R.round(wide))
    return ctx.emit(R.astype(wide, _dtype(base)))


def _mod(ctx, inputs, attrs):
    """fmod=1: C's fmod (the sign of a); fmod=0: numpy.mod (the sign of b), also on floats."""
    a, b = _operands(ctx, inputs[0], inputs[1])
    fmod = int(attrs.get("fmod", 0))
    if fmod not in (0, 1):
        raise OpAttributeInvalid(f"attribute fmod={fmod} must be 0 or 1")
    if fmod or not _dtype(a).startswith("float"):
        return ctx.emit((R.mod if fmod else R.floor_mod)(a, b))
    # floats, fmod=0: the exact fmod moved into b's sign; a zero takes b's sign, as numpy.mod
    r = ctx.emit(R.mod(a, b))
    zero = _const_like(ctx, r, 0.0)
    moved = ctx.emit(R.not_equal(ctx.emit(R.less(r, zero)), ctx.emit(R.less(b, zero))))
    moved = ctx.emit(R.logical_and(moved, ctx.emit(R.not_equal(r, zero))))
    r = ctx.emit(R.where(moved, ctx.emit(R.add(r, b)), r))
    signed_zero = ctx.emit(R.multiply(ctx.emit(R.abs(r)), ctx.emit(R.sign(b))))
    return ctx.emit(R.where(ctx.emit(R.equal(r, zero)), signed_zero, r))


def _reciprocal(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    return ctx.emit(R.divide(ctx.expr(np.asarray(1, _dtype(x))), x))


def _leaky_relu(ctx, inputs, attrs):
    x, alpha = ctx.expr(inputs[0]), float(attrs.get("alpha", 0.01))
    if np.isfinite(alpha):
        return ctx.emit(R.nn.leakyrelu(x, alpha))
    # ONNX: x for x >= 0, so a 0 stays 0 even when alpha * 0 is NaN
    neg = ctx.emit(R.multiply(x, _const_like(ctx, x, alpha)))
    return ctx.emit(R.where(ctx.emit(R.less(x, _const_like(ctx, x, 0.0))), neg, x))


def _elu_expr(ctx, x: Expr, alpha: float, compare: Callable) -> Expr:
    """alpha * (exp(x) - 1) where `compare(x, 0)`, else x (Elu: x < 0; Selu: x <= 0)."""
    neg = ctx.emit(R.subtract(ctx.emit(R.exp(x)), _const_like(ctx, x, 1.0)))
    neg = ctx.emit(R.multiply(neg, _const_like(ctx, x, alpha)))
    return ctx.emit(R.where(ctx.emit(compare(x, _const_like(ctx, x, 0.0))), neg, x))


def _elu(ctx, inputs, attrs):
    return _elu_expr(ctx, ctx.expr(inputs[0]), float(attrs.get("alpha", 1.0)), R.less)


def _selu(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    elu = _elu_expr(ctx, x, alpha, R.less_equal)
    return ctx.emit(R.multiply(elu, _const_like(ctx, x, gamma)))


def _hard_sigmoid_expr(ctx, x: Expr, alpha: float, beta: float) -> Expr:
    y = ctx.emit(
        R.add(ctx.emit(R.multiply(x, _const_like(ctx, x, alpha))), _const_like(ctx, x, beta))
    )
    return ctx.emit(R.clip(y, 0.0, 1.0))


def _hard_sigmoid(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    return _hard_sigmoid_expr(ctx, x, float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5)))


def _hard_swish(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    return ctx.emit(R.multiply(x, _hard_sigmoid_expr(ctx, x, 1.0 / 6.0, 0.5)))


def _softplus(ctx, inputs, attrs):
    # log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))
    x = ctx.expr(inputs[0])
    tail = ctx.emit(R.exp(ctx.emit(R.negative(ctx.emit(R.abs(x))))))
    tail = ctx.emit(R.log(ctx.emit(R.add(tail, _const_like(ctx, x, 1.0)))))
    return ctx.emit(R.add(ctx.emit(R.maximum(x, _const_like(ctx, x, 0.0))), tail))


def _softsign(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    den = ctx.emit(R.add(ctx.emit(R.abs(x)), _const_like(ctx, x, 1.0)))
    return ctx.emit(R.divide(x, den))


def _gelu(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    approximate = attrs.get("approximate", "none")
    table = {"none": R.nn.gelu, "tanh": R.nn.gelu_tanh}
    if approximate not in table:
        _unsupported("approximate", approximate, sorted(table))
    return ctx.emit(table[approximate](x))


def _prelu(ctx, inputs, attrs):
    x, slope = _operands(ctx, inputs[0], inputs[1])
    neg = ctx.emit(R.multiply(x, slope))
    return ctx.emit(R.where(ctx.emit(R.less(x, _const_like(ctx, x, 0.0))), neg, x))


def _clip(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    if ctx.opset < 11:  # bounds were attributes before opset 11
        bounds = [attrs.get("min"), attrs.get("max")]
    else:
        bounds = [inputs[1] if len(inputs) > 1 else None, inputs[2] if len(inputs) > 2 else None]
    for bound, relax_op in zip(bounds, (R.maximum, R.minimum)):
        if bound is None:
            continue
        if isinstance(bound, Expr):
            x = ctx.emit(relax_op(x, bound))
        else:
            x = ctx.emit(relax_op(x, _tensor(ctx, np.asarray(bound), x)))
    return x


# the largest finite value of each float8 type: ONNX's `saturate` (default 1) clips to it
_FLOAT8_MAX = {
    "float8_e4m3fn": 448.0,
    "float8_e4m3fnuz": 240.0,
    "float8_e5m2": 57344.0,
    "float8_e5m2fnuz": 57344.0,
}


def _astype(ctx, x: Expr, dtype: str, attrs: dict) -> Expr:
    """Cast/CastLike: relax's astype converts to float8 without saturating (as ml_dtypes
    does: overflow gives inf or NaN); ONNX's saturate=1 first clips ±inf and finite
    overflow to ±max, leaving NaN alone. float8_e8m0fnu follows ONNX's own rule."""
    if dtype == "float8_e8m0fnu":
        from ._quantize import cast_to_e8m0

        return cast_to_e8m0(ctx, x, attrs.get("saturate", 1), attrs.get("round_mode", "up"))
    if dtype in _FLOAT8_MAX and attrs.get("saturate", 1):
        src = _dtype(x)
        if src not in ("float16", "float32", "float64"):
            src = "float32"  # exact for every int up to 2**24, and larger ones saturate
            x = ctx.emit(R.astype(x, src))
        hi = ctx.expr(np.array(_FLOAT8_MAX[dtype], dtype=src))
        lo = ctx.expr(np.array(-_FLOAT8_MAX[dtype], dtype=src))
        x = ctx.emit(R.where(R.greater(x, hi), hi, R.where(R.less(x, lo), lo, x)))
    return ctx.emit(R.astype(x, dtype))


def _cast(ctx, inputs, attrs):
    from .onnx_frontend import onnx_dtype

    return _astype(ctx, ctx.expr(inputs[0]), onnx_dtype(_required(attrs, "to")), attrs)


def _cast_like(ctx, inputs, attrs):
    target = ctx.expr(inputs[1]) if not isinstance(inputs[1], np.ndarray) else None
    dtype = _dtype(target) if target is not None else str(inputs[1].dtype)
    return _astype(ctx, ctx.expr(inputs[0]), dtype, attrs)


def _where(ctx, inputs, attrs):
    cond = ctx.expr(inputs[0])
    x, y = _operands(ctx, inputs[1], inputs[2])
    return ctx.emit(R.where(cond, x, y))


def _identity(ctx, inputs, attrs):
    return inputs[0]


def _dropout(ctx, inputs, attrs):
    # inference: the output is the input (training_mode, when given, must be false)
    training = inputs[2] if len(inputs) > 2 else None
    if training is not None and ctx.known_or_none(training) is None:
        from ._runtime_index import dropout_at_run_time

        ratio = inputs[1] if len(inputs) > 1 and inputs[1] is not None else np.float32(0.5)
        x = ctx.expr(inputs[0])
        y, mask = dropout_at_run_time(ctx, x, training, ratio, attrs.get("seed"))
        if len(ctx.node.output) < 2 or not ctx.node.output[1]:
            return y
        if mask is None:
            mask = ctx.emit(R.full(shape_of(y), ctx.expr(np.asarray(True)), "bool"))
        return [y, mask]
    if training is not None and bool(np.asarray(ctx.known(training, "training_mode"))):
        raise OpAttributeUnImplemented(
            "Dropout with training_mode=true is not supported; export in eval mode"
        )
    if len(ctx.node.output) < 2 or not ctx.node.output[1]:
        return inputs[0]
    x = ctx.expr(inputs[0])  # inference: the mask keeps every element
    return [inputs[0], ctx.emit(R.full(shape_of(x), ctx.expr(np.asarray(True)), "bool"))]


def _constant(ctx, inputs, attrs):
    kinds = {
        "value": lambda v: np.asarray(v),
        "value_float": lambda v: np.asarray(v, "float32"),
        "value_floats": lambda v: np.asarray(v, "float32"),
        "value_int": lambda v: np.asarray(v, "int64"),
        "value_ints": lambda v: np.asarray(v, "int64"),
    }
    for name, make in kinds.items():
        if name in attrs:
            return make(attrs[name])
    raise OpAttributeRequired(
        f"Constant needs one of the attributes {sorted(kinds)}; got {sorted(attrs)}"
    )


def _thresholded_relu(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    alpha = _const_like(ctx, x, float(attrs.get("alpha", 1.0)))
    return ctx.emit(R.where(ctx.emit(R.greater(x, alpha)), x, _const_like(ctx, x, 0.0)))


def _shrink(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    lambd, bias = float(attrs.get("lambd", 0.5)), float(attrs.get("bias", 0.0))
    low = ctx.emit(R.add(x, _const_like(ctx, x, bias)))
    high = ctx.emit(R.subtract(x, _const_like(ctx, x, bias)))
    zero = _const_like(ctx, x, 0.0)
    out = ctx.emit(R.where(ctx.emit(R.greater(x, _const_like(ctx, x, lambd))), high, zero))
    return ctx.emit(R.where(ctx.emit(R.less(x, _const_like(ctx, x, -lambd))), low, out))


def _celu(ctx, inputs, attrs):
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    x = ctx.expr(inputs[0])
    alpha = float(attrs.get("alpha", 1.0))
    scaled = ctx.emit(R.exp(ctx.emit(R.divide(x, _const_like(ctx, x, alpha)))))
    neg = ctx.emit(
        R.multiply(
            ctx.emit(R.subtract(scaled, _const_like(ctx, x, 1.0))), _const_like(ctx, x, alpha)
        )
    )
    zero = _const_like(ctx, x, 0.0)
    return ctx.emit(R.add(ctx.emit(R.maximum(x, zero)), ctx.emit(R.minimum(neg, zero))))


def _mish(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    return ctx.emit(R.multiply(x, ctx.emit(R.tanh(_softplus(ctx, [x], {})))))


def _tan(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    return ctx.emit(R.divide(ctx.emit(R.sin(x)), ctx.emit(R.cos(x))))


def _hyperbolic(sign: float) -> Callable:
    """sinh (sign -1) and cosh (sign +1): (exp(x) + sign * exp(-x)) / 2."""

    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        pos, neg = ctx.emit(R.exp(x)), ctx.emit(R.exp(ctx.emit(R.negative(x))))
        both = ctx.emit(R.add(pos, neg) if sign > 0 else R.subtract(pos, neg))
        return ctx.emit(R.multiply(both, _const_like(ctx, x, 0.5)))

    return convert


def _trilu(ctx, inputs, attrs):
    """Upper/lower triangle of the last two (static) dims, as a constant mask."""
    x = ctx.expr(inputs[0])
    k_in = inputs[1] if len(inputs) > 1 else None
    rows, cols = shape_of(x)[-2:]
    if isinstance(rows, PrimExpr) or isinstance(cols, PrimExpr):
        raise OpAttributeUnImplemented(
            f"Trilu on symbolic dims ({rows}, {cols}); give them in shape_dict"
        )
    upper = bool(attrs.get("upper", 1))
    if k_in is None or ctx.known_or_none(k_in) is not None:
        k = int(_scalar(ctx, k_in, "k")) if k_in is not None else 0
        keep = np.ones((rows, cols), bool)
        keep = np.triu(keep, k) if upper else np.tril(keep, k)
        return ctx.emit(R.where(ctx.expr(keep), x, _const_like(ctx, x, 0.0)))
    # k computed at run time: keep where column - row >= k (upper) or <= k (lower)
    diagonal = np.arange(cols, dtype="int64")[None, :] - np.arange(rows, dtype="int64")[:, None]
    k = ctx.emit(R.reshape(ctx.emit(R.astype(ctx.expr(k_in), "int64")), ()))
    keep = ctx.emit((R.greater_equal if upper else R.less_equal)(ctx.expr(diagonal), k))
    return ctx.emit(R.where(keep, x, _const_like(ctx, x, 0.0)))


def _eye_like(ctx, inputs, attrs):
    from .onnx_frontend import onnx_dtype

    x = ctx.expr(inputs[0])
    rows, cols = shape_of(x)
    if isinstance(rows, PrimExpr) or isinstance(cols, PrimExpr):
        raise OpAttributeUnImplemented(f"EyeLike on symbolic dims ({rows}, {cols})")
    dtype = onnx_dtype(attrs["dtype"]) if "dtype" in attrs else _dtype(x)
    return np.eye(rows, cols, int(attrs.get("k", 0)), dtype=dtype)


def _mean_variance_norm(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    axes = [_axis(a, _ndim(x)) for a in attrs.get("axes", [0, 2, 3])]
    centered = ctx.emit(R.subtract(x, ctx.emit(R.mean(x, axes, keepdims=True))))
    var = ctx.emit(R.mean(ctx.emit(R.multiply(centered, centered)), axes, keepdims=True))
    std = ctx.emit(R.sqrt(ctx.emit(R.add(var, _const_like(ctx, x, 1e-9)))))
    return ctx.emit(R.divide(centered, std))


# ----------------------------------------------------------------------------- more math


def _inverse_hyperbolic(kind: str) -> Callable:
    """asinh, acosh, atanh through log (no relax op of their own): the textbook identities."""

    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        one = _const_like(ctx, x, 1.0)
        if kind == "atanh":  # 0.5 * log((1 + x) / (1 - x))
            ratio = ctx.emit(R.divide(ctx.emit(R.add(one, x)), ctx.emit(R.subtract(one, x))))
            return ctx.emit(R.multiply(ctx.emit(R.log(ratio)), _const_like(ctx, x, 0.5)))
        if kind == "acosh":  # log(x + sqrt(x^2 - 1))
            root = ctx.emit(R.sqrt(ctx.emit(R.subtract(ctx.emit(R.multiply(x, x)), one))))
            return ctx.emit(R.log(ctx.emit(R.add(x, root))))
        # asinh, odd: sign(x) * log(|x| + sqrt(x^2 + 1)) keeps precision for negative x
        a = ctx.emit(R.abs(x))
        root = ctx.emit(R.sqrt(ctx.emit(R.add(ctx.emit(R.multiply(a, a)), one))))
        return ctx.emit(R.multiply(ctx.emit(R.sign(x)), ctx.emit(R.log(ctx.emit(R.add(a, root))))))

    return convert


def _is_inf(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    negative, positive = int(attrs.get("detect_negative", 1)), int(attrs.get("detect_positive", 1))
    inf = ctx.emit(R.isinf(x))
    if negative and positive:
        return inf
    if not negative and not positive:
        return ctx.emit(R.logical_and(inf, ctx.emit(R.not_equal(x, x))))  # all false
    side = (R.greater if positive else R.less)(x, _const_like(ctx, x, 0.0))
    return ctx.emit(R.logical_and(inf, ctx.emit(side)))


def _bit_shift(ctx, inputs, attrs):
    """x << y or x >> y (arithmetic on signed types); a shift < 0 or >= the width fills with
    the sign alone (-1 for a right shift of a negative x, else 0), as opset 28 defines."""
    a, b = _operands(ctx, inputs[0], inputs[1])
    direction = _required(attrs, "direction")
    table = {"LEFT": R.left_shift, "RIGHT": R.right_shift}
    if direction not in table:
        _unsupported("direction", direction, sorted(table))
    dtype = _dtype(a)
    if not dtype.startswith(("int", "uint")):
        raise OpAttributeInvalid(f"BitShift takes integer tensors, got {dtype}")
    bits = int(np.dtype(dtype).itemsize * 8)
    zero = _const_like(ctx, b, 0)
    outside = ctx.emit(R.greater_equal(b, _const_like(ctx, b, bits)))
    if dtype.startswith("int"):
        outside = ctx.emit(R.logical_or(outside, ctx.emit(R.less(b, zero))))
    shifted = ctx.emit(table[direction](a, ctx.emit(R.where(outside, zero, b))))
    fill = _const_like(ctx, a, 0)
    if direction == "RIGHT" and dtype.startswith("int"):
        negative = ctx.emit(R.less(a, _const_like(ctx, a, 0)))
        fill = ctx.emit(R.where(negative, _const_like(ctx, a, -1), fill))
    return ctx.emit(R.where(outside, fill, shifted))


def _hardmax(ctx, inputs, attrs):
    """1 at the first maximum along `axis` (default -1, opset 13), 0 elsewhere."""
    if ctx.opset < 13:
        raise OpNotImplemented(
            f"Hardmax before opset 13 (the 2-d view); the model has opset {ctx.opset}: convert "
            "it with onnx.version_converter.convert_version(model, 13)"
        )
    x = ctx.expr(inputs[0])
    ndim = _ndim(x)
    axis = _axis(int(attrs.get("axis", -1)), ndim)
    size = shape_of(x)[axis]
    if isinstance(size, PrimExpr):
        raise OpAttributeUnImplemented(f"Hardmax along a symbolic axis ({size})")
    first = ctx.emit(R.argmax(x, axis, keepdims=True))
    positions = np.arange(size, dtype="int64").reshape(
        [-1 if k == axis else 1 for k in range(ndim)]
    )
    hit = ctx.emit(R.equal(ctx.expr(positions), first))
    return ctx.emit(R.astype(hit, _dtype(x)))


def _lp_normalization(ctx, inputs, attrs):
    """x / ||x||_p along `axis` (p 1 or 2); a zero norm gives 0, as ONNX's reference."""
    x = ctx.expr(inputs[0])
    axis = _axis(int(attrs.get("axis", -1)), _ndim(x))
    p = int(attrs.get("p", 2))
    if p not in (1, 2):
        raise OpAttributeInvalid(f"attribute p={p} must be 1 or 2")
    a = ctx.emit(R.abs(x)) if p == 1 else ctx.emit(R.multiply(x, x))
    norm = ctx.emit(R.sum(a, [axis], keepdims=True))
    if p == 2:
        norm = ctx.emit(R.sqrt(norm))
    zero = _const_like(ctx, x, 0.0)
    is_zero = ctx.emit(R.equal(norm, zero))
    safe = ctx.emit(R.where(is_zero, _const_like(ctx, x, 1.0), norm))
    return ctx.emit(R.where(is_zero, zero, ctx.emit(R.divide(x, safe))))


def _bit_cast(ctx, inputs, attrs):
    from .onnx_frontend import onnx_dtype

    return ctx.emit(R.reinterpret(ctx.expr(inputs[0]), onnx_dtype(_required(attrs, "to"))))
