"""Scaled dot-product attention in TVM's BSNH layout (batch, sequence, heads, head dim)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..broadcast import broadcast_index

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
    hv = value.shape[3]
    dtype = query.dtype
    if scale is None:
        factor = tir_op.rsqrt(tir_cast(dtype, h_))
    else:
        factor = make_const(dtype, scale)
    score_shape = (b_, n_, s_, t_)
    kh = te.reduce_axis((0, h_), "h")

    qk = te.compute(
        score_shape,
        lambda b, n, s, t: te.sum(query[b, s, n, kh] * key[b, t, n, kh], axis=kh),
        name="T_attn_qk",
        tag="matmul",
    )

    def masked(b: Any, n: Any, s: Any, t: Any):
        v = qk[b, n, s, t] * factor
        if bias is not None:
            v = v + bias[broadcast_index(bias, score_shape, (b, n, s, t))]
        if causal_mask is None:
            return v
        limit = s if causal_mask == "TopLeft" else s + t_ - s_
        return tir_op.Select_(t <= limit, v, tir_op.min_value(dtype))

    scores = te.compute(score_shape, masked, name="T_attn_scores", tag="elemwise")
    kt = te.reduce_axis((0, t_), "t")
    row_max = te.compute(
        score_shape[:3],
        lambda b, n, s: te.max(scores[b, n, s, kt], axis=kt),
        name="T_attn_max",
        tag="reduce",
    )
    ex = te.compute(
        score_shape,
        lambda b, n, s, t: tir_op.exp(scores[b, n, s, t] - row_max[b, n, s]),
        name="T_attn_exp",
        tag="elemwise",
    )
    kt2 = te.reduce_axis((0, t_), "t2")
    den = te.compute(
        score_shape[:3],
        lambda b, n, s: te.sum(ex[b, n, s, kt2], axis=kt2),
        name="T_attn_sum",
        tag="reduce",
    )
    # normalised before the product, so the product has no epilogue reading other stages
    prob = te.compute(
        score_shape,
        lambda b, n, s, t: ex[b, n, s, t] / den[b, n, s],
        name="T_attn_prob",
        tag="elemwise",
    )
    kt3 = te.reduce_axis((0, t_), "t3")
    return te.compute(
        (b_, s_, n_, hv),
        lambda b, s, n, j: te.sum(prob[b, n, s, kt3] * value[b, kt3, n, j], axis=kt3),
        name="T_attention",
        tag="matmul",
    )
