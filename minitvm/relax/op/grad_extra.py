"""More gradient rules (grad.py is near its size limit): tril / triu, variance / std, grouped
conv2d, and max pooling reading its forward result.

- `tril(x, k)`, `triu(x, k)`: the kept triangle passes the gradient, the zeroed one gets none:
  the same triangle of the output gradient.
- `variance(x)` (numpy's population variance, ddof 0): `d var / dx = 2 (x - mean) / N`;
  `std = sqrt(var)`: `d std / dx = (x - mean) / (N std)`, N the count over the reduced axes.
- conv2d with `groups = G > 1`: group i of the output reads only group i of the input
  channels and of the filters, so the gradients are G independent groups=1 gradients, cut
  along the channel axes and joined back. Depthwise convolutions with many groups would become
  that many small kernels, so the rule refuses above `MAX_GRAD_GROUPS`.
- matmul of an N-D input (N >= 3) by a 2-D weight (`x @ W` written by hand): the weight's
  gradient is one 2-D product over the flattened rows, `x.reshape(-1, K).T @ g.reshape(-1, N)`,
  where the general rule made one product per leading index and summed them.
- max_pool2d: the backward op is given the forward output (`out=`), so it compares each input
  with the stored window maxima instead of computing them again (1.9x on ResNet-18's pool).
- tan, sinh, cosh and the inverse trigonometric/hyperbolic functions: their derivatives;
  trunc is piecewise constant (zero, as floor). `mod` (C fmod) and `floor_mod`: `a - q b` with
  q = trunc(a / b) or floor(a / b), constant between jumps, so d/da = 1 and d/db = -q.
- tile and repeat: each output element is a copy of one input element, so the gradient sums
  the copies: the output gradient reshaped to put each copy count on an axis of its own, which
  is summed away (static shapes: the copy axes are sized at build time).
- conv1d (NCW / OIW) is a conv2d of height 1: the conv2d rule (groups included) on the inputs
  with a unit axis inserted, which is squeezed out of the gradients again.
- group_norm (channels on axis 1, normalised with all later axes, as torch and ONNX import
  it): per group, the layer-norm gradient of the group's values with the per-channel scale
  folded into the output gradient; d gamma and d beta sum over the batch and spatial axes.
"""

from __future__ import annotations

import numpy as np

from ...error import TVMError
from ...ir.node import FrozenDict
from ...topi.utils import const_int
from ..expr import Call, TupleGetItem
from . import create, elementwise_math, linear_algebra, manipulate, statistical
from . import elementwise as E
from . import nn as _nn
from .grad import (
    GRAD_RULES,
    NO_GRAD_RULE,
    _binary,
    _conv2d,
    _install,
    _keepdims_shape,
    _matmul,
    _require_layouts,
    _swap_last,
    _unary,
    _zero_grad,
    broadcast_to,
    max_pool2d_grad,
    ones_like,
    shape_of,
)

MAX_GRAD_GROUPS = 64


def _trilu(upper: bool):
    def rule(var, call, g, bb):
        fn = create.triu if upper else create.tril
        return [fn(g, call.args[1])]  # k (a PrimValue) has no gradient: TVM's one-entry form

    return rule


def _centered_and_count(call, bb):
    """(x - mean over the reduced axes, the output gradient reshaped to keep dims, N)."""
    x = call.args[0]
    keep, axes = _keepdims_shape(call)
    xs = shape_of(x)
    centered = bb.emit(E.subtract(x, statistical.mean(x, list(axes), keepdims=True)))
    counts = [const_int(xs[a]) for a in axes]
    if any(c is None for c in counts):  # known at run time only: count with a sum of ones
        count = statistical.sum(ones_like(x), list(axes), keepdims=True)
    else:
        count = float(np.prod(counts)) if counts else 1.0
    return x, keep, centered, count


def _variance(var, call, g, bb):
    x, keep, centered, count = _centered_and_count(call, bb)
    scale = E.divide(E.multiply(centered, 2.0), count)
    return [E.multiply(broadcast_to(manipulate.reshape(g, keep), x), scale)]


def _std(y, call, g, bb):
    x, keep, centered, count = _centered_and_count(call, bb)
    per = E.divide(manipulate.reshape(g, keep), E.multiply(manipulate.reshape(y, keep), count))
    return [E.multiply(broadcast_to(per, x), centered)]


