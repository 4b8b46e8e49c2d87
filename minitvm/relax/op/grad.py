"""Gradient rules: the `grad` column of the op table, and the few backward ops they need.

Each rule is `rule(orig_var, orig_call, output_grad, builder) -> [grad of each argument]`,
built from relax op calls so the backward graph goes through the same pipeline as the forward
one (legalized, fused, memory-planned). `orig_var` is the forward result (rules reuse it:
exp, tanh, softmax, ...), `output_grad` the adjoint of that result (a Tuple for tuple-valued
ops), `builder` has `emit(expr)` for values a rule uses twice. An argument that has no gradient
(indices, shapes) gets `None`; a Tuple argument (concat) gets a list, one entry per field.
Broadcasting is undone by summing over the broadcast axes (`collapse_sum_to`).

New ops (each an ordinary table row: shape rule, TE, numpy reference):
`relax.erf`, `relax.nn.relu_grad(x, g)` (g where x > 0), `relax.nn.conv2d_backward_data`,
`relax.nn.conv2d_backward_weight`, `relax.nn.max_pool2d_grad`, `relax.nn.avg_pool2d_grad`,
`relax.take_backward` (scatter-add of an embedding gradient); `relax.equal` (elementwise.py)
masks the arg-max/min of max/min reductions (ties: every tied element gets the gradient).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...error import MiniTVMError, ShapeError
from ...topi.transform import slice_bounds
from ...topi.utils import const_int, fmt_dim, fmt_shape, normalize_axes, normalize_axis, prove_equal
from ..expr import Call, Expr, Tuple, TupleGetItem, const
from ..struct_info import TensorStructInfo
from . import create, elementwise, linear_algebra, manipulate, statistical
from ._table import OP_TABLE
from .grad_ops import (  # noqa: F401 - re-exported
    _conv_attrs,
    _shape_expr,
    avg_pool2d_grad,
    broadcast_like,
    conv2d_backward_data,
    conv2d_backward_weight,
    erf,
    max_pool2d_grad,
    relu_grad,
    take_backward,
)
from .loss import nll_loss_backward

# ============================================================================ helpers


def shape_of(e: Expr, what: str = "") -> tuple:
    sinfo = e.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        raise ShapeError(
            f"relax.Gradient: {what or 'a value'} has no known shape ({sinfo}); gradients need "
            "tensors of known rank and shape (symbolic dims are fine)"
        )
    return tuple(sinfo.shape)


def dtype_of(e: Expr) -> str:
    return str(e.struct_info.dtype)


def zeros_like(e: Expr) -> Call:
    return broadcast_like(const(0, dtype_of(e)), e)


def ones_like(e: Expr) -> Call:
    return broadcast_like(const(1, dtype_of(e)), e)


def _same_shape(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(prove_equal(x, y) for x, y in zip(a, b))


def broadcast_to(e: Expr, like: Expr) -> Expr:
    """`e` broadcast (numpy rules) to the shape of `like`."""
    if _same_shape(shape_of(e), shape_of(like)):
        return e
    return broadcast_like(e, like)


def collapse_sum_to(g: Expr, shape: Sequence[Any]) -> Expr:
    """Sum `g` over the axes along which a tensor of `shape` was broadcast to g's shape."""
    gshape = shape_of(g, "an output gradient")
    shape = tuple(shape)
    lead = len(gshape) - len(shape)
    axes = list(range(lead)) + [
        lead + k
        for k, d in enumerate(shape)
        if const_int(d) == 1 and const_int(gshape[lead + k]) != 1
    ]
    if not axes:
        return g
    # keepdims=False, then reshape: the reshape fuses into consumers (a keepdims sum leaves an
    # extent-1 spatial loop in the reduction block, which the default schedule handles worse)
    out = statistical.sum(g, axes, keepdims=False)
    return manipulate.reshape(out, shape)


def _reduce_to(g: Expr, like: Expr) -> Expr:
    return collapse_sum_to(g, shape_of(like))


# ============================================================================ rules


def _binary(fn: Callable[[Any, Call, Expr, Any, Expr, Expr], tuple]) -> Callable:
    def rule(var: Any, call: Call, g: Expr, bb: Any) -> list:
        a, b = call.args
        ga, gb = fn(var, call, g, bb, a, b)
        return [_reduce_to(ga, a), _reduce_to(gb, b)]

    return rule


def _maximum(var, call, g, bb, a, b):
    ga = bb.emit(relu_grad(elementwise.subtract(a, b), g))
    return ga, elementwise.subtract(g, ga)


