"""Fully connected layer: y = x @ w.T (+ bias)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir.expr import cast as tir_cast
from ..utils import fmt_shape, prove_equal


def dense(
    data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None = None, out_dtype: str | None = None
) -> te.Tensor:
    """data (..., in) and weight (out, in) → (..., out); bias (out,) is added when given."""
    out_dtype = out_dtype or data.dtype
    if len(weight.shape) != 2:
        raise TEError(
            f"topi.nn.dense: weight must be 2-D (out, in), got shape {fmt_shape(weight.shape)}"
        )
    if not prove_equal(data.shape[-1], weight.shape[1]):
        raise TEError(
            f"topi.nn.dense: data has shape {fmt_shape(data.shape)} and weight {fmt_shape(weight.shape)}; "
            "the last dim of data must equal dim 1 of weight"
        )
    k = te.reduce_axis((0, weight.shape[1]), "k")
    out_shape = tuple(data.shape[:-1]) + (weight.shape[0],)

    def mm(*idx: Any):
        *lead, j = idx
        return te.sum(
            tir_cast(out_dtype, data[tuple(lead) + (k,)]) * tir_cast(out_dtype, weight[j, k]),
            axis=k,
        )

    out = te.compute(out_shape, mm, name="T_dense", tag="dense")
    if bias is None:
        return out
    return te.compute(
        out_shape,
        lambda *i: out[i] + tir_cast(out_dtype, bias[i[-1]]),
        name="T_dense_bias",
        tag="broadcast",
    )
