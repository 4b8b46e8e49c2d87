"""Scaled dot-product attention in TVM's BSNH layout (batch, sequence, heads, head dim)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..broadcast import broadcast_index
from ..linalg import matmul
from ..transform import transpose
from .softmax import softmax

CAUSAL_MASKS = ("TopLeft", "BottomRight")


def attention(
    query: te.Tensor,
    key: te.Tensor,
    value: te.Tensor,
    bias: te.Tensor | None = None,
    scale: float | None = None,
    causal_mask: str | None = None,
) -> te.Tensor:
    """softmax(q k^T * scale + bias, masked) v: q (B, S, N, H), k (B, T, N, H), v (B, T, N, Hv).

    A masked score is the dtype's lowest value (not -inf), so a row with every position masked
    averages v instead of producing NaN; `causal_mask` keeps t <= s ("TopLeft") or
    t <= s + T - S ("BottomRight")."""
    b_, s_, n_, h_ = query.shape
    t_ = key.shape[1]
    dtype = query.dtype
    factor = tir_op.rsqrt(tir_cast(dtype, h_)) if scale is None else make_const(dtype, scale)
    # batched matmuls over (B, N) in the layouts the matmul kernel reads contiguously; the
    # scale goes on q (S x H multiplies, not S x T)
    q = te.compute(
        (b_, n_, s_, h_),
        lambda b, n, s, h: query[b, s, n, h] * factor,
        name="T_attn_q",
        tag="injective",
    )
    k = transpose(key, (0, 2, 3, 1))  # (B, N, H, T)
    v = transpose(value, (0, 2, 1, 3))  # (B, N, T, Hv)
    scores = matmul(q, k)
    score_shape = (b_, n_, s_, t_)

    def masked(b: Any, n: Any, s: Any, t: Any):
        val = scores[b, n, s, t]
        if bias is not None:
            val = val + bias[broadcast_index(bias, score_shape, (b, n, s, t))]
        if causal_mask is None:
            return val
        limit = s if causal_mask == "TopLeft" else s + t_ - s_
        return tir_op.Select_(t <= limit, val, tir_op.min_value(dtype))

    if bias is not None or causal_mask is not None:
        scores = te.compute(score_shape, masked, name="T_attn_scores", tag="elemwise")
    prob = softmax(scores, -1)
    out = matmul(prob, v)  # (B, N, S, Hv)
    return transpose(out, (0, 2, 1, 3))
