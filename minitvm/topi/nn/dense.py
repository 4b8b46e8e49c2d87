"""Fully connected layer: y = x @ w.T (+ bias)."""

from __future__ import annotations

import math
from typing import Any

from ... import te
from ...error import TEError
from ...tir.expr import cast as tir_cast
from ..linalg import matmul as _matmul
from ..transform import reshape
from ..utils import const_int, fmt_shape, prove_equal
from ..utils import prod as dims_prod


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


def matmul(
    tensor_a: te.Tensor,
    tensor_b: te.Tensor,
    bias: te.Tensor | None = None,
    out_dtype: str | None = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> te.Tensor:
    """TVM's `topi.nn.matmul`: 2-D `a @ b` (either transposed), plus `bias` (n,) when given."""
    for name, t in (("tensor_a", tensor_a), ("tensor_b", tensor_b)):
        if len(t.shape) != 2:
            raise TEError(f"topi.nn.matmul: {name} must be 2-D, got shape {fmt_shape(t.shape)}")
    out = _matmul(tensor_a, tensor_b, transpose_a, transpose_b, out_dtype)
    if bias is None:
        return out
    dtype = out_dtype or tensor_a.dtype
    return te.compute(
        out.shape, lambda i, j: out[i, j] + tir_cast(dtype, bias[j]), name="T_add", tag="broadcast"
    )


def flatten(data: te.Tensor) -> te.Tensor:
    """TVM's `topi.nn.flatten` (batch flatten): (N, d1, d2, ...) → (N, d1*d2*...)."""
    if len(data.shape) < 1:
        raise TEError("topi.nn.flatten: data must have a batch dimension")
    rest = [const_int(d) for d in data.shape[1:]]
    inner = math.prod(rest) if None not in rest else dims_prod(tuple(data.shape[1:]))
    return reshape(data, (data.shape[0], inner))
