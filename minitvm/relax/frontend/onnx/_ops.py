"""Converters from ONNX nodes to relax.op calls: one function per op_type, in `CONVERTERS`.

A converter takes the import context (`ctx`: emit, constants, known inputs, `ctx.opset`),
the node's inputs in ONNX order (None for an omitted optional input; numpy arrays for known
values, relax expressions otherwise) and its attributes as a dict, and returns the node's
output value (or a list of them). Where an op's meaning changed between opsets the converter
branches on `ctx.opset` in one place, with the opset named.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeRequired, OpAttributeUnImplemented
from ....tir.expr import IntImm, PrimExpr
from ... import op as R
from ...expr import Expr, TupleGetItem
from ...struct_info import TensorStructInfo
from ._shape import SymTensor

_INT64_MAX = 2**63 - 1


# ----------------------------------------------------------------------------- helpers


def shape_of(x: Expr) -> tuple:
    """Dims of a tensor: ints where static, tir PrimExprs where symbolic."""
    sinfo = x.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        raise OpAttributeUnImplemented(f"an input of unknown shape ({sinfo}) cannot be converted")
    return tuple(int(d.value) if isinstance(d, IntImm) else d for d in sinfo.shape)


def _ndim(x: Expr) -> int:
    return len(shape_of(x))


def _dtype(x: Expr) -> str:
    return str(x.struct_info.dtype)


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise OpAttributeInvalid(f"axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def _required(attrs: dict, name: str) -> Any:
    if name not in attrs:
        raise OpAttributeRequired(f"attribute {name!r} is required but missing")
    return attrs[name]


def _unsupported(name: str, value: Any, supported: Any) -> None:
    raise OpAttributeUnImplemented(
        f"attribute {name}={value!r} is not supported; supported: {supported}"
    )


def _tensor(ctx, value: Any, like: Expr | None = None) -> Expr:
    """An input as a relax expression; a known array takes `like`'s dtype when it has one."""
    if isinstance(value, np.ndarray) and like is not None:
        return ctx.expr(value.astype(_dtype(like)))
    return ctx.expr(value)


def _operands(ctx, a: Any, b: Any) -> tuple[Expr, Expr]:
    """Both operands as expressions of one dtype (a known one follows the computed one)."""
    if isinstance(a, np.ndarray) and isinstance(b, Expr):
        return _tensor(ctx, a, b), b
    if isinstance(b, np.ndarray) and isinstance(a, Expr):
        return a, _tensor(ctx, b, a)
    return ctx.expr(a), ctx.expr(b)


def _scalar(ctx, value: Any, what: str) -> float:
    array = np.asarray(ctx.known(value, what))
    if array.size != 1:
        raise OpAttributeInvalid(f"input '{what}' must hold one value, got shape {array.shape}")
    return float(array.reshape(-1)[0])


def _prod(dims) -> Any:
    """Product of dims; symbolic products are simplified (1 * n -> n) so kernels can size them."""
    from ....arith import Analyzer

    out = 1
    for d in dims:
        out = out * d
    if isinstance(out, PrimExpr):
        out = Analyzer().simplify(out)
        return int(out.value) if isinstance(out, IntImm) else out
    return out


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
        # ONNX integer Div truncates toward zero: sign(a*b) * (|a| // |b|)
        q = ctx.emit(R.floor_divide(ctx.emit(R.abs(a)), ctx.emit(R.abs(b))))
        return ctx.emit(R.multiply(ctx.emit(R.sign(ctx.emit(R.multiply(a, b)))), q))
    return ctx.emit(R.divide(a, b))


def _pow(ctx, inputs, attrs):
    base = ctx.expr(inputs[0])
    exponent = inputs[1]
    if isinstance(exponent, np.ndarray) and exponent.size == 1 and float(exponent) == 2.0:
        return ctx.emit(R.multiply(base, base))
    return ctx.emit(
        R.power(
            base,
            _tensor(ctx, exponent, base)
            if not isinstance(exponent, Expr)
            else ctx.emit(R.astype(exponent, _dtype(base))),
        )
    )


def _mod(ctx, inputs, attrs):
    a, b = _operands(ctx, inputs[0], inputs[1])
    if attrs.get("fmod", 0):
        # C fmod: the remainder has a's sign
        q = ctx.emit(R.divide(a, b))
        trunc = ctx.emit(R.multiply(ctx.emit(R.sign(q)), ctx.emit(R.floor(ctx.emit(R.abs(q))))))
        return ctx.emit(R.subtract(a, ctx.emit(R.multiply(trunc, b))))
    return ctx.emit(R.floor_mod(a, b))


