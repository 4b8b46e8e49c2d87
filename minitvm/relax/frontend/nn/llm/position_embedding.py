"""Rotary position embedding (RoPE) as HF transformers' Llama applies it.

For head dim d, pair j < d/2 turns by angle (offset + s) * inv_freq[j] with
inv_freq[j] = 1 / theta ** (2j / d), computed in float32 as HF's `LlamaRotaryEmbedding` does;
element j is paired with element j + d/2 (HF's `rotate_half` layout, not the interleaved one).
"""

from __future__ import annotations

from typing import Any

from ..... import te, tir
from .....error import ArgumentError, ShapeError
from .....tir.expr import PrimExpr
from ..core import Tensor
from ..op import tensor_ir_op


def _rope_prim_func(ndim: int, head_dim: int, theta: float, dtype: str) -> Any:
    """A PrimFunc rope(x, out, offset) over x of shape (b, s, h, d) with symbolic b, s, h."""
    dims = [te.var(n, "int64") for n in ("b", "s", "h")[: ndim - 1]] + [head_dim]
    offset = te.var("offset", "int64")
    x = te.placeholder(dims, dtype, name="x")
    half = head_dim // 2

    def body(*idx: Any) -> Any:
        j = idx[-1]
        pair = tir.floormod(j, half)
        exponent = tir.Cast("float32", 2 * pair) / tir.const(float(head_dim), "float32")
        inv_freq = tir.const(1.0, "float32") / tir.power(tir.const(theta, "float32"), exponent)
        angle = tir.Cast("float32", offset + idx[-3]) * inv_freq
        partner = tir.Select(j < half, j + half, j - half)
        rotated = x(*idx[:-1], partner).astype("float32")
        rotated = tir.Select(j < half, -rotated, rotated)
        value = x(*idx).astype("float32") * tir.cos(angle) + rotated * tir.sin(angle)
        return value.astype(dtype)

    out = te.compute(dims, body, name="rope")
    return te.create_prim_func([x, out, offset])


def rope(
    x: Tensor,
    offset: Any = 0,
    theta: float = 10000.0,
    name: str = "rope",
) -> Tensor:
    """`x` (batch, seq, heads, head_dim) rotated for positions offset, offset + 1, ...

    `offset` is an int or a symbolic size (a `tir.Var`, e.g. an `nn.spec.Int` input or the
    length of a cached key tensor). Matches HF's `apply_rotary_pos_emb` with `rope_theta=theta`.
    """
    if not isinstance(x, Tensor):
        raise ArgumentError(f"nn.llm.rope: x must be an nn.Tensor, got {type(x).__name__}")
    if x.ndim != 4:
        raise ShapeError(
            f"nn.llm.rope: x must be (batch, seq, heads, head_dim), got shape {x.shape}"
        )
    head_dim = x.shape[-1]
    if not isinstance(head_dim, int) or head_dim % 2:
        raise ShapeError(
            f"nn.llm.rope: head_dim (the last dim of x) must be a static even int, got {head_dim}"
        )
    if isinstance(offset, bool) or not isinstance(offset, int | PrimExpr):
        raise ArgumentError(
            f"nn.llm.rope: offset must be an int or a tir expression, got {type(offset).__name__}"
        )
    if theta <= 0:
        raise ArgumentError(f"nn.llm.rope: theta must be positive, got {theta}")
    func = _rope_prim_func(x.ndim, head_dim, float(theta), x.dtype)
    offset = tir.const(offset, "int64") if isinstance(offset, int) else offset
    out = Tensor.placeholder(x.shape, x.dtype)
    return tensor_ir_op(func, name, [x, offset], out=out)