def _grouped_conv2d(var, call, g, bb):
    groups = int(call.attrs["groups"])
    if groups == 1:
        return _conv2d(var, call, g, bb)
    if groups > MAX_GRAD_GROUPS:
        raise TVMError(
            f"relax.Gradient: conv2d with groups={groups} (more than {MAX_GRAD_GROUPS}) has no "
            "gradient rule yet: a depthwise convolution would become one kernel per group"
        )
    data, weight = call.args
    parts = [
        bb.emit(manipulate.split(t, groups, axis=axis))
        for t, axis in ((data, 1), (weight, 0), (g, 1))
    ]
    attrs = {**dict(call.attrs), "groups": 1}
    d_data, d_weight = [], []
    for i in range(groups):
        d_i, w_i, g_i = (bb.emit(TupleGetItem(p, i)) for p in parts)
        one = Call(call.op, (d_i, w_i), FrozenDict(attrs))  # group i as a groups=1 conv2d
        gd, gw = _conv2d(None, one, g_i, bb)
        d_data.append(gd)
        d_weight.append(gw)
    return [manipulate.concat(d_data, axis=1), manipulate.concat(d_weight, axis=0)]


def _matmul_flat_weight(var, call, g, bb):
    a, b = call.args
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) < 3 or len(sb) != 2:
        return _matmul(var, call, g, bb)
    ga = linear_algebra.matmul(g, _swap_last(b))  # already a's shape: only b was broadcast
    rows_a = manipulate.reshape(a, (-1, sb[0]))
    rows_g = manipulate.reshape(g, (-1, sb[1]))
    gb = linear_algebra.matmul(manipulate.permute_dims(rows_a, [1, 0]), rows_g)
    return [ga, gb]


def _max_pool2d(var, call, g, bb):
    _require_layouts(call, layout="NCHW", out_layout="NCHW")
    return [max_pool2d_grad(g, call.args[0], out=var, **dict(call.attrs))]


M = elementwise_math


def _inverse_sqrt(sign: float):
    """g / sqrt(sign * (1 - x^2)): asin (+1) and acosh (-1, i.e. sqrt(x^2 - 1))."""
    return lambda y, x, g: E.divide(g, E.sqrt(E.multiply(E.subtract(1.0, E.multiply(x, x)), sign)))


def _quotient_rule(rounding):
    """`a - q b` for q = rounding(a / b): gradients (g, -g q)."""
    return _binary(
        lambda v, c, g, bb, a, b: (g, E.negative(E.multiply(g, rounding(E.divide(a, b)))))
    )


def _static_dims(x, op: str) -> list:
    dims = [const_int(d) for d in shape_of(x, f"the input of {op}")]
    if any(d is None for d in dims):
        raise TVMError(
            f"relax.Gradient: {op} of a tensor with symbolic dims {shape_of(x)} has no gradient "
            "rule yet (it reshapes along axes sized at build time); use static shapes"
        )
    return dims


def _tile(var, call, g, bb):
    dims = _static_dims(call.args[0], "relax.tile")
    reps = tuple(call.attrs["repeats"])
    n = max(len(reps), len(dims))
    reps, padded = (1,) * (n - len(reps)) + reps, (1,) * (n - len(dims)) + tuple(dims)
    copies = [v for r, d in zip(reps, padded) for v in (r, d)]  # (r0, d0, r1, d1, ...)
    summed = statistical.sum(manipulate.reshape(g, copies), list(range(0, 2 * n, 2)))
    return [manipulate.reshape(summed, dims)]


def _repeat(var, call, g, bb):
    dims = _static_dims(call.args[0], "relax.repeat")
    r, axis = call.attrs["repeats"], call.attrs["axis"]
    if axis is None:  # numpy repeats the flattened input
        flat = manipulate.reshape(g, (int(np.prod(dims)), r))
        return [manipulate.reshape(statistical.sum(flat, [1]), dims)]
    axis = axis % len(dims)
    copies = (*dims[: axis + 1], r, *dims[axis + 1 :])  # r copies follow each element
    return [statistical.sum(manipulate.reshape(g, copies), [axis + 1])]


def _conv1d(var, call, g, bb):
    _require_layouts(call, data_layout="NCW", kernel_layout="OIW", out_layout="NCW")
    data, weight = call.args
    a = call.attrs
    pad_l, pad_r = a["padding"]

    def unit(e):  # a height axis of 1
        return bb.emit(manipulate.expand_dims(e, 2))

    as_2d = _nn.conv2d(
        unit(data),
        unit(weight),
        strides=(1, a["strides"][0]),
        padding=(0, pad_l, 0, pad_r),
        dilation=(1, a["dilation"][0]),
        groups=a["groups"],
        out_dtype=a["out_dtype"],
    )
    d_data, d_weight = _grouped_conv2d(None, as_2d, unit(g), bb)
    return [manipulate.squeeze(d_data, [2]), manipulate.squeeze(d_weight, [2])]