def _reciprocal(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    return ctx.emit(R.divide(ctx.expr(np.asarray(1, _dtype(x))), x))


def _const_like(ctx, x: Expr, value: float) -> Expr:
    return ctx.expr(np.asarray(value, _dtype(x)))


def _leaky_relu(ctx, inputs, attrs):
    return ctx.emit(R.nn.leakyrelu(ctx.expr(inputs[0]), float(attrs.get("alpha", 0.01))))


def _elu(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    alpha = float(attrs.get("alpha", 1.0))
    neg = ctx.emit(R.subtract(ctx.emit(R.exp(x)), _const_like(ctx, x, 1.0)))
    neg = ctx.emit(R.multiply(neg, _const_like(ctx, x, alpha)))
    return ctx.emit(R.where(ctx.emit(R.greater(x, _const_like(ctx, x, 0.0))), x, neg))


def _selu(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    elu = _elu(ctx, [x], {"alpha": alpha})
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


def _cast(ctx, inputs, attrs):
    from .onnx_frontend import onnx_dtype

    return ctx.emit(R.astype(ctx.expr(inputs[0]), onnx_dtype(_required(attrs, "to"))))


def _cast_like(ctx, inputs, attrs):
    target = ctx.expr(inputs[1]) if not isinstance(inputs[1], np.ndarray) else None
    dtype = _dtype(target) if target is not None else str(inputs[1].dtype)
    return ctx.emit(R.astype(ctx.expr(inputs[0]), dtype))


def _where(ctx, inputs, attrs):
    cond = ctx.expr(inputs[0])
    x, y = _operands(ctx, inputs[1], inputs[2])
    return ctx.emit(R.where(cond, x, y))


def _identity(ctx, inputs, attrs):
    return inputs[0]


def _dropout(ctx, inputs, attrs):
    # inference: the output is the input (training_mode, when given, must be false)
    if (
        len(inputs) > 2
        and inputs[2] is not None
        and bool(np.asarray(ctx.known(inputs[2], "training_mode")))
    ):
        raise OpAttributeUnImplemented(
            "Dropout with training_mode=true is not supported; export in eval mode"
        )
    return inputs[0]


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
    k = int(_scalar(ctx, inputs[1], "k")) if len(inputs) > 1 and inputs[1] is not None else 0
    rows, cols = shape_of(x)[-2:]
    if isinstance(rows, PrimExpr) or isinstance(cols, PrimExpr):
        raise OpAttributeUnImplemented(
            f"Trilu on symbolic dims ({rows}, {cols}); give them in shape_dict"
        )
    keep = np.ones((rows, cols), bool)
    keep = np.triu(keep, k) if attrs.get("upper", 1) else np.tril(keep, k)
    return ctx.emit(R.where(ctx.expr(keep), x, _const_like(ctx, x, 0.0)))


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


# ----------------------------------------------------------------------------- nn


def _spatial_pads(ctx, x: Expr, attrs: dict, kernel: list, strides: list, dilations: list) -> list:
    """ONNX pads [b1, b2, ..., e1, e2, ...] after resolving auto_pad."""
    nd = len(kernel)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        return list(attrs.get("pads", [0] * (2 * nd)))
    if auto_pad == "VALID":
        return [0] * (2 * nd)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        _unsupported("auto_pad", auto_pad, ["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
    sizes = shape_of(x)[2:]
    before, after = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        if isinstance(size, PrimExpr):
            raise OpAttributeUnImplemented(
                f"auto_pad={auto_pad} on a symbolic spatial dim {size}; give it in shape_dict"
            )
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        before.append(small if auto_pad == "SAME_UPPER" else big)
        after.append(big if auto_pad == "SAME_UPPER" else small)
    return before + after


def _add_channel_bias(ctx, y: Expr, bias: Any) -> Expr:
    if bias is None:
        return y
    bias = _tensor(ctx, bias, y)
    return ctx.emit(R.add(y, ctx.emit(R.reshape(bias, (-1,) + (1,) * (_ndim(y) - 2)))))


def _conv_geometry(ctx, x, w, attrs) -> tuple[int, list, list, list]:
    nd = _ndim(x) - 2
    if nd not in (1, 2):
        raise OpAttributeUnImplemented(f"{nd}-d convolution is not supported (only 1-d and 2-d)")
    kernel = list(attrs.get("kernel_shape", shape_of(w)[2:]))
    strides = list(attrs.get("strides", [1] * nd))
    dilations = list(attrs.get("dilations", [1] * nd))
    return nd, kernel, strides, dilations


def _conv(ctx, inputs, attrs):
    x, w = ctx.expr(inputs[0]), _tensor(ctx, inputs[1], None)
    nd, kernel, strides, dilations = _conv_geometry(ctx, x, w, attrs)
    pads = _spatial_pads(ctx, x, attrs, kernel, strides, dilations)
    groups = int(attrs.get("group", 1))
    if nd == 1:
        y = ctx.emit(R.nn.conv1d(x, w, strides, pads, dilations, groups))
    else:
        y = ctx.emit(R.nn.conv2d(x, w, strides, pads, dilations, groups))
    return _add_channel_bias(ctx, y, inputs[2] if len(inputs) > 2 else None)


def _conv_transpose(ctx, inputs, attrs):
    x, w = ctx.expr(inputs[0]), ctx.expr(inputs[1])
    nd, kernel, strides, dilations = _conv_geometry(ctx, x, w, attrs)
    out_pad = list(attrs.get("output_padding", [0] * nd))
    if "output_shape" in attrs:
        sizes = shape_of(x)[2:]
        pads_b, pads_e = [], []
        for i in range(nd):
            total = strides[i] * (sizes[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
            total -= attrs["output_shape"][-nd + i]
            lower = attrs.get("auto_pad") == "SAME_LOWER"
            pads_b.append(total - total // 2 if lower else total // 2)
            pads_e.append(total // 2 if lower else total - total // 2)
        pads = pads_b + pads_e
    elif attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "", "VALID"):
        raise OpAttributeUnImplemented(
            f"ConvTranspose with auto_pad={attrs['auto_pad']} and no output_shape"
        )
    else:
        pads = list(attrs.get("pads", [0] * (2 * nd)))
    groups = int(attrs.get("group", 1))
    if nd == 1:
        x, w = ctx.emit(R.expand_dims(x, 2)), ctx.emit(R.expand_dims(w, 2))
        strides, dilations, out_pad = [1, *strides], [1, *dilations], [0, *out_pad]
        pads = [0, pads[0], 0, pads[1]]
    y = ctx.emit(R.nn.conv2d_transpose(x, w, strides, pads, out_pad, dilations, groups))
    if nd == 1:
        y = ctx.emit(R.squeeze(y, [2]))
    return _add_channel_bias(ctx, y, inputs[2] if len(inputs) > 2 else None)


def _gemm(ctx, inputs, attrs):
    a, b = ctx.expr(inputs[0]), _tensor(ctx, inputs[1], None)
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    if attrs.get("transA", 0):
        a = ctx.emit(R.permute_dims(a, [1, 0]))
    if attrs.get("transB", 0):
        y = ctx.emit(R.nn.linear(a, b))  # a @ b.T without materialising the transpose
    else:
        y = ctx.emit(R.matmul(a, b))
    if alpha != 1.0:
        y = ctx.emit(R.multiply(y, _const_like(ctx, y, alpha)))
    c = inputs[2] if len(inputs) > 2 else None
    if c is not None and beta != 0.0:
        c = _tensor(ctx, c, y)
        if beta != 1.0:
            c = ctx.emit(R.multiply(c, _const_like(ctx, c, beta)))
        y = ctx.emit(R.add(y, c))
    return y


def _matmul(ctx, inputs, attrs):
    a, b = _operands(ctx, inputs[0], inputs[1])
    a, b = _match_inner_dims(ctx, a, b)
    return ctx.emit(R.matmul(a, b))


def _match_inner_dims(ctx, a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """An unknown contraction dim facing a known one is checked at run time by a match_cast."""
    if _ndim(a) < 2 or _ndim(b) < 1:
        return a, b
    k_a, k_b = shape_of(a)[-1], shape_of(b)[-2 if _ndim(b) > 1 else -1]
    if isinstance(k_a, PrimExpr) and isinstance(k_b, int):
        a = ctx.bb.match_cast(a, TensorStructInfo(shape_of(a)[:-1] + (k_b,), _dtype(a)))
    elif isinstance(k_b, PrimExpr) and isinstance(k_a, int):
        dims = list(shape_of(b))
        dims[-2 if _ndim(b) > 1 else -1] = k_a
        b = ctx.bb.match_cast(b, TensorStructInfo(tuple(dims), _dtype(b)))
    return a, b


def _batch_norm(ctx, inputs, attrs):
    if attrs.get("training_mode", 0):
        raise OpAttributeUnImplemented(
            "BatchNormalization with training_mode=1; export in eval mode"
        )
    x = ctx.expr(inputs[0])
    gamma, beta, mean, var = (_tensor(ctx, v, x) for v in inputs[1:5])
    out = ctx.emit(
        R.nn.batch_norm(
            x, gamma, beta, mean, var, axis=1, epsilon=float(attrs.get("epsilon", 1e-5))
        )
    )
    return ctx.emit(TupleGetItem(out, 0))


def _instance_norm(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    gamma, beta = _tensor(ctx, inputs[1], x), _tensor(ctx, inputs[2], x)
    channels = shape_of(x)[1]
    axes = list(range(2, _ndim(x)))
    return ctx.emit(
        R.nn.group_norm(x, gamma, beta, channels, 1, axes, float(attrs.get("epsilon", 1e-5)))
    )


def _layer_norm(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    ndim = _ndim(x)
    axis = _axis(int(attrs.get("axis", -1)), ndim)
    gamma = _tensor(ctx, inputs[1], x)
    beta = inputs[2] if len(inputs) > 2 else None
    center = beta is not None
    beta = _tensor(ctx, beta, x) if center else ctx.expr(np.zeros(shape_of(gamma), _dtype(x)))
    axes = list(range(axis, ndim))
    eps = float(attrs.get("epsilon", 1e-5))
    return ctx.emit(R.nn.layer_norm(x, gamma, beta, axes, eps, center=center))


def _pool(kind: str) -> Callable:
    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        nd = _ndim(x) - 2
        if nd not in (1, 2):
            raise OpAttributeUnImplemented(f"{nd}-d pooling is not supported (only 1-d and 2-d)")
        kernel = list(_required(attrs, "kernel_shape"))
        strides = list(attrs.get("strides", [1] * nd))
        dilations = list(attrs.get("dilations", [1] * nd))
        pads = _spatial_pads(ctx, x, attrs, kernel, strides, dilations)
        ceil = bool(attrs.get("ceil_mode", 0))
        if kind == "max":
            if int(attrs.get("storage_order", 0)):
                _unsupported("storage_order", attrs["storage_order"], [0])
            pool = R.nn.max_pool1d if nd == 1 else R.nn.max_pool2d
            return ctx.emit(pool(x, kernel, strides, pads, dilations, ceil))
        include = bool(attrs.get("count_include_pad", 0))
        if nd == 1:
            return ctx.emit(R.nn.avg_pool1d(x, kernel, strides, pads, dilations, ceil, include))
        return ctx.emit(R.nn.avg_pool2d(x, kernel, strides, pads, dilations, ceil, include))

    return convert


def _global_pool(relax_op: Callable) -> Callable:
    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        return ctx.emit(relax_op(x, list(range(2, _ndim(x))), keepdims=True))

    return convert


def _softmax(relax_op: Callable) -> Callable:
    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        ndim = _ndim(x)
        if ctx.opset >= 13:  # opset 13: along one axis, default -1
            return ctx.emit(relax_op(x, _axis(int(attrs.get("axis", -1)), ndim)))
        # before 13: over the 2-d view (prod(dims[:axis]), prod(dims[axis:])), default axis 1
        axis = _axis(int(attrs.get("axis", 1)), ndim)
        shape = shape_of(x)
        flat = ctx.emit(R.reshape(x, (_prod(shape[:axis]), _prod(shape[axis:]))))
        return ctx.emit(R.reshape(ctx.emit(relax_op(flat, 1)), shape))

    return convert


# ----------------------------------------------------------------------------- shapes


def _shape(ctx, inputs, attrs):
    value = inputs[0]
    dims = list(value.shape) if isinstance(value, np.ndarray | SymTensor) else list(shape_of(value))
    start, end = attrs.get("start", 0), attrs.get("end", len(dims))  # opset 15
    dims = dims[start:end]
    from ._shape import make

    values = np.empty(len(dims), dtype=object)
    values[:] = dims
    return make(values, "int64")


def _size(ctx, inputs, attrs):
    from ._shape import make

    dims = list(shape_of(ctx.expr(inputs[0])))
    return make(np.asarray(_prod(dims), dtype=object), "int64")


def _target_shape(ctx, x: Expr, shape: list, allowzero: bool) -> tuple:
    """ONNX reshape rules: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    in_shape = shape_of(x)
    dims = [
        in_shape[i] if (isinstance(d, int) and d == 0 and not allowzero) else d
        for i, d in enumerate(shape)
    ]
    unknown = [i for i, d in enumerate(dims) if isinstance(d, int) and d == -1]
    if len(unknown) > 1:
        raise OpAttributeInvalid(f"shape {shape} has more than one -1")
    if unknown:
        known = [d for i, d in enumerate(dims) if i != unknown[0]]
        dims[unknown[0]] = _quotient(list(in_shape), known)
    return tuple(dims)


def _quotient(numerator: list, denominator: list) -> Any:
    """prod(numerator) // prod(denominator), cancelling symbolic dims found on both sides."""
    from ....arith import Analyzer
    from ....ir.structural import structural_equal

    rest = list(numerator)
    for d in list(denominator):
        match = next(
            (
                i
                for i, n in enumerate(rest)
                if isinstance(d, PrimExpr) and isinstance(n, PrimExpr) and structural_equal(n, d)
            ),
            None,
        )
        if match is not None:
            rest.pop(match)
            denominator.remove(d)
    out = Analyzer().simplify(_as_prim(_prod(rest)) // _as_prim(_prod(denominator)))
    return int(out.value) if isinstance(out, IntImm) else out


def _as_prim(value: Any) -> PrimExpr:
    return value if isinstance(value, PrimExpr) else IntImm("int64", int(value))


def _reshape(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    if ctx.opset < 5:
        shape = list(attrs["shape"])
    else:
        shape = ctx.ints(inputs[1], "shape")
    return ctx.emit(R.reshape(x, _target_shape(ctx, x, shape, bool(attrs.get("allowzero", 0)))))


def _flatten(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    shape = shape_of(x)
    axis = int(attrs.get("axis", 1))
    axis = axis % len(shape) if axis < 0 else axis
    return ctx.emit(R.reshape(x, (_prod(shape[:axis]), _prod(shape[axis:]))))


def _transpose(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    perm = attrs.get("perm", list(range(_ndim(x)))[::-1])
    return ctx.emit(R.permute_dims(x, list(perm)))


def _axes_input(ctx, inputs: list, attrs: dict, index: int, since: int) -> list[int] | None:
    """Axes given as an input from opset `since`, as an attribute before it."""
    if ctx.opset >= since:
        value = inputs[index] if len(inputs) > index else None
        return None if value is None else [int(a) for a in ctx.ints(value, "axes")]
    return attrs.get("axes")


def _unsqueeze(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    axes = _axes_input(ctx, inputs, attrs, 1, 13)
    if axes is None:
        raise OpAttributeRequired("Unsqueeze needs axes")
    rank = _ndim(x) + len(axes)
    for axis in sorted(_axis(a, rank) for a in axes):
        x = ctx.emit(R.expand_dims(x, axis))
    return x


def _squeeze(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    axes = _axes_input(ctx, inputs, attrs, 1, 13)
    if axes is not None:
        axes = [_axis(a, _ndim(x)) for a in axes]
    return ctx.emit(R.squeeze(x, axes))


def _concat(ctx, inputs, attrs):
    tensors = [ctx.expr(v) for v in inputs if v is not None]
    axis = _axis(int(_required(attrs, "axis")), _ndim(tensors[0]))
    dtype = _dtype(tensors[0])
    tensors = [t if _dtype(t) == dtype else ctx.emit(R.astype(t, dtype)) for t in tensors]
    return ctx.emit(R.concat(tensors, axis))


def _split(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    axis = _axis(int(attrs.get("axis", 0)), _ndim(x))
    split = _axes_input(ctx, inputs, {"axes": attrs.get("split")}, 1, 13)
    num_outputs = int(attrs.get("num_outputs", len(ctx.node.output)))
    dim = shape_of(x)[axis]
    if split is None:
        if isinstance(dim, PrimExpr):
            return _tuple_items(ctx, ctx.emit(R.split(x, num_outputs, axis)), num_outputs)
        chunk = -(-dim // num_outputs)  # opset 18: the last chunk may be smaller
        split = [min(chunk, dim - i * chunk) for i in range(num_outputs)]
    if len(split) == 1:
        return [x]
    bounds = list(np.cumsum(split)[:-1])
    parts = ctx.emit(R.split(x, [int(b) for b in bounds], axis))
    return _tuple_items(ctx, parts, len(split))


def _tuple_items(ctx, tup: Expr, n: int) -> list:
    return [ctx.emit(TupleGetItem(tup, i)) for i in range(n)]


def _gather(ctx, inputs, attrs):
    data = ctx.expr(inputs[0])
    axis = _axis(int(attrs.get("axis", 0)), _ndim(data))
    indices = inputs[1]
    dim = shape_of(data)[axis]
    if isinstance(indices, np.ndarray):
        if not isinstance(dim, PrimExpr):
            bad = indices[(indices < -dim) | (indices >= dim)]
            if bad.size:
                raise OpAttributeInvalid(
                    f"indices {bad.tolist()} are out of range for a dim of size {dim}"
                )
            indices = np.where(indices < 0, indices + dim, indices)
        elif (indices < 0).any():
            raise OpAttributeUnImplemented(f"negative indices on a symbolic dim {dim}")
        return ctx.emit(R.take(data, ctx.expr(indices.astype("int64")), axis))
    indices = ctx.expr(indices)
    # negative indices count from the end: i + dim where i < 0
    zero = ctx.expr(np.asarray(0, _dtype(indices)))
    if isinstance(dim, PrimExpr):
        raise OpAttributeUnImplemented(f"run-time indices on a symbolic dim {dim}")
    shifted = ctx.emit(R.add(indices, ctx.expr(np.asarray(dim, _dtype(indices)))))
    indices = ctx.emit(R.where(ctx.emit(R.less(indices, zero)), shifted, indices))
    return ctx.emit(R.take(data, indices, axis))


def _gather_elements(ctx, inputs, attrs):
    """out[i][j][k] = data[index][j][k] (axis 0): a take from the flat data at computed offsets."""
    data, indices = ctx.expr(inputs[0]), ctx.expr(inputs[1])
    d_shape, i_shape = shape_of(data), shape_of(indices)
    if any(isinstance(d, PrimExpr) for d in d_shape + i_shape):
        raise OpAttributeUnImplemented("GatherElements on symbolic dims; give them in shape_dict")
    axis = _axis(int(attrs.get("axis", 0)), len(d_shape))
    strides = np.cumprod((1,) + d_shape[::-1][:-1])[::-1].astype("int64")
    grid = np.indices(i_shape, dtype="int64")
    base = sum(grid[k] * strides[k] for k in range(len(d_shape)) if k != axis)
    idx = ctx.emit(R.astype(indices, "int64")) if _dtype(indices) != "int64" else indices
    zero, dim = ctx.expr(np.asarray(0, "int64")), ctx.expr(np.asarray(d_shape[axis], "int64"))
    idx = ctx.emit(R.where(ctx.emit(R.less(idx, zero)), ctx.emit(R.add(idx, dim)), idx))
    offsets = ctx.emit(R.add(ctx.emit(R.multiply(idx, ctx.expr(strides[axis]))), ctx.expr(base)))
    flat = ctx.emit(R.reshape(data, (_prod(d_shape),)))
    return ctx.emit(R.take(flat, offsets, 0))


def _slice(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    shape = shape_of(x)
    if ctx.opset < 10:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends = ctx.ints(inputs[1], "starts"), ctx.ints(inputs[2], "ends")
        axes = ctx.ints(inputs[3], "axes") if len(inputs) > 3 and inputs[3] is not None else None
        steps = ctx.ints(inputs[4], "steps") if len(inputs) > 4 and inputs[4] is not None else None
    axes = list(range(len(starts))) if axes is None else [_axis(a, len(shape)) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    keep = [
        (a, b, e, s)
        for a, b, e, s in zip(axes, starts, ends, steps)
        if not _is_full(shape[a], b, e, s)
    ]
    if not keep:
        return x
    for part in keep:
        if any(isinstance(v, PrimExpr) for v in part[1:]):
            raise OpAttributeUnImplemented(
                f"slice bounds {part[1:]} on axis {part[0]} are symbolic"
            )
    a, b, e, s = zip(*keep)
    e = [min(v, _INT64_MAX) for v in e]
    return ctx.emit(R.strided_slice(x, list(a), list(b), list(e), list(s)))


def _is_full(dim: Any, begin: int, end: int, step: int) -> bool:
    """A slice that keeps the whole axis (end may be INT64_MAX or the symbolic dim itself)."""
    if step != 1 or not (isinstance(begin, int) and begin == 0):
        return False
    if isinstance(end, int) and end >= _INT64_MAX // 2:
        return True
    return not isinstance(dim, PrimExpr) and isinstance(end, int) and end >= dim or end is dim


def _expand(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    target = ctx.ints(inputs[1], "shape")
    in_shape = list(shape_of(x))
    rank = max(len(in_shape), len(target))
    in_shape = [1] * (rank - len(in_shape)) + in_shape
    target = [1] * (rank - len(target)) + target
    out = []
    for i, (a, b) in enumerate(zip(in_shape, target)):
        if isinstance(b, int) and b == 1:
            out.append(a)
        elif isinstance(a, int) and a == 1:
            out.append(b)
        elif isinstance(a, int) and isinstance(b, int) and a != b:
            raise OpAttributeInvalid(f"cannot expand dim {i} of size {a} to {b}")
        else:
            out.append(a)
    if tuple(out) == tuple(shape_of(x)):
        return x
    return ctx.emit(R.broadcast_to(x, tuple(out)))


def _constant_of_shape(ctx, inputs, attrs):
    value = np.asarray(attrs.get("value", np.zeros(1, "float32")))
    dims = ctx.ints(inputs[0], "input")
    return ctx.emit(R.full(tuple(dims), ctx.expr(value.reshape(())), str(value.dtype)))


def _tile(ctx, inputs, attrs):
    return ctx.emit(R.tile(ctx.expr(inputs[0]), ctx.ints(inputs[1], "repeats")))


def _pad(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    ndim = _ndim(x)
    mode = attrs.get("mode", "constant")
    modes = {"constant": "constant", "edge": "edge", "reflect": "reflect"}
    if mode not in modes:
        _unsupported("mode", mode, sorted(modes))
    pads = ctx.ints(inputs[1], "pads") if ctx.opset >= 11 else list(attrs["pads"])
    value = inputs[2] if len(inputs) > 2 else None
    fill = (
        _scalar(ctx, value, "constant_value")
        if value is not None
        else float(attrs.get("value", 0.0))
    )
    axes = ctx.ints(inputs[3], "axes") if len(inputs) > 3 and inputs[3] is not None else range(ndim)
    axes = [_axis(a, ndim) for a in axes]
    if len(pads) != 2 * len(axes):
        raise OpAttributeInvalid(
            f"pads {pads} must hold 2 values per padded axis ({len(axes)} axes)"
        )
    if any(p < 0 for p in pads):
        raise OpAttributeUnImplemented(f"negative pads {pads} (cropping); use Slice")
    pairs = [(0, 0)] * ndim
    for i, a in enumerate(axes):
        pairs[a] = (pads[i], pads[i + len(axes)])
    return ctx.emit(R.nn.pad(x, pad_width=pairs, pad_value=fill, pad_mode=modes[mode]))


def _range(ctx, inputs, attrs):
    raise OpAttributeUnImplemented(
        "Range with bounds computed at run time; give the dims in shape_dict so it folds"
    )


def _depth_to_space(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    b = int(_required(attrs, "blocksize"))
    n, c, h, w = shape_of(x)
    if attrs.get("mode", "DCR") == "DCR":
        y = ctx.emit(R.reshape(x, (n, b, b, c // b // b, h, w)))
        y = ctx.emit(R.permute_dims(y, [0, 3, 4, 1, 5, 2]))
    else:  # CRD
        y = ctx.emit(R.reshape(x, (n, c // b // b, b, b, h, w)))
        y = ctx.emit(R.permute_dims(y, [0, 1, 4, 2, 5, 3]))
    return ctx.emit(R.reshape(y, (n, c // b // b, h * b, w * b)))


def _space_to_depth(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    b = int(_required(attrs, "blocksize"))
    n, c, h, w = shape_of(x)
    y = ctx.emit(R.reshape(x, (n, c, h // b, b, w // b, b)))
    y = ctx.emit(R.permute_dims(y, [0, 3, 5, 1, 2, 4]))
    return ctx.emit(R.reshape(y, (n, c * b * b, h // b, w // b)))


# ----------------------------------------------------------------------------- reductions


def _reduce(relax_op: Callable, since: int) -> Callable:
    """ReduceX: axes became an input at opset `since` (13 for ReduceSum, 18 for the others)."""

    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        axes = _axes_input(ctx, inputs, attrs, 1, since)
        keepdims = bool(attrs.get("keepdims", 1))
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(_ndim(x)))
        axes = [_axis(a, _ndim(x)) for a in axes]
        return ctx.emit(relax_op(ctx, x, axes, keepdims))

    return convert


def _simple_reduce(relax_op: Callable) -> Callable:
    return lambda ctx, x, axes, keepdims: relax_op(x, axes, keepdims)


def _reduce_l2(ctx, x, axes, keepdims):
    return R.sqrt(ctx.emit(R.sum(ctx.emit(R.multiply(x, x)), axes, keepdims)))


def _reduce_sum_square(ctx, x, axes, keepdims):
    return R.sum(ctx.emit(R.multiply(x, x)), axes, keepdims)


def _reduce_l1(ctx, x, axes, keepdims):
    return R.sum(ctx.emit(R.abs(x)), axes, keepdims)


def _reduce_log_sum(ctx, x, axes, keepdims):
    return R.log(ctx.emit(R.sum(x, axes, keepdims)))


def _reduce_log_sum_exp(ctx, x, axes, keepdims):
    top = ctx.emit(R.max(x, axes, keepdims=True))
    shifted = ctx.emit(R.exp(ctx.emit(R.subtract(x, top))))
    out = ctx.emit(R.add(ctx.emit(R.log(ctx.emit(R.sum(shifted, axes, keepdims=True)))), top))
    return R.squeeze(out, axes) if not keepdims else R.add(out, _const_like(ctx, out, 0.0))


def _arg_reduce(relax_op: Callable) -> Callable:
    def convert(ctx, inputs, attrs):
        if attrs.get("select_last_index", 0):
            _unsupported("select_last_index", 1, [0])
        x = ctx.expr(inputs[0])
        axis = _axis(int(attrs.get("axis", 0)), _ndim(x))
        return ctx.emit(relax_op(x, axis, bool(attrs.get("keepdims", 1))))

    return convert


def _cumsum(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    axis = _axis(int(_scalar(ctx, inputs[1], "axis")), _ndim(x))
    if attrs.get("reverse", 0):
        x = ctx.emit(R.flip(x, axis))
    y = ctx.emit(R.cumsum(x, axis, exclusive=bool(attrs.get("exclusive", 0))))
    return ctx.emit(R.flip(y, axis)) if attrs.get("reverse", 0) else y


def _einsum(ctx, inputs, attrs):
    return ctx.emit(
        R.einsum([ctx.expr(v) for v in inputs], _required(attrs, "equation").replace(" ", ""))
    )


# ----------------------------------------------------------------------------- resize

_RESIZE_MODES = {"nearest": "nearest_neighbor", "linear": "linear"}
_NEAREST_ROUNDING = {
    "round_prefer_floor": "round_prefer_floor",
    "round_prefer_ceil": "round_prefer_ceil",
    "floor": "floor",
    "ceil": "ceil",
}
_COORD_MODES = (
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
)


def _resize(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    if _ndim(x) != 4:
        raise OpAttributeUnImplemented(f"Resize of a rank-{_ndim(x)} tensor (only NCHW, rank 4)")
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    rounding = attrs.get("nearest_mode", "round_prefer_floor")
    if mode not in _RESIZE_MODES:
        _unsupported("mode", mode, sorted(_RESIZE_MODES))
    if coord not in _COORD_MODES:
        _unsupported("coordinate_transformation_mode", coord, list(_COORD_MODES))
    if rounding not in _NEAREST_ROUNDING:
        _unsupported("nearest_mode", rounding, sorted(_NEAREST_ROUNDING))
    for name in ("antialias", "exclude_outside"):
        if attrs.get(name, 0):
            _unsupported(name, attrs[name], [0])
    if "axes" in attrs or attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise OpAttributeUnImplemented("Resize with axes or keep_aspect_ratio_policy (opset 18)")
    in_hw = shape_of(x)[2:]
    scales = inputs[2] if len(inputs) > 2 else None
    sizes = inputs[3] if len(inputs) > 3 else None
    if sizes is not None and np.asarray(ctx.known(sizes, "sizes")).size:
        out_hw = ctx.ints(sizes, "sizes")[2:]
    elif scales is not None:
        scale = np.asarray(ctx.known(scales, "scales"), "float64")
        if scale.size != 4 or scale[0] != 1 or scale[1] != 1:
            raise OpAttributeUnImplemented(
                f"Resize scales {scale.tolist()}: only H and W may scale"
            )
        out_hw = []
        for dim, s in zip(in_hw, scale[2:]):
            if isinstance(dim, PrimExpr) or dim * s != int(dim * s):
                # ORT maps coordinates with the scale, the kernel with out/in; only equal when exact
                raise OpAttributeUnImplemented(
                    f"Resize scale {s} on a dim of size {dim} gives no whole output size; use sizes"
                )
            out_hw.append(int(dim * s))
    else:
        raise OpAttributeRequired("Resize needs scales or sizes")
    rounding = _NEAREST_ROUNDING[rounding] if mode == "nearest" else "round"
    return ctx.emit(
        R.image.resize2d(
            x,
            tuple(out_hw),
            layout="NCHW",
            method=_RESIZE_MODES[mode],
            coordinate_transformation_mode=coord,
            rounding_method=rounding,
            extrapolation_value=float(attrs.get("extrapolation_value", 0.0)),
        )
    )


# ----------------------------------------------------------------------------- the table


def _unary_table() -> dict[str, Callable]:
    ops = {
        "Relu": R.nn.relu,
        "Sigmoid": R.sigmoid,
        "Tanh": R.tanh,
        "Exp": R.exp,
        "Log": R.log,
        "Sqrt": R.sqrt,
        "Neg": R.negative,
        "Abs": R.abs,
        "Erf": R.erf,
        "Floor": R.floor,
        "Ceil": R.ceil,
        "Round": R.round,
        "Sign": R.sign,
        "Sin": R.sin,
        "Cos": R.cos,
        "Not": R.logical_not,
    }
    return {name: _unary(op) for name, op in ops.items()}


def _binary_table() -> dict[str, Callable]:
    ops = {
        "Add": R.add,
        "Sub": R.subtract,
        "Mul": R.multiply,
        "Equal": R.equal,
        "Less": R.less,
        "LessOrEqual": R.less_equal,
        "Greater": R.greater,
        "GreaterOrEqual": R.greater_equal,
        "And": R.logical_and,
        "Or": R.logical_or,
        "Xor": R.logical_xor,
    }
    return {name: _binary(op) for name, op in ops.items()}


CONVERTERS: dict[str, Callable] = {
    **_unary_table(),
    **_binary_table(),
    "Div": _div,
    "Pow": _pow,
    "Mod": _mod,
    "Reciprocal": _reciprocal,
    "Sum": _variadic(R.add),
    "Max": _variadic(R.maximum),
    "Min": _variadic(R.minimum),
    "Mean": _mean,
    "LeakyRelu": _leaky_relu,
    "Elu": _elu,
    "Selu": _selu,
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish,
    "Softplus": _softplus,
    "Softsign": _softsign,
    "Gelu": _gelu,
    "PRelu": _prelu,
    "Clip": _clip,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Where": _where,
    "Identity": _identity,
    "Dropout": _dropout,
    "Constant": _constant,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm,
    "LayerNormalization": _layer_norm,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_pool(R.mean),
    "GlobalMaxPool": _global_pool(R.max),
    "Softmax": _softmax(R.nn.softmax),
    "LogSoftmax": _softmax(R.nn.log_softmax),
    "Shape": _shape,
    "Size": _size,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Split": _split,
    "Gather": _gather,
    "GatherElements": _gather_elements,
    "Slice": _slice,
    "Expand": _expand,
    "ConstantOfShape": _constant_of_shape,
    "Tile": _tile,
    "Pad": _pad,
    "Range": _range,
    "ReduceSum": _reduce(_simple_reduce(R.sum), 13),
    "ReduceMean": _reduce(_simple_reduce(R.mean), 18),
    "ReduceMax": _reduce(_simple_reduce(R.max), 18),
    "ReduceMin": _reduce(_simple_reduce(R.min), 18),
    "ReduceProd": _reduce(_simple_reduce(R.prod), 18),
    "ReduceL2": _reduce(_reduce_l2, 18),
    "ReduceSumSquare": _reduce(_reduce_sum_square, 18),
    "ReduceLogSumExp": _reduce(_reduce_log_sum_exp, 18),
    "ReduceL1": _reduce(_reduce_l1, 18),
    "ReduceLogSum": _reduce(_reduce_log_sum, 18),
    "ThresholdedRelu": _thresholded_relu,
    "Shrink": _shrink,
    "Celu": _celu,
    "Mish": _mish,
    "Tan": _tan,
    "Sinh": _hyperbolic(-1.0),
    "Cosh": _hyperbolic(1.0),
    "Trilu": _trilu,
    "EyeLike": _eye_like,
    "MeanVarianceNormalization": _mean_variance_norm,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "ArgMax": _arg_reduce(R.argmax),
    "ArgMin": _arg_reduce(R.argmin),
    "CumSum": _cumsum,
    "Einsum": _einsum,
    "Resize": _resize,
}

# ops whose value at import time is not a function of their inputs' values alone
NEVER_FOLD = frozenset({"Shape", "Size", "Constant", "Dropout", "RandomNormal", "RandomUniform"})
