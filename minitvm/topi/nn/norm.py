"""Normalisation: batch norm (inference), layer norm and group norm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..utils import normalize_axes, normalize_axis, simplify
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


def group_norm(
    data: te.Tensor,
    gamma: te.Tensor,
    beta: te.Tensor,
    num_groups: int,
    channel_axis: int,
    axes: Sequence[int],
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> te.Tensor:
    """Normalise over `axes` and each group's channels, then scale/shift per channel."""
    nd = len(data.shape)
    c_ax = normalize_axis(channel_axis, nd, "topi.nn.group_norm")
    axes = [a for a in normalize_axes(axes, nd, "topi.nn.group_norm") if a != c_ax]
    per_group = simplify(data.shape[c_ax] // num_groups)
    kept = [n for n in range(nd) if n != c_ax and n not in axes]
    # statistics per (kept dims..., group)
    stat_shape = tuple(data.shape[n] for n in kept) + (num_groups,)
    count = tir_cast(data.dtype, dims_prod([per_group] + [data.shape[a] for a in axes]))

    def full_index(idx: tuple, rc: Any, raxes: list) -> tuple:
        it_k, it_r, out = iter(idx[:-1]), iter(raxes), []
        for n in range(nd):
            if n == c_ax:
                out.append(idx[-1] * per_group + rc)
            else:
                out.append(next(it_r) if n in axes else next(it_k))
        return tuple(out)

    def reduce_axes(tag: str) -> tuple[Any, list]:
        rc = te.reduce_axis((0, per_group), f"{tag}c")
        return rc, [te.reduce_axis((0, data.shape[a]), f"{tag}{a}") for a in axes]

    rc1, r1 = reduce_axes("k")
    total = te.compute(
        stat_shape,
        lambda *idx: te.sum(data[full_index(idx, rc1, r1)], axis=[rc1, *r1]),
        name="T_gn_sum",
        tag="reduce",
    )
    mean = te.compute(stat_shape, lambda *i: total[i] / count, name="T_gn_mean", tag="elemwise")
    rc2, r2 = reduce_axes("v")

    def sq(*idx: Any):
        d = data[full_index(idx, rc2, r2)] - mean[idx]
        return te.sum(d * d, axis=[rc2, *r2])

    sqsum = te.compute(stat_shape, sq, name="T_gn_sqsum", tag="reduce")
    eps = make_const(data.dtype, epsilon)

    def body(*i: Any):
        c = i[c_ax]
        s = tuple(i[n] for n in kept) + (tir_op.floordiv(c, per_group),)
        v = (data[i] - mean[s]) / tir_op.sqrt(sqsum[s] / count + eps)
        if scale:
            v = v * gamma[c]
        if center:
            v = v + beta[c]
        return v

    return te.compute(data.shape, body, name="T_group_norm", tag="elemwise")
