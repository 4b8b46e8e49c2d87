"""Normalisation: batch norm (inference) and layer norm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..utils import normalize_axes, normalize_axis
from ..utils import prod as dims_prod


def batch_norm(
    data: te.Tensor,
    gamma: te.Tensor,
    beta: te.Tensor,
    moving_mean: te.Tensor,
    moving_var: te.Tensor,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> list[te.Tensor]:
    """Inference batch norm along `axis`: returns [out, moving_mean, moving_var] (as TVM)."""
    axis = normalize_axis(axis, len(data.shape), "topi.nn.batch_norm")
    eps = make_const(data.dtype, epsilon)

    def body(*i: Any):
        c = i[axis]
        v = (data[i] - moving_mean[c]) / tir_op.sqrt(moving_var[c] + eps)
        if scale:
            v = v * gamma[c]
        if center:
            v = v + beta[c]
        return v

    out = te.compute(data.shape, body, name="T_batch_norm", tag="elemwise")
    mean = te.compute(
        moving_mean.shape, lambda c: moving_mean[c], name="T_bn_mean", tag="injective"
    )
    var = te.compute(moving_var.shape, lambda c: moving_var[c], name="T_bn_var", tag="injective")
    return [out, mean, var]


def layer_norm(
    data: te.Tensor,
    gamma: te.Tensor,
    beta: te.Tensor,
    axis: Sequence[int] | int = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> te.Tensor:
    """(x - mean) / sqrt(var + eps) * gamma + beta over `axis`; gamma/beta have those dims' shape."""
    nd = len(data.shape)
    axes = normalize_axes(axis, nd, "topi.nn.layer_norm")
    kept = [n for n in range(nd) if n not in axes]
    count = tir_cast(data.dtype, dims_prod([data.shape[a] for a in axes]))
    red_shape = tuple(data.shape[n] for n in kept)

    def full_index(idx: tuple, raxes: list) -> tuple:
        it_k, it_r, out = iter(idx), iter(raxes), []
        for n in range(nd):
            out.append(next(it_r) if n in axes else next(it_k))
        return tuple(out)

    def kept_index(i: tuple) -> tuple:
        return tuple(i[n] for n in kept)

    r1 = [te.reduce_axis((0, data.shape[a]), f"k{a}") for a in axes]
    total = te.compute(
        red_shape,
        lambda *idx: te.sum(data[full_index(idx, r1)], axis=r1),
        name="T_ln_sum",
        tag="reduce",
    )
    mean = te.compute(red_shape, lambda *idx: total[idx] / count, name="T_ln_mean", tag="elemwise")
    r2 = [te.reduce_axis((0, data.shape[a]), f"v{a}") for a in axes]

    def sq(*idx: Any):
        d = data[full_index(idx, r2)] - mean[idx]
        return te.sum(d * d, axis=r2)

    sqsum = te.compute(red_shape, sq, name="T_ln_sqsum", tag="reduce")
    eps = make_const(data.dtype, epsilon)

    def body(*i: Any):
        k = kept_index(i)
        v = (data[i] - mean[k]) / tir_op.sqrt(sqsum[k] / count + eps)
        g = tuple(i[a] for a in axes)
        if scale:
            v = v * gamma[g]
        if center:
            v = v + beta[g]
        return v

    return te.compute(data.shape, body, name="T_layer_norm", tag="elemwise")
