"""Numerically stable softmax and log-softmax: max, exp, sum and normalise as separate computes."""

from __future__ import annotations

from typing import Any

from ... import te
from ...tir import op as tir_op
from ..utils import normalize_axis


def _reduce_along(x: te.Tensor, axis: int, reducer: Any, fn: Any, name: str) -> te.Tensor:
    """out[..., 1-removed ...] = reducer over x.shape[axis] of fn(index)."""
    k = te.reduce_axis((0, x.shape[axis]), "k")
    shape = tuple(d for n, d in enumerate(x.shape) if n != axis)

    def body(*idx: Any):
        full = tuple(idx[:axis]) + (k,) + tuple(idx[axis:])
        return reducer(fn(full, idx), axis=k)

    return te.compute(shape, body, name=name, tag="reduce")


def _stats(x: te.Tensor, axis: int) -> tuple[te.Tensor, te.Tensor]:
    xmax = _reduce_along(x, axis, te.max, lambda full, _: x[full], "T_softmax_maxelem")
    expsum = _reduce_along(
        x, axis, te.sum, lambda full, idx: tir_op.exp(x[full] - xmax[idx]), "T_softmax_expsum"
    )
    return xmax, expsum


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """exp(x - max) * (1 / sum(exp(x - max))) along `axis`, as torch computes it.

    exp is a stage of its own, computed once per element and read twice (by the sum and the
    normalisation); the default CPU schedule computes max, exp, sum and the scaled output of
    each row in one parallel loop over rows (GeneralReduction), the row's exp in L1. Scaling
    by the reciprocal of the sum rounds as torch does (one rounding more than a division)."""
    axis = normalize_axis(axis, len(x.shape), "topi.nn.softmax")
    xmax = _reduce_along(x, axis, te.max, lambda full, _: x[full], "T_softmax_maxelem")

    def drop(i: tuple) -> tuple:
        return tuple(i[:axis]) + tuple(i[axis + 1 :])

    exp = te.compute(
        x.shape, lambda *i: tir_op.exp(x[i] - xmax[drop(i)]), name="T_softmax_exp", tag="elemwise"
    )
    expsum = _reduce_along(x, axis, te.sum, lambda full, _: exp[full], "T_softmax_expsum")
    one = tir_op.const(1, x.dtype)
    return te.compute(
        x.shape, lambda *i: exp[i] * (one / expsum[drop(i)]), name="T_softmax_norm", tag="elemwise"
    )


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """x - max - log(sum(exp(x - max))) along `axis`."""
    axis = normalize_axis(axis, len(x.shape), "topi.nn.log_softmax")
    xmax, expsum = _stats(x, axis)

    def body(*i: Any):
        j = tuple(i[:axis]) + tuple(i[axis + 1 :])
        return x[i] - xmax[j] - tir_op.log(expsum[j])

    return te.compute(x.shape, body, name="T_log_softmax", tag="elemwise")