def _minimum(var, call, g, bb, a, b):
    ga = bb.emit(relu_grad(elementwise.subtract(b, a), g))
    return ga, elementwise.subtract(g, ga)


def _power(var, call, g, bb, a, b):
    ga = elementwise.multiply(
        g, elementwise.multiply(b, elementwise.power(a, elementwise.subtract(b, 1.0)))
    )
    gb = elementwise.multiply(elementwise.multiply(g, var), elementwise.log(a))
    return ga, gb


def _unary(fn: Callable[[Any, Expr, Expr], Expr]) -> Callable:
    return lambda var, call, g, bb: [fn(var, call.args[0], g)]


E = elementwise
_SQRT_2_OVER_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu(y, x, g):
    cdf = E.multiply(E.add(erf(E.multiply(x, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
    pdf = E.multiply(E.exp(E.multiply(E.multiply(x, x), -0.5)), _INV_SQRT_2PI)
    return E.multiply(g, E.add(cdf, E.multiply(x, pdf)))


def _relu(y, x, g):
    """g where x >= 0 (TVM's rule: the gradient passes at 0, so zero-initialised ReLU layers
    still train; torch's x > 0 differs only at exactly 0)."""
    return E.where(E.less(x, const(0, dtype_of(x))), const(0, dtype_of(g)), g)


def _keepdims_shape(call: Call) -> tuple:
    x = call.args[0]
    xs = shape_of(x)
    axes = normalize_axes(call.attrs["axis"], len(xs), call.op.name)
    return tuple(1 if k in axes else d for k, d in enumerate(xs)), axes


def _sum(var, call, g, bb):
    x = call.args[0]
    keep, _ = _keepdims_shape(call)
    return [broadcast_to(manipulate.reshape(g, keep), x)]


def _mean(var, call, g, bb):
    x = call.args[0]
    keep, axes = _keepdims_shape(call)
    xs = shape_of(x)
    counts = [const_int(xs[a]) for a in axes]
    if any(c is None for c in counts):  # the count is only known at run time: sum ones
        count = statistical.sum(ones_like(x), list(axes), keepdims=True)
        return [broadcast_to(E.divide(manipulate.reshape(g, keep), count), x)]
    scale = 1.0 / float(np.prod(counts)) if counts else 1.0
    return [broadcast_to(manipulate.reshape(E.multiply(g, scale), keep), x)]


def _sum_keepdims(x: Expr, axis: int) -> Expr:
    shape = shape_of(x)
    axis = normalize_axis(axis, len(shape), "relax.sum")
    keep = tuple(1 if k == axis else d for k, d in enumerate(shape))
    return manipulate.reshape(statistical.sum(x, [axis]), keep)


def _softmax(y, call, g, bb):
    axis = call.attrs["axis"]
    dot = _sum_keepdims(E.multiply(g, y), axis)
    return [E.multiply(y, E.subtract(g, dot))]


def _log_softmax(y, call, g, bb):
    axis = call.attrs["axis"]
    total = _sum_keepdims(g, axis)
    return [E.subtract(g, E.multiply(E.exp(y), total))]


def _swap_last(e: Expr) -> Expr:
    n = len(shape_of(e))
    return manipulate.permute_dims(e, list(range(n - 2)) + [n - 1, n - 2])


def _matmul(var, call, g, bb):
    a, b = call.args
    sa, sb = shape_of(a), shape_of(b)
    a2 = manipulate.expand_dims(a, 0) if len(sa) == 1 else a  # (1, K)
    b2 = manipulate.expand_dims(b, 1) if len(sb) == 1 else b  # (K, 1)
    g2 = g
    if len(sa) == 1:
        g2 = manipulate.expand_dims(g2, len(shape_of(g2)) - (0 if len(sb) == 1 else 1))
    if len(sb) == 1:
        g2 = manipulate.expand_dims(g2, len(shape_of(g2)))
    a2s = shape_of(a2) if len(sa) == 1 else sa
    b2s = shape_of(b2) if len(sb) == 1 else sb
    ga = collapse_sum_to(linear_algebra.matmul(g2, _swap_last(b2)), a2s)
    gb = collapse_sum_to(linear_algebra.matmul(_swap_last(a2), g2), b2s)
    if len(sa) == 1:
        ga = manipulate.reshape(ga, sa)
    if len(sb) == 1:
        gb = manipulate.reshape(gb, sb)
    return [ga, gb]


def _linear(var, call, g, bb):
    x, w = call.args[0], call.args[1]
    xs, ws = shape_of(x), shape_of(w)
    gx = linear_algebra.matmul(g, w)
    g2 = g if len(xs) == 2 else manipulate.reshape(g, (-1, ws[0]))
    x2 = x if len(xs) == 2 else manipulate.reshape(x, (-1, ws[1]))
    gw = linear_algebra.matmul(manipulate.permute_dims(g2, [1, 0]), x2)
    grads = [gx, gw]
    if len(call.args) > 2:
        grads.append(statistical.sum(g, list(range(len(shape_of(g)) - 1))))
    return grads


def _reshape_back(var, call, g, bb):
    return [manipulate.reshape(g, shape_of(call.args[0]))] + [None] * (len(call.args) - 1)


def _permute(var, call, g, bb):
    n = len(shape_of(call.args[0]))
    axes = call.attrs["axes"] or tuple(reversed(range(n)))
    inv = [0] * n
    for k, a in enumerate(axes):
        inv[normalize_axis(a, n, "relax.permute_dims")] = k
    return [manipulate.permute_dims(g, inv)]


def _astype(var, call, g, bb):
    x = call.args[0]
    return [manipulate.astype(g, dtype_of(x)) if x.struct_info.dtype.is_float else None]


def _strided_slice(var, call, g, bb):
    x = call.args[0]
    xs = list(shape_of(x))
    a = call.attrs
    strides = a["strides"] or (1,) * len(a["axes"])
    out = g
    cur = list(shape_of(g))
    for ax, b, e, s in zip(a["axes"], a["begin"], a["end"], strides):
        axis = normalize_axis(ax, len(xs), "relax.strided_slice")
        size = const_int(xs[axis])
        if s != 1 or size is None:
            raise MiniTVMError(
                f"relax.Gradient: strided_slice with stride {s} on axis {axis} of x {fmt_shape(xs)}: "
                "only stride 1 over a static dim has a gradient rule"
            )
        start, ext = slice_bounds(size, b, e, s)
        parts = []
        for width in (start, size - start - ext):
            if width > 0:
                parts.append(
                    create.zeros(
                        tuple(width if k == axis else d for k, d in enumerate(cur)), dtype_of(g)
                    )
                )
        if start > 0:
            parts = [parts[0], out] + parts[1:]
        else:
            parts = [out] + parts
        out = manipulate.concat(parts, axis) if len(parts) > 1 else out
        cur[axis] = size
    return [out]


def _concat(var, call, g, bb):
    """One slice of g per concatenated tensor; a tuple variable argument gets a Tuple of them."""
    arg = call.args[0]
    fields = arg.fields if isinstance(arg, Tuple) else getattr(arg.struct_info, "fields", None)
    if fields is None:
        raise MiniTVMError("relax.Gradient: concat of a value that is not a tuple of tensors")
    ndim = len(shape_of(g))
    axis = normalize_axis(call.attrs["axis"], ndim, "relax.concat")
    grads, start = [], 0
    for f in fields:
        shape = f.struct_info.shape if isinstance(f, Expr) else f.shape
        ext = const_int(shape[axis]) if shape is not None else None
        if ext is None:
            raise MiniTVMError("relax.Gradient: concat along a symbolic dim has no gradient rule")
        grads.append(manipulate.strided_slice(g, [axis], [start], [start + ext]))
        start += ext
    return [grads if isinstance(arg, Tuple) else Tuple(tuple(grads))]


def _split(var, call, g, bb):
    parts = (
        g.fields
        if isinstance(g, Tuple)
        else [bb.emit(TupleGetItem(g, i)) for i in range(len(var.struct_info.fields))]
    )
    return [manipulate.concat(list(parts), call.attrs["axis"])]


def _take(var, call, g, bb):
    x, idx = call.args
    xs = shape_of(x)
    axis, mode = call.attrs["axis"], call.attrs["mode"]
    if axis is None:
        flat = take_backward(g, idx, (int(np.prod([const_int(d) for d in xs])),), 0, mode)
        return [manipulate.reshape(flat, xs), None]
    return [take_backward(g, idx, xs, normalize_axis(axis, len(xs), "relax.take"), mode), None]


def _require_layouts(call: Call, **want: str) -> None:
    """The gradient rules are written for NCHW data; other layouts are refused, not guessed."""
    for key, layout in want.items():
        got = call.attrs.get(key) or layout  # conv2d's out_layout None follows data_layout
        if got != layout:
            raise MiniTVMError(
                f"relax.Gradient: {call.op.name} with {key}={got!r} has no gradient rule "
                f"({key}={layout!r} only); differentiate the graph before converting layouts"
            )


def _conv2d(var, call, g, bb):
    data, weight = call.args
    _require_layouts(call, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW")
    if call.attrs["groups"] != 1:
        raise MiniTVMError(
            f"relax.Gradient: conv2d with groups={call.attrs['groups']} has no gradient rule (groups=1 only)"
        )
    attrs = _conv_attrs(call.attrs)
    return [
        conv2d_backward_data(g, weight, shape_of(data), **attrs),
        conv2d_backward_weight(g, data, shape_of(weight), **attrs),
    ]


def _pool(grad_op: Callable) -> Callable:
    def rule(var, call, g, bb):
        _require_layouts(call, layout="NCHW", out_layout="NCHW")
        return [grad_op(g, call.args[0], **dict(call.attrs))]

    return rule


def _relu_grad_rule(var, call, g, bb):
    x, _ = call.args
    return [None, _reduce_to(relu_grad(x, g), call.args[1])]


def _sign_mask(x: Expr, g: Expr) -> Expr:
    return E.subtract(relu_grad(x, g), relu_grad(E.negative(x), g))


def _max_min(var, call, g, bb):
    """Every input equal to its (broadcast) result gets the whole output grad (ties: all of them,
    as in max_pool2d_grad)."""
    x = call.args[0]
    keep, _ = _keepdims_shape(call)
    y = manipulate.reshape(var, keep)
    mask = manipulate.astype(elementwise.equal(x, y), dtype_of(x))
    return [E.multiply(mask, manipulate.reshape(g, keep))]


def _prod(var, call, g, bb):
    """d prod / d x_i = prod / x_i: exact for nonzero inputs; a zero input gives inf/nan (the
    division is not special-cased)."""
    x = call.args[0]
    keep, _ = _keepdims_shape(call)
    scaled = E.multiply(manipulate.reshape(g, keep), manipulate.reshape(var, keep))
    return [E.divide(scaled, x)]


def _static_count(x: Expr, axes: Sequence[int], what: str) -> int:
    xs = shape_of(x)
    counts = [const_int(xs[a]) for a in axes]
    if any(c is None for c in counts):
        raise MiniTVMError(
            f"relax.Gradient: {what} over the symbolic dims {[fmt_dim(xs[a]) for a in axes]} of "
            f"data {fmt_shape(xs)} is not supported; make those dims static"
        )
    return int(np.prod(counts)) if counts else 1


def _param_layout(x: Expr, axes: Sequence[int]) -> tuple:
    """Shape of a per-`axes` parameter broadcast against `x` (1 on the other axes)."""
    xs = shape_of(x)
    return tuple(d if k in axes else 1 for k, d in enumerate(xs))


def _layer_norm(var, call, g, bb):
    """dx = rstd * (dxh - mean(dxh) - xh * mean(dxh * xh)) over the normalised axes, where
    xh = (x - mean) * rstd and dxh = g * gamma; dgamma = sum(g * xh), dbeta = sum(g) over the
    other axes."""
    x, gamma, beta = call.args
    a = call.attrs
    xs = shape_of(x)
    axes = list(normalize_axes(a["axes"], len(xs), "relax.nn.layer_norm"))
    other = [k for k in range(len(xs)) if k not in axes]
    inv_n = 1.0 / _static_count(x, axes, "layer_norm")
    layout = _param_layout(x, axes)

    def mean_keep(e: Expr) -> Expr:
        return E.multiply(statistical.sum(e, axes, keepdims=True), inv_n)

    xc = bb.emit(E.subtract(x, mean_keep(x)))
    var_ = mean_keep(E.multiply(xc, xc))
    rstd = bb.emit(E.divide(1.0, E.sqrt(E.add(var_, a["epsilon"]))))
    xh = bb.emit(E.multiply(xc, rstd))
    dxh = bb.emit(E.multiply(g, manipulate.reshape(gamma, layout)) if a["scale"] else g)
    dx = E.multiply(
        rstd,
        E.subtract(E.subtract(dxh, mean_keep(dxh)), E.multiply(xh, mean_keep(E.multiply(dxh, xh)))),
    )

    def param_grad(e: Expr, p: Expr) -> Expr:
        out = statistical.sum(e, other, keepdims=False) if other else e
        return manipulate.reshape(out, shape_of(p))

    dgamma = param_grad(E.multiply(g, xh), gamma) if a["scale"] else None
    dbeta = param_grad(g, beta) if a["center"] else None
    return [dx, dgamma, dbeta]


def _batch_norm(var, call, g, bb):
    """Inference batch norm: out = (x - m) * rstd * gamma + beta with rstd = 1/sqrt(v + eps);
    grads w.r.t. data, gamma, beta, moving_mean and moving_var (which the op also returns)."""
    x, gamma, _beta, m, v = call.args
    a = call.attrs
    xs = shape_of(x)
    axis = normalize_axis(a["axis"], len(xs), "relax.nn.batch_norm")
    other = [k for k in range(len(xs)) if k != axis]
    layout = _param_layout(x, [axis])
    g0, g1, g2 = (
        g.fields if isinstance(g, Tuple) else [bb.emit(TupleGetItem(g, i)) for i in range(3)]
    )
    rstd = bb.emit(E.divide(1.0, E.sqrt(E.add(v, a["epsilon"]))))  # (C,)
    scale = bb.emit(E.multiply(rstd, gamma) if a["scale"] else rstd)  # (C,)
    xc = bb.emit(E.subtract(x, manipulate.reshape(m, layout)))

    def per_channel(e: Expr) -> Expr:
        return manipulate.reshape(statistical.sum(e, other, keepdims=False), shape_of(gamma))

    g0s = bb.emit(per_channel(g0))  # sum(g0) per channel
    g0xc = bb.emit(per_channel(E.multiply(g0, xc)))  # sum(g0 * (x - m)) per channel
    dx = E.multiply(g0, manipulate.reshape(scale, layout))
    dgamma = E.multiply(g0xc, rstd) if a["scale"] else None
    dbeta = g0s if a["center"] else None
    dm = E.subtract(g1, E.multiply(g0s, scale))
    rstd3 = E.multiply(E.multiply(rstd, rstd), scale)  # rstd^3 * gamma
    dv = E.add(g2, E.multiply(E.multiply(g0xc, rstd3), -0.5))
    return [dx, dgamma, dbeta, dm, dv]


def _nll_loss(var, call, g, bb):
    """d/d predictions only: targets are indices and weights a constant of the loss."""
    a = call.attrs
    pred, targets = call.args[0], call.args[1]
    weights = call.args[2] if len(call.args) > 2 else None
    back = nll_loss_backward(g, pred, targets, weights, a["reduction"], a["ignore_index"])
    return [back, None] + ([None] if weights is not None else [])


def _cross_entropy_with_logits(var, call, g, bb):
    pred, labels = call.args
    ps = shape_of(pred)
    n = const_int(ps[0]) if len(ps) == 2 else 1
    if n is None:
        raise MiniTVMError(
            f"relax.Gradient: cross_entropy_with_logits over a symbolic batch {fmt_shape(ps)} "
            "is not supported; make the batch dim static"
        )
    scale = bb.emit(E.multiply(g, -1.0 / float(n)))
    return [E.multiply(labels, scale), E.multiply(pred, scale)]


def _adaptive_avg_pool2d(var, call, g, bb):
    """Windows that tile H, W evenly (always so for output (1, 1) and for None) are an avg_pool2d;
    other output sizes (overlapping, uneven windows) have no rule."""
    x = call.args[0]
    _require_layouts(call, layout="NCHW", out_layout="NCHW")
    xs = shape_of(x)
    size = call.attrs["output_size"]
    if size is None:
        return [g]
    h, w = const_int(xs[2]), const_int(xs[3])
    oh, ow = (const_int(d) for d in size)
    if h is None or w is None or oh is None or ow is None or h % oh or w % ow:
        raise MiniTVMError(
            f"relax.Gradient: adaptive_avg_pool2d of data {fmt_shape(xs)} to output_size "
            f"{tuple(size)}: only static H, W divisible by the output size have a gradient rule; "
            "use avg_pool2d with pool_size = strides = (H // OH, W // OW)"
        )
    if (oh, ow) == (1, 1):
        return [broadcast_to(E.multiply(g, 1.0 / float(h * w)), x)]
    k = (h // oh, w // ow)
    attrs = {
        "pool_size": k,
        "strides": k,
        "padding": (0, 0, 0, 0),
        "dilation": (1, 1),
        "ceil_mode": False,
        "count_include_pad": False,
        "layout": "NCHW",
    }
    return [avg_pool2d_grad(g, x, **attrs)]


# ----------------------------------------------------------------------------- more rules


def _silu(y, x, g):
    s = E.sigmoid(x)
    return E.multiply(g, E.multiply(s, E.add(E.multiply(x, E.subtract(1.0, s)), 1.0)))


def _gelu_tanh(y, x, g):
    """d/dx 0.5 x (1 + tanh(u)), u = c (x + k x^3): 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3k x^2)."""
    c, k = math.sqrt(2.0 / math.pi), 0.044715
    x2 = E.multiply(x, x)
    t = E.tanh(E.multiply(E.multiply(x, E.add(E.multiply(x2, k), 1.0)), c))
    du = E.multiply(E.add(E.multiply(x2, 3.0 * k), 1.0), c)
    dt = E.multiply(E.multiply(x, E.subtract(1.0, E.multiply(t, t))), du)
    return E.multiply(g, E.multiply(E.add(E.add(t, 1.0), dt), 0.5))


def _leakyrelu(var, call, g, bb):
    x = call.args[0]
    neg = E.less_equal(x, const(0, dtype_of(x)))  # torch: the slope applies at x <= 0
    return [E.where(neg, E.multiply(g, call.attrs["alpha"]), g)]


def _softplus(var, call, g, bb):
    """sigmoid(beta x) below the threshold, 1 above it (where softplus is the identity)."""
    x, beta = call.args[0], call.attrs["beta"]
    bx = bb.emit(E.multiply(x, beta))
    linear = E.greater(bx, const(call.attrs["threshold"], dtype_of(x)))
    return [E.where(linear, g, E.multiply(g, E.sigmoid(bx)))]


def _clip(var, call, g, bb):
    """g where min <= x <= max (torch's clamp: the bounds themselves pass the gradient)."""
    x = call.args[0]
    dt = dtype_of(x)
    inside = elementwise.logical_and(
        E.greater_equal(x, const(call.attrs["min"], dt)),
        E.less_equal(x, const(call.attrs["max"], dt)),
    )
    return [E.where(inside, g, const(0, dtype_of(g)))]


def _where(var, call, g, bb):
    cond, a, b = call.args
    zero = const(0, dtype_of(g))
    return [None, _reduce_to(E.where(cond, g, zero), a), _reduce_to(E.where(cond, zero, g), b)]


def _fma(var, call, g, bb):
    a, b, c = call.args
    return [_reduce_to(E.multiply(g, b), a), _reduce_to(E.multiply(g, a), b), _reduce_to(g, c)]


def _cumsum(var, call, g, bb):
    """The reverse cumulative sum of g (exclusive stays exclusive); axis None runs on the
    flattened tensor."""
    x = call.args[0]
    if not x.struct_info.dtype.is_float:
        return [None]
    axis, exclusive = call.attrs["axis"], call.attrs["exclusive"]
    flat = g if axis is not None else manipulate.reshape(g, (-1,))
    ax = 0 if axis is None else axis
    back = manipulate.flip(
        statistical.cumsum(manipulate.flip(flat, ax), ax, exclusive=exclusive), ax
    )
    return [back if axis is not None else manipulate.reshape(back, shape_of(x))]


def _pad(var, call, g, bb):
    a = call.attrs
    if a["pad_mode"] != "constant":
        raise MiniTVMError(
            f"relax.Gradient: nn.pad with pad_mode={a['pad_mode']!r} has no gradient rule "
            "(constant padding only)"
        )
    xs = shape_of(call.args[0])
    widths = a["pad_width"]
    axes = [k for k in range(len(xs)) if widths[2 * k] or widths[2 * k + 1]]
    begin = [widths[2 * k] for k in axes]
    end = [widths[2 * k] + xs[k] for k in axes]
    return [manipulate.strided_slice(g, axes, begin, end) if axes else g]


def _zero_grad(var, call, g, bb):
    """Piecewise-constant ops (floor, round, sign, ...): zero almost everywhere, as in torch."""
    return [zeros_like(call.args[0])]


MORE_RULES: dict[str, Callable[..., list]] = {
    "relax.nn.silu": _unary(_silu),
    "relax.nn.gelu_tanh": _unary(_gelu_tanh),
    "relax.nn.leakyrelu": _leakyrelu,
    "relax.nn.softplus": _softplus,
    "relax.clip": _clip,
    "relax.where": _where,
    "relax.ewise_fma": _fma,
    "relax.cumsum": _cumsum,
    "relax.nn.pad": _pad,
    "relax.square": _unary(lambda y, x, g: E.multiply(g, E.multiply(x, 2.0))),
    "relax.rsqrt": _unary(lambda y, x, g: E.multiply(g, E.multiply(E.divide(y, x), -0.5))),
    "relax.sin": _unary(lambda y, x, g: E.multiply(g, E.cos(x))),
    "relax.cos": _unary(lambda y, x, g: E.negative(E.multiply(g, E.sin(x)))),
    "relax.squeeze": _reshape_back,
    "relax.broadcast_to": lambda var, call, g, bb: [_reduce_to(g, call.args[0]), None],
    "relax.flip": lambda var, call, g, bb: [manipulate.flip(g, call.attrs["axis"])],
    "relax.nn.dropout": lambda var, call, g, bb: [  # TVM's dropout: the identity (inference)
        TupleGetItem(g, 0) if not isinstance(g, Tuple) else g.fields[0]
    ],
    **{f"relax.{name}": _zero_grad for name in ("floor", "ceil", "round", "sign")},
}


GRAD_RULES: dict[str, Callable[..., list]] = {
    "relax.add": _binary(lambda v, c, g, bb, a, b: (g, g)),
    "relax.subtract": _binary(lambda v, c, g, bb, a, b: (g, E.negative(g))),
    "relax.multiply": _binary(lambda v, c, g, bb, a, b: (E.multiply(g, b), E.multiply(g, a))),
    "relax.divide": _binary(
        lambda v, c, g, bb, a, b: (E.divide(g, b), E.negative(E.divide(E.multiply(g, v), b)))
    ),
    "relax.power": _binary(_power),
    "relax.maximum": _binary(_maximum),
    "relax.minimum": _binary(_minimum),
    "relax.negative": _unary(lambda y, x, g: E.negative(g)),
    "relax.abs": _unary(lambda y, x, g: _sign_mask(x, g)),
    "relax.exp": _unary(lambda y, x, g: E.multiply(g, y)),
    "relax.log": _unary(lambda y, x, g: E.divide(g, x)),
    "relax.sqrt": _unary(lambda y, x, g: E.divide(g, E.multiply(y, 2.0))),
    "relax.tanh": _unary(lambda y, x, g: E.multiply(g, E.subtract(1.0, E.multiply(y, y)))),
    "relax.sigmoid": _unary(lambda y, x, g: E.multiply(E.multiply(g, y), E.subtract(1.0, y))),
    "relax.erf": _unary(
        lambda y, x, g: E.multiply(
            g, E.multiply(E.exp(E.negative(E.multiply(x, x))), _SQRT_2_OVER_PI)
        )
    ),
    "relax.nn.relu": _unary(_relu),
    "relax.nn.relu_grad": _relu_grad_rule,
    "relax.nn.gelu": _unary(_gelu),
    "relax.nn.softmax": _softmax,
    "relax.nn.log_softmax": _log_softmax,
    "relax.matmul": _matmul,
    "relax.nn.linear": _linear,
    "relax.nn.dense": _linear,
    "relax.sum": _sum,
    "relax.mean": _mean,
    "relax.reshape": _reshape_back,
    "relax.flatten": _reshape_back,
    "relax.expand_dims": _reshape_back,
    "relax.permute_dims": _permute,
    "relax.astype": _astype,
    "relax.strided_slice": _strided_slice,
    "relax.concat": _concat,
    "relax.split": _split,
    "relax.take": _take,
    "relax.nn.conv2d": _conv2d,
    "relax.nn.max_pool2d": _pool(max_pool2d_grad),
    "relax.broadcast_like": lambda var, call, g, bb: [_reduce_to(g, call.args[0]), None],
    "relax.nn.avg_pool2d": _pool(avg_pool2d_grad),
    "relax.max": _max_min,
    "relax.min": _max_min,
    "relax.prod": _prod,
    "relax.nn.layer_norm": _layer_norm,
    "relax.nn.batch_norm": _batch_norm,
    "relax.nn.adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "relax.nn.nll_loss": _nll_loss,
    "relax.nn.cross_entropy_with_logits": _cross_entropy_with_logits,
    **MORE_RULES,
}


def _install(rules: dict[str, Callable[..., list]] | None = None) -> None:
    """Put each rule (GRAD_RULES', or `rules`) in its op's table row (the rows are frozen:
    replaced, not mutated)."""
    from ..expr import Op

    for name, rule in (GRAD_RULES if rules is None else rules).items():
        op = Op.get(name)
        op.op_def = dataclasses.replace(op.op_def, grad=rule)
        OP_TABLE[name] = op.op_def


_install()


def _reasons(groups: dict[str, str]) -> dict[str, str]:
    """{"op op ...": reason} -> {"relax.op": reason}."""
    return {f"relax.{op}": why for ops, why in groups.items() for op in ops.split()}


# ops with no gradient by nature (the docs' table and tests/test_grad_table.py read these)
NOT_DIFFERENTIABLE: dict[str, str] = _reasons(
    {
        "bitwise_and bitwise_or bitwise_xor bitwise_not left_shift right_shift": "integer op",
        "logical_and logical_or logical_xor logical_not": "boolean op",
        "equal not_equal less less_equal greater greater_equal": "comparison (boolean result)",
        "isfinite isinf isnan": "predicate (boolean result)",
        "argmax argmin": "integer indices result",
        "nonzero vision.all_class_non_max_suppression": "integer indices result",
        "floor_divide": "piecewise constant (integer-valued quotient)",
        "full zeros ones arange": "creation op: the result depends on shapes and scalars only",
        "zeros_like ones_like full_like": "creation op: the input gives only the shape (and the "
        "fill value is a scalar)",
        "grad.no_grad": "marks an argument that receives no gradient (TVM's rule interface)",
        "reinterpret": "bit cast",
        "random.dropout_mask": "random mask of an integer key (dropout multiplies by it)",
        "sparse_reshape": "shape computation on integer indices",
        "shape_of tensor_to_shape shape_to_tensor": "shape value (integer dims)",
        "call_tir call_dps_packed": "opaque kernel call: differentiate the graph before legalizing",
        "call_pure_packed call_inplace_packed call_py_func": "opaque call of a packed or Python "
        "function",
        "null_value": "the null object (no tensor value)",
    }
)

# differentiable ops that have no rule yet: relax.Gradient refuses them with a clear error
NO_GRAD_RULE: dict[str, str] = _reasons(
    {
        "tan sinh cosh asin acos atan asinh acosh atanh trunc": "no rule yet (rare in imported "
        "models)",
        "mod floor_mod cumprod variance std": "no rule yet",
        "unique": "no rule yet (data-dependent shape, computed by a VM builtin)",
        "tile repeat einsum gather_elements": "no rule yet (gather/scatter shape op)",
        "nn.conv1d nn.max_pool1d nn.avg_pool1d nn.adaptive_avg_pool1d": "no rule yet: 1-D "
        "variants (reshape to 2-D to train)",
        "nn.conv2d_transpose nn.conv1d_transpose nn.conv3d nn.group_norm nn.attention "
        "image.resize2d image.resize3d tril triu": "no rule yet",
        "layout_transform": "no rule yet: differentiate before converting layouts",
        "nn.conv2d_backward_data nn.conv2d_backward_weight nn.max_pool2d_grad nn.avg_pool2d_grad "
        "take_backward grad.nll_loss_backward": "backward op: no second-order rule yet",
        "nn.sparse_dense": "no rule yet (inference of pruned weights: relay.data_dep_optimization)",
    }
)


from .grad_api import no_grad  # noqa: E402 - TVM's relax.op.grad.no_grad (defined after the rules)
from .grad_checkpoint import end_checkpoint, start_checkpoint  # noqa: F401 - TVM's names


def gradient_table() -> list[tuple[str, str]]:
    """(op, status) for every op of the op table: "gradient", or "not differentiable: why",
    or "no rule: why" (docs/training.md prints it; tests keep the two in step)."""
    rows = []
    for name in sorted(OP_TABLE):
        if OP_TABLE[name].grad is not None:
            rows.append((name, "gradient"))
        elif name in NOT_DIFFERENTIABLE:
            rows.append((name, f"not differentiable: {NOT_DIFFERENTIABLE[name]}"))
        elif name in NO_GRAD_RULE:
            rows.append((name, f"no rule: {NO_GRAD_RULE[name]}"))
        else:
            rows.append((name, "unclassified"))
    return rows


__all__ = [
    "GRAD_RULES",
    "NOT_DIFFERENTIABLE",
    "NO_GRAD_RULE",
    "avg_pool2d_grad",
    "broadcast_like",
    "broadcast_to",
    "collapse_sum_to",
    "conv2d_backward_data",
    "conv2d_backward_weight",
    "erf",
    "gradient_table",
    "max_pool2d_grad",
    "nll_loss_backward",
    "no_grad",
    "ones_like",
    "relu_grad",
    "shape_of",
    "take_backward",
    "zeros_like",
]
