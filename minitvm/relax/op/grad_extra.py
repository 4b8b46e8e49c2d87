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
"""

from __future__ import annotations

import numpy as np

from ...error import TVMError
from ...ir.node import FrozenDict
from ...topi.utils import const_int
from ..expr import Call, TupleGetItem
from . import create, linear_algebra, manipulate, statistical
from . import elementwise as E
from .grad import (
    GRAD_RULES,
    NO_GRAD_RULE,
    _conv2d,
    _install,
    _keepdims_shape,
    _matmul,
    _require_layouts,
    _swap_last,
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
for _name in ("relax.tril", "relax.triu", "relax.variance", "relax.std"):
    NO_GRAD_RULE.pop(_name, None)
_install()
