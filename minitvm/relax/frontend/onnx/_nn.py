"""Neural-network ONNX converters: convolutions, Gemm/MatMul, normalizations, pooling."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr, TupleGetItem
from ...struct_info import TensorStructInfo
from ._helpers import (
    _axis,
    _const_like,
    _dtype,
    _ndim,
    _operands,
    _prod,
    _required,
    _tensor,
    _unsupported,
    shape_of,
)

# ----------------------------------------------------------------------------- nn


def _spatial_pads(ctx, x: Expr, attrs: dict, kernel: list, strides: list, dilations: list) -> list:
    """ONNX pads [b1, b2, ..., e1, e2, ...] after resolving auto_pad."""
    nd = len(kernel)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        return _explicit_pads(attrs, nd)
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


def _positive_ints(attrs: dict, name: str, default: list, nd: int) -> list:
    """An int-list attribute of `nd` values, each at least 1 (kernel_shape, strides, dilations)."""
    values = list(attrs.get(name, default))
    if len(values) != nd or any(int(v) < 1 for v in values):
        raise OpAttributeInvalid(
            f"attribute {name}={values} must hold {nd} positive integers (one per spatial axis)"
        )
    return [int(v) for v in values]


def _explicit_pads(attrs: dict, nd: int) -> list:
    pads = [int(p) for p in attrs.get("pads", [0] * (2 * nd))]
    if len(pads) != 2 * nd or any(p < 0 for p in pads):
        raise OpAttributeInvalid(
            f"attribute pads={pads} must hold {2 * nd} non-negative integers "
            "(all begins, then all ends)"
        )
    return pads


def _conv_geometry(ctx, x, w, attrs) -> tuple[int, list, list, list]:
    nd = _ndim(x) - 2
    if nd not in (1, 2, 3):
        raise OpAttributeUnImplemented(
            f"{nd}-d convolution is not supported (only 1-d, 2-d and 3-d)"
        )
    w_kernel = list(shape_of(w)[2:])
    if len(w_kernel) != nd:
        raise OpAttributeInvalid(
            f"the weight has rank {len(w_kernel) + 2}, the input rank {nd + 2}; they must match"
        )
    kernel = _positive_ints(attrs, "kernel_shape", w_kernel, nd)
    if any(isinstance(d, int) and d != k for d, k in zip(w_kernel, kernel)):
        raise OpAttributeInvalid(
            f"attribute kernel_shape={kernel} contradicts the weight's spatial dims {w_kernel}; "
            "drop kernel_shape or make it equal to them"
        )
    strides = _positive_ints(attrs, "strides", [1] * nd, nd)
    dilations = _positive_ints(attrs, "dilations", [1] * nd, nd)
    if int(attrs.get("group", 1)) < 1:
        raise OpAttributeInvalid(f"attribute group={attrs['group']} must be at least 1")
    return nd, kernel, strides, dilations


def _conv(ctx, inputs, attrs):
    x, w = ctx.expr(inputs[0]), _tensor(ctx, inputs[1], None)
    nd, kernel, strides, dilations = _conv_geometry(ctx, x, w, attrs)
    pads = _spatial_pads(ctx, x, attrs, kernel, strides, dilations)
    groups = int(attrs.get("group", 1))
    conv = (R.nn.conv1d, R.nn.conv2d, R.nn.conv3d)[nd - 1]
    y = ctx.emit(conv(x, w, strides, pads, dilations, groups))
    return _add_channel_bias(ctx, y, inputs[2] if len(inputs) > 2 else None)


def _conv_transpose(ctx, inputs, attrs):
    x, w = ctx.expr(inputs[0]), ctx.expr(inputs[1])
    nd, kernel, strides, dilations = _conv_geometry(ctx, x, w, attrs)
    out_pad = [int(p) for p in attrs.get("output_padding", [0] * nd)]
    if len(out_pad) != nd or any(
        not 0 <= p < max(s, d) for p, s, d in zip(out_pad, strides, dilations)
    ):
        raise OpAttributeInvalid(
            f"attribute output_padding={out_pad} must hold {nd} values, each below its stride "
            f"{strides} or dilation {dilations}"
        )
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        _unsupported("auto_pad", auto_pad, ["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
    sizes = shape_of(x)[2:]
    wanted = None
    if "output_shape" in attrs:
        wanted = [int(v) for v in attrs["output_shape"]][-nd:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        wanted = [d * s if isinstance(d, int) else None for d, s in zip(sizes, strides)]
    if wanted is not None:
        pads_b, pads_e = [], []
        for i in range(nd):
            if isinstance(sizes[i], PrimExpr) or wanted[i] is None:
                raise OpAttributeUnImplemented(
                    f"output_shape/auto_pad={auto_pad} on a symbolic spatial dim {sizes[i]}; "
                    "give it in shape_dict"
                )
            natural = strides[i] * (sizes[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
            begin, end = _transpose_crop(natural, wanted[i], strides[i], auto_pad)
            out_pad[i] -= min(end, 0)  # rows added at the end are output padding
            pads_b.append(begin)
            pads_e.append(max(end, 0))
        pads = pads_b + pads_e
    else:
        pads = _explicit_pads(attrs, nd) if auto_pad == "NOTSET" else [0] * (2 * nd)
    groups = int(attrs.get("group", 1))
    if nd == 1:
        x, w = ctx.emit(R.expand_dims(x, 2)), ctx.emit(R.expand_dims(w, 2))
        strides, dilations, out_pad = [1, *strides], [1, *dilations], [0, *out_pad]
        pads = [0, pads[0], 0, pads[1]]
    transpose = R.nn.conv3d_transpose if nd == 3 else R.nn.conv2d_transpose
    y = ctx.emit(transpose(x, w, strides, pads, out_pad, dilations, groups))
    if nd == 1:
        y = ctx.emit(R.squeeze(y, [2]))
    return _add_channel_bias(ctx, y, inputs[2] if len(inputs) > 2 else None)


def _transpose_crop(natural: int, wanted: int, stride: int, auto_pad: str) -> tuple[int, int]:
    """(begin, end) pads turning a transposed conv's natural output size into `wanted`.

    Cropping (natural > wanted) takes the odd element from the end for SAME_UPPER and from the
    begin otherwise; growing (a negative total, less than one stride) adds the rows at the end,
    as onnxruntime does.
    """
    total = natural - wanted
    if total < 0:
        if -total >= stride:
            raise OpAttributeInvalid(
                f"output_shape dim {wanted} exceeds the natural size {natural} by a stride "
                f"({stride}) or more; no input of this size gives it"
            )
        return 0, total
    begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
    return begin, total - begin


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
    x = ctx.expr(inputs[0])
    gamma, beta, mean, var = (_tensor(ctx, v, x) for v in inputs[1:5])
    if attrs.get("training_mode", 0):
        return _batch_norm_training(ctx, x, gamma, beta, mean, var, attrs)
    out = ctx.emit(
        R.nn.batch_norm(
            x,
            gamma,
            beta,
            mean,
            var,
            axis=1,
            epsilon=float(attrs.get("epsilon", 1e-5)),
            training=False,
        )
    )
    return ctx.emit(TupleGetItem(out, 0))


def _batch_norm_training(ctx, x, gamma, beta, mean, var, attrs) -> list:
    """training_mode=1 (opset 14+): normalised by the batch's statistics (biased variance);
    the running statistics come out as `running * momentum + batch * (1 - momentum)`."""
    if ctx.opset < 14:
        raise OpAttributeUnImplemented(
            f"BatchNormalization training_mode=1 at opset {ctx.opset} (before 14 its outputs "
            "differ); export at opset 14 or later"
        )
    axes = [a for a in range(_ndim(x)) if a != 1]
    eps, momentum = float(attrs.get("epsilon", 1e-5)), float(attrs.get("momentum", 0.9))
    batch_mean = ctx.emit(R.mean(x, axes))
    batch_var = ctx.emit(R.variance(x, axes))
    per_channel = (-1,) + (1,) * (_ndim(x) - 2)

    def channel(v: Expr) -> Expr:
        return ctx.emit(R.reshape(v, per_channel))

    inv = ctx.emit(R.rsqrt(ctx.emit(R.add(batch_var, _const_like(ctx, x, eps)))))
    scale = ctx.emit(R.multiply(channel(gamma), channel(inv)))
    y = ctx.emit(R.multiply(ctx.emit(R.subtract(x, channel(batch_mean))), scale))
    y = ctx.emit(R.add(y, channel(beta)))

    def running(old: Expr, batch: Expr) -> Expr:
        kept = ctx.emit(R.multiply(old, _const_like(ctx, old, momentum)))
        new = ctx.emit(R.multiply(batch, _const_like(ctx, batch, 1.0 - momentum)))
        return ctx.emit(R.add(kept, new))

    if len(ctx.node.output) < 2:
        return y
    return [y, running(mean, batch_mean), running(var, batch_var)][: len(ctx.node.output)]


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
    y = ctx.emit(R.nn.layer_norm(x, gamma, beta, axes, eps, center=center))
    if len([o for o in ctx.node.output if o]) < 2:
        return y
    # the optional Mean and InvStdDev outputs, kept dims, in the stash type (float32)
    if int(attrs.get("stash_type", 1)) != 1:
        _unsupported("stash_type", attrs["stash_type"], [1])
    wide = x if _dtype(x) == "float32" else ctx.emit(R.astype(x, "float32"))
    mean = ctx.emit(R.mean(wide, axes, keepdims=True))
    var = ctx.emit(R.variance(wide, axes, keepdims=True))
    inv = ctx.emit(R.rsqrt(ctx.emit(R.add(var, _const_like(ctx, var, eps)))))
    return [y, mean, inv]


def _pool(kind: str) -> Callable:
    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        nd = _ndim(x) - 2
        if nd not in (1, 2, 3):
            raise OpAttributeUnImplemented(
                f"{nd}-d pooling is not supported (only 1-d, 2-d and 3-d)"
            )
        _required(attrs, "kernel_shape")
        kernel = _positive_ints(attrs, "kernel_shape", [], nd)
        strides = _positive_ints(attrs, "strides", [1] * nd, nd)
        dilations = _positive_ints(attrs, "dilations", [1] * nd, nd)
        pads = _spatial_pads(ctx, x, attrs, kernel, strides, dilations)
        explicit = attrs.get("auto_pad", "NOTSET") in ("NOTSET", "")  # as onnxruntime checks
        if explicit and any(p >= k for p, k in zip(pads, kernel + kernel)):
            raise OpAttributeInvalid(
                f"pads {pads} must each be smaller than the kernel {kernel} (a window made only "
                "of padding has no value)"
            )
        ceil = bool(attrs.get("ceil_mode", 0))
        if kind == "max":
            pool = (R.nn.max_pool1d, R.nn.max_pool2d, R.nn.max_pool3d)[nd - 1]
            y = ctx.emit(pool(x, kernel, strides, pads, dilations, ceil))
            if len(ctx.node.output) < 2 or not ctx.node.output[1]:
                return y
            order = int(attrs.get("storage_order", 0))
            if order not in (0, 1) or (order == 1 and nd == 3):
                # 3-d column-major indices: onnxruntime and ONNX's reference disagree (1.23)
                _unsupported("storage_order", order, "0, or 1 for 1-d and 2-d pools")
            window = (kernel, strides, pads, dilations)
            return [y, _max_pool_indices(ctx, x, y, window, order)]
        include = bool(attrs.get("count_include_pad", 0))
        if kind == "lp":  # (sum of |x|^p over the window)^(1/p): a mean counting the padding
            if not explicit and attrs["auto_pad"] != "VALID" and any(d != 1 for d in dilations):
                # onnxruntime and ONNX's reference place these windows differently (1.23)
                _unsupported("auto_pad", attrs["auto_pad"], "NOTSET or VALID with dilations")
            return _lp_pool(
                ctx, x, int(attrs.get("p", 2)), (kernel, strides, pads, dilations, ceil)
            )
        pool = (R.nn.avg_pool1d, R.nn.avg_pool2d, R.nn.avg_pool3d)[nd - 1]
        return ctx.emit(pool(x, kernel, strides, pads, dilations, ceil, include))

    return convert


def _max_pool_indices(ctx, x: Expr, y: Expr, window: tuple, order: int) -> Expr:
    """MaxPool's Indices: where each window's maximum sits, as a flat index into x.

    The window's taps, each a strided slice of x padded with -inf, are stacked and argmax
    picks the first largest (the one onnxruntime keeps); a constant table maps (tap, output
    position) to the tap's spatial offset, row-major (storage_order 0) or column-major (1)
    over the spatial dims; (n * C + c) * prod(spatial) is added."""
    kernel, strides, pads, dilations = window
    shape, out = shape_of(x), shape_of(y)
    if not all(isinstance(d, int) for d in shape + out):
        raise OpAttributeUnImplemented(
            f"MaxPool's Indices output on symbolic shape {list(shape)}; give it in shape_dict"
        )
    nd, (n, c), size = len(kernel), shape[:2], list(shape[2:])
    ends = [
        max((o - 1) * s + d * (k - 1) + 1 - sz - p, 0)
        for o, s, d, k, sz, p in zip(out[2:], strides, dilations, kernel, size, pads)
    ]
    if not _dtype(x).startswith("float"):  # padding must lose to every value: -inf
        raise OpAttributeUnImplemented(f"MaxPool's Indices output of {_dtype(x)} input")
    pairs = [(0, 0), (0, 0)] + list(zip(pads[:nd], ends))
    padded = ctx.emit(R.nn.pad(x, pairs, pad_value=-np.inf))
    taps, table = [], []
    grid = np.meshgrid(*[np.arange(o) for o in out[2:]], indexing="ij")
    for tap in itertools.product(*map(range, kernel)):
        begin = [t * d for t, d in zip(tap, dilations)]
        end = [b + (o - 1) * s + 1 for b, o, s in zip(begin, out[2:], strides)]
        view = R.strided_slice(padded, list(range(2, nd + 2)), begin, end, strides)
        taps.append(ctx.emit(R.expand_dims(ctx.emit(view), 0)))
        pos = [g * s - p + b for g, s, p, b in zip(grid, strides, pads, begin)]
        table.append(np.ravel_multi_index(pos, size, mode="clip", order="CF"[order]))
    best = ctx.emit(R.argmax(ctx.emit(R.concat(taps, 0)), 0))  # (N, C, out...)
    cells = int(np.prod(out[2:]))
    flat = ctx.emit(
        R.add(
            ctx.emit(R.multiply(ctx.emit(R.astype(best, "int64")), ctx.expr(np.int64(cells)))),
            ctx.expr(np.arange(cells, dtype="int64").reshape(out[2:])),
        )
    )
    spatial = ctx.emit(R.take(ctx.expr(np.stack(table).reshape(-1).astype("int64")), flat, 0))
    base = (np.arange(n * c, dtype="int64") * int(np.prod(size))).reshape([n, c] + [1] * nd)
    return ctx.emit(R.add(spatial, ctx.expr(base)))


def _lp_pool(ctx, x: Expr, p: int, window: tuple) -> Expr:
    if p < 1:
        raise OpAttributeInvalid(f"attribute p={p} must be a positive integer")
    if window[4] and any(d != 1 for d in window[3]):
        # windows running past the end: onnxruntime and ONNX's reference give different sums
        # (onnxruntime 1.23, onnx 1.23); rather than pick one, the case is declined
        _unsupported("ceil_mode", 1, "0 when LpPool has dilations")
    pool = (R.nn.avg_pool1d, R.nn.avg_pool2d, R.nn.avg_pool3d)[_ndim(x) - 3]
    powered = (
        ctx.emit(R.abs(x))
        if p == 1
        else ctx.emit(R.power(ctx.emit(R.abs(x)), _const_like(ctx, x, p)))
    )
    mean = ctx.emit(pool(powered, *window, True))
    total = ctx.emit(R.multiply(mean, _const_like(ctx, x, float(np.prod(window[0])))))
    if p == 1:
        return total
    return ctx.emit(R.power(total, _const_like(ctx, x, 1.0 / p)))


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