def _group_norm(var, call, g, bb):
    x, gamma, _beta = call.args
    a = call.attrs
    dims = _static_dims(x, "relax.nn.group_norm")
    later = tuple(range(2, len(dims)))
    if a["channel_axis"] % len(dims) != 1 or tuple(k % len(dims) for k in a["axes"]) != later:
        raise TVMError(
            f"relax.Gradient: group_norm with channel_axis={a['channel_axis']} and axes="
            f"{list(a['axes'])} has no gradient rule (channels on axis 1, normalised with all "
            "later axes only, as torch and ONNX import it)"
        )
    groups = int(a["num_groups"])
    grouped = (dims[0], groups, int(np.prod(dims[1:])) // groups)
    per_channel = (1, dims[1]) + (1,) * len(later)
    inv_n = 1.0 / grouped[2]

    def mean(e):
        return E.multiply(statistical.sum(e, [2], keepdims=True), inv_n)

    xg = bb.emit(manipulate.reshape(x, grouped))
    xc = bb.emit(E.subtract(xg, mean(xg)))
    rstd = bb.emit(E.divide(1.0, E.sqrt(E.add(mean(E.multiply(xc, xc)), a["epsilon"]))))
    xh = bb.emit(E.multiply(xc, rstd))
    dxh = E.multiply(g, manipulate.reshape(gamma, per_channel)) if a["scale"] else g
    dxh = bb.emit(manipulate.reshape(dxh, grouped))
    dxg = E.subtract(E.subtract(dxh, mean(dxh)), E.multiply(xh, mean(E.multiply(dxh, xh))))
    d_x = manipulate.reshape(E.multiply(rstd, dxg), dims)
    reduce_axes = [0, *later]
    d_gamma = d_beta = None
    if a["scale"]:
        xh_full = manipulate.reshape(xh, dims)
        d_gamma = statistical.sum(E.multiply(g, xh_full), reduce_axes)
    if a["center"]:
        d_beta = statistical.sum(g, reduce_axes)
    return [d_x, d_gamma, d_beta]


_IMPORTER_RULES = {
    "relax.tan": _unary(lambda y, x, g: E.multiply(g, E.add(E.multiply(y, y), 1.0))),
    "relax.sinh": _unary(lambda y, x, g: E.multiply(g, M.cosh(x))),
    "relax.cosh": _unary(lambda y, x, g: E.multiply(g, M.sinh(x))),
    "relax.asin": _unary(_inverse_sqrt(1.0)),
    "relax.acos": _unary(lambda y, x, g: E.negative(_inverse_sqrt(1.0)(y, x, g))),
    "relax.atan": _unary(lambda y, x, g: E.divide(g, E.add(E.multiply(x, x), 1.0))),
    "relax.asinh": _unary(lambda y, x, g: E.divide(g, E.sqrt(E.add(E.multiply(x, x), 1.0)))),
    "relax.acosh": _unary(_inverse_sqrt(-1.0)),
    "relax.atanh": _unary(lambda y, x, g: E.divide(g, E.subtract(1.0, E.multiply(x, x)))),
    "relax.trunc": _zero_grad,
    "relax.mod": _quotient_rule(M.trunc),
    "relax.floor_mod": _quotient_rule(E.floor),
    "relax.tile": _tile,
    "relax.repeat": _repeat,
    "relax.nn.conv1d": _conv1d,
    "relax.nn.group_norm": _group_norm,
}
GRAD_RULES.update(_IMPORTER_RULES)
GRAD_RULES.update(
    {
        "relax.tril": _trilu(False),
        "relax.triu": _trilu(True),
        "relax.variance": _variance,
        "relax.std": _std,
        "relax.nn.conv2d": _grouped_conv2d,
        "relax.nn.max_pool2d": _max_pool2d,
        "relax.matmul": _matmul_flat_weight,
    }
)
for _name in ("relax.tril", "relax.triu", "relax.variance", "relax.std", *_IMPORTER_RULES):
    NO_GRAD_RULE.pop(_name, None)
_install()

from . import grad_layout  # noqa: F401 - matmul/permute_dims/take rules that keep layouts
