"""Normalisation: batch norm (training and inference), layer norm and group norm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TEError
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
    training: bool = False,
    momentum: float = 0.1,
) -> list[te.Tensor]:
    """Batch norm along `axis`: returns [out, new_moving_mean, new_moving_var] (as TVM).

    training=False normalises with the moving statistics and returns them unchanged.
    training=True normalises with the batch's mean and biased variance over every axis but
    `axis`, and returns the moving statistics blended with them:
    `(1 - momentum) * moving + momentum * batch` (TVM's rule; torch's running_var uses the
    unbiased variance instead, which its importer corrects for).
    """
    nd = len(data.shape)
    axis = normalize_axis(axis, nd, "topi.nn.batch_norm")
    if not 0.0 <= float(momentum) <= 1.0:
        raise TEError(
            f"topi.nn.batch_norm: momentum {momentum} is outside [0, 1]; it is the weight of "
            "the batch statistics in the moving average"
        )
    eps = make_const(data.dtype, epsilon)
    if training:
        mean, var = _channel_stats(data, axis)
    else:
        mean, var = moving_mean, moving_var

    def body(*i: Any):
        c = i[axis]
        v = (data[i] - mean[c]) / tir_op.sqrt(var[c] + eps)
        if scale:
            v = v * gamma[c]
        if center:
            v = v + beta[c]
        return v

    out = te.compute(data.shape, body, name="T_batch_norm", tag="elemwise")
    if not training:  # copies, so the outputs are never the inputs' buffers
        new_mean = te.compute(
            moving_mean.shape, lambda c: moving_mean[c], name="T_bn_mean", tag="injective"
        )
        new_var = te.compute(
            moving_var.shape, lambda c: moving_var[c], name="T_bn_var", tag="injective"
        )
        return [out, new_mean, new_var]
    keep = make_const(moving_mean.dtype, 1.0 - float(momentum))
    take = make_const(moving_mean.dtype, float(momentum))

    def blend(moving: te.Tensor, batch: te.Tensor, name: str) -> te.Tensor:
        return te.compute(
            moving.shape,
            lambda c: keep * moving[c] + take * tir_cast(moving.dtype, batch[c]),
            name=name,
            tag="elemwise",
        )

    return [out, blend(moving_mean, mean, "T_bn_mean"), blend(moving_var, var, "T_bn_var")]


def _channel_stats(data: te.Tensor, axis: int) -> tuple[te.Tensor, te.Tensor]:
    """Per-channel mean and biased variance of `data` over every axis but `axis`."""
    nd = len(data.shape)
    others = [n for n in range(nd) if n != axis]
    count = tir_cast(data.dtype, dims_prod([data.shape[n] for n in others]))

    def full_index(c: Any, raxes: list) -> tuple:
        it = iter(raxes)
        return tuple(c if n == axis else next(it) for n in range(nd))

    r1 = [te.reduce_axis((0, data.shape[n]), f"k{n}") for n in others]
    total = te.compute(
        (data.shape[axis],),
        lambda c: te.sum(data[full_index(c, r1)], axis=r1),
        name="T_bn_sum",
        tag="reduce",
    )
    mean = te.compute(
        total.shape, lambda c: total[c] / count, name="T_bn_batch_mean", tag="elemwise"
    )
    r2 = [te.reduce_axis((0, data.shape[n]), f"v{n}") for n in others]

    def sq(c: Any):
        d = data[full_index(c, r2)] - mean[c]
        return te.sum(d * d, axis=r2)

    sqsum = te.compute(total.shape, sq, name="T_bn_sqsum", tag="reduce")
    var = te.compute(total.shape, lambda c: sqsum[c] / count, name="T_bn_batch_var", tag="elemwise")
    return mean, var


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
