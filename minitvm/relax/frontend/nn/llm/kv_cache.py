"""A functional key/value cache: past keys and values are inputs, the extended ones outputs.

A decode method takes, per layer, the keys and values of the tokens seen so far as tensors of
shape (batch, past, kv_heads, head_dim) with a symbolic `past`, and returns them extended by the
new tokens (a concat along the sequence axis). The caller feeds the returned tuple back in at the
next step. Nothing is mutated, so this runs on the relax VM as it is; the price is a copy of the
cache per step, which is small next to the weights for short contexts.

    spec = {"decode": {"ids": nn.spec.Tensor((1, 1), "int32"),
                       "past": llm.kv_cache_spec(num_layers, kv_heads, head_dim)}}
"""

from __future__ import annotations

from typing import Any

from .....error import ArgumentError, ShapeError
from .....tir.expr import Var as TirVar
from ....struct_info import TensorStructInfo
from .. import spec as _spec
from ..core import Tensor, current_builder
from ..op import concat

# TVM's CPU kernel factories of the paged cache, importable from TVM's module path
from ._attn_kernels import (  # noqa: F401
    _attention_decode_cpu,
    _attention_prefill_cpu,
    tree_attn_with_paged_kv_cache_cpu,
)
from ._page_kernels import (  # noqa: F401
    _compact_kv_copy_cpu,
    _copy_single_page_cpu,
    _kv_cache_debug_get_kv,
    _kv_cache_transpose_append,
    _merge_state_inplace_cpu,
)
from ._ragged_kernels import (  # noqa: F401
    _attention_prefill_ragged_cpu,
    _attention_sequence_prefill_with_mask,
    llama_rope_with_position_map,
    tree_attn_cpu,
)

# TVM keeps its paged cache in nn.llm.kv_cache; it lives in paged_kv_cache.py here
from .paged_kv_cache import (  # noqa: F401 (re-exported under TVM's module path)
    AttnKind,
    FlashInferPagedKVCache,
    PagedKVCache,
    RopeMode,
    TIRPagedKVCache,
)


def kv_cache_spec(
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    dtype: str = "float32",
    batch: int | str = 1,
    length: str = "past",
) -> list:
    """The spec of a past-keys/values input: [k_0, v_0, k_1, v_1, ...], each
    `(batch, length, num_kv_heads, head_dim)`; `length` names the symbolic cache length."""
    for what, value in (("num_layers", num_layers), ("num_kv_heads", num_kv_heads)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ArgumentError(
                f"nn.llm.kv_cache_spec: {what} must be a positive int, got {value!r}"
            )
    shape = (batch, length, num_kv_heads, head_dim)
    return [_spec.Tensor(shape, dtype) for _ in range(2 * num_layers)]


def bind_kv_cache(past: list[Tensor] | tuple, length_name: str = "past_len") -> list[Tensor]:
    """The cache tensors re-bound with `match_cast` to one fresh symbolic length.

    Call it first thing in a method whose cache arrives as a tuple input: the VM binds symbolic
    dims from top-level tensor inputs and match_casts, and this gives every cached tensor the
    same length var (checked at run time to agree).
    """
    past = list(past)
    if not past or not all(isinstance(t, Tensor) and t.ndim == 4 for t in past):
        raise ArgumentError(
            "nn.llm.bind_kv_cache: past must be a non-empty list of (batch, seq, kv_heads, "
            "head_dim) nn Tensors"
        )
    bb = current_builder("nn.llm.bind_kv_cache")
    length = TirVar(length_name, "int64")
    out = []
    for i, t in enumerate(past):
        shape = [t.shape[0], length, *t.shape[2:]]
        var = bb.match_cast(t._expr, TensorStructInfo(shape, t.dtype), f"past_{i}")
        out.append(Tensor(_expr=var))
    return out


def append_kv(past: Tensor | None, new: Tensor, name: str = "kv") -> Tensor:
    """`new` (batch, seq, kv_heads, head_dim) appended to `past` along the sequence axis
    (`new` itself when there is no past)."""
    if past is None:
        return new
    if past.ndim != 4 or new.ndim != 4 or list(past.shape[2:]) != list(new.shape[2:]):
        raise ShapeError(
            f"nn.llm.append_kv: past {past.shape} and new {new.shape} must both be "
            "(batch, seq, kv_heads, head_dim) with equal heads and head_dim"
        )
    return concat([past, new], dim=1, name=name)


def past_length(past: list[Tensor] | None) -> Any:
    """The (symbolic) number of cached positions: the position offset of the new tokens."""
    if not past:
        return 0
    return past[0].shape[1]
