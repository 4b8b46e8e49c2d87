"""Gradient rule of `relax.nn.batch_norm` in both modes (grad.py holds the inference one).

In training mode the output is normalised by the batch's own statistics, so the gradient
w.r.t. data goes through the batch mean and variance as well:
`dx = rstd * (dxh - mean(dxh) - xh * mean(dxh * xh))` with `xh = (x - mu) * rstd` and
`dxh = g0 * gamma`, means over every axis but `axis`. The new moving statistics
`(1 - m) * moving + m * batch` are differentiated too, so a loss that reads them gets an exact
gradient: their adjoints reach data through mu and the biased variance, and the old moving
statistics with weight `1 - m`.
"""

from __future__ import annotations

import numpy as np

from ...topi.utils import const_int, normalize_axis
from ..expr import Expr, Tuple, TupleGetItem
from . import elementwise as E
from . import manipulate, statistical
from .grad import GRAD_RULES, _install, _param_layout, ones_like, shape_of
from .grad import _batch_norm as _batch_norm_inference


def _batch_norm_training(var, call, g, bb):
    """Grads w.r.t. data, gamma, beta, moving_mean and moving_var of a training batch norm."""
    x, gamma, _beta, _m, _v = call.args
    a = call.attrs
    xs = shape_of(x, "batch_norm's data")
    axis = normalize_axis(a["axis"], len(xs), "relax.nn.batch_norm")
    other = [k for k in range(len(xs)) if k != axis]
    counts = [const_int(xs[k]) for k in other]
    if any(c is None for c in counts):  # a symbolic batch: the count is known at run time
        n = bb.emit(statistical.sum(ones_like(x), other, keepdims=True))

        def per_n(e: Expr) -> Expr:
            return E.divide(e, n)
    else:
        inv_n = 1.0 / float(np.prod(counts)) if counts else 1.0

        def per_n(e: Expr) -> Expr:
            return E.multiply(e, inv_n)

    layout = _param_layout(x, [axis])
    momentum = a["momentum"]
    g0, g1, g2 = (
        g.fields if isinstance(g, Tuple) else [bb.emit(TupleGetItem(g, i)) for i in range(3)]
    )

    def mean_keep(e: Expr) -> Expr:
        return per_n(statistical.sum(e, other, keepdims=True))

    def per_channel(e: Expr) -> Expr:
        return manipulate.reshape(statistical.sum(e, other, keepdims=False), shape_of(gamma))

    def channel(e: Expr) -> Expr:  # a (C,) value broadcast against x
        return manipulate.reshape(e, layout)

    xc = bb.emit(E.subtract(x, mean_keep(x)))
    rstd = bb.emit(E.divide(1.0, E.sqrt(E.add(mean_keep(E.multiply(xc, xc)), a["epsilon"]))))
    xh = bb.emit(E.multiply(xc, rstd))
    dxh = bb.emit(E.multiply(g0, channel(gamma)) if a["scale"] else g0)
    dx = E.multiply(
        rstd,
        E.subtract(E.subtract(dxh, mean_keep(dxh)), E.multiply(xh, mean_keep(E.multiply(dxh, xh)))),
    )
    # new_mean = (1-m) mm + m mu: d/dx = m g1 / n; new_var = (1-m) mv + m var: d/dx = 2 m g2 xc / n
    stats = E.add(channel(g1), E.multiply(E.multiply(channel(g2), xc), 2.0))
    dx = E.add(dx, per_n(E.multiply(stats, momentum)))
    dgamma = per_channel(E.multiply(g0, xh)) if a["scale"] else None
    dbeta = per_channel(g0) if a["center"] else None
    keep = 1.0 - momentum
    return [dx, dgamma, dbeta, E.multiply(g1, keep), E.multiply(g2, keep)]


def _batch_norm(var, call, g, bb):
    """The rule of the call's mode (a call built before `training` existed is inference)."""
    if call.attrs.get("training", False):
        return _batch_norm_training(var, call, g, bb)
    return _batch_norm_inference(var, call, g, bb)


GRAD_RULES["relax.nn.batch_norm"] = _batch_norm
_install()

__all__: list[str] = []
