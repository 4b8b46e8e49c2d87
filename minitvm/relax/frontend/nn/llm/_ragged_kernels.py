"""CPU attention kernels whose keys/values are plain (unpaged) arrays, under TVM's names:
`_attention_prefill_ragged_cpu` (sequences packed along the token axis, indptr arrays),
`tree_attn_cpu` (the same with a token-tree mask), `_attention_sequence_prefill_with_mask` (a
padded batch with per-sample valid lengths), and the fused QKV split with RoPE
`llama_rope_with_position_map`. Conventions (softmax in base 2, `lse`, RoPE): _tir_build.
"""

from __future__ import annotations

from typing import Any

from ..... import tir
from .....error import ArgumentError, TargetError
from ._attn_kernels import tree_visible
from ._tir_build import Kernel, attend_row, check_rope, f32, groups, rope, size_vars


def _ragged(name: str, h_kv: int, h_q: int, d_qk: int, d_v: int, dtype: str, tree: bool) -> Any:
    """The ragged prefill (causal flag, k_rope_pos_offset) or tree attention (mn_indptr, mask;
    keys rotated at q_rope_position, queries and keys being the same tokens)."""
    group = groups(h_q, h_kv, name)
    k = Kernel(name)
    batch1, qo_len, kv_len, tree_size = size_vars("int32", "batch_size_plus_1", "qo_len",
                                                  "kv_len", "tree_size")  # fmt: skip
    q = k.buffer("q", (qo_len, h_q, d_qk), dtype)
    q_indptr = k.buffer("q_indptr", (batch1,), "int32")
    key_buf = k.buffer("k", (kv_len, h_kv, d_qk), dtype)
    val_buf = k.buffer("v", (kv_len, h_kv, d_v), dtype)
    kv_indptr = k.buffer("kv_indptr", (batch1,), "int32")
    q_pos = k.buffer("q_rope_position", (qo_len,), "int32")
    if tree:
        mn_indptr = k.buffer("mn_indptr", (batch1,), "int32")
        order = k.buffer("mask", (tree_size, 2), "int32")
    else:
        k_offset = k.buffer("k_rope_pos_offset", (batch1 - 1,), "int32")
    output = k.buffer("output", (qo_len, h_q, d_v), dtype)
    lse = k.buffer("lse", (qo_len, h_q), "float32")
    causal = None if tree else k.scalar("causal", "int32")
    rotary = k.scalar("rotary_mode", "int32") == 1
    scale, theta, sm_scale = (k.scalar(n, "float32") for n in ("rope_scale", "rope_theta",
                                                                "sm_scale"))  # fmt: skip
    with k.loop(batch1 - 1, "b") as b, k.loop(h_q, "h") as h:
        n_q, n_kv = q_indptr[b + 1] - q_indptr[b], kv_indptr[b + 1] - kv_indptr[b]
        with k.loop(n_q, "qi") as qi:
            row, hk = q_indptr[b] + qi, h // group

            def query(j: Any, row: Any = row, h: Any = h) -> Any:
                turned = rope(q, (row, h, j), q_pos[row], d_qk, theta, scale, dtype)
                return tir.if_then_else(rotary, turned, f32(q[row, h, j]))

            def key(r: Any, j: Any, _s: dict, b: Any = b, hk: Any = hk) -> Any:
                kr = kv_indptr[b] + r
                pos = q_pos[kr] if tree else k_offset[b] + r
                turned = rope(key_buf, (kr, hk, j), pos, d_qk, theta, scale, dtype)
                return tir.if_then_else(rotary, turned, f32(key_buf[kr, hk, j]))

            def value(r: Any, j: Any, _s: dict, b: Any = b, hk: Any = hk) -> Any:
                return f32(val_buf[kv_indptr[b] + r, hk, j])

            def visible(r: Any, b: Any = b, qi: Any = qi, n_q: Any = n_q, n_kv: Any = n_kv):
                if tree:
                    return tree_visible(mn_indptr, order, b, qi, r, n_kv, n_q)
                return tir.any(causal == 0, r < n_kv - n_q + qi + 1)

            attend_row(
                k, d_qk=d_qk, d_v=d_v, query=query, n_keys=n_kv, visible=visible,
                locate=lambda r, s: None, key=key, value=value, scale=sm_scale,
                out=lambda j, o, row=row, h=h: k.store(output, (row, h, j), o),
                lse=lambda x, row=row, h=h: k.store(lse, (row, h), x),
            )  # fmt: skip
    return k.func()


def _attention_prefill_ragged_cpu(
    h_kv: int, h_q: int, d_qk: int, d_v: int, dtype: str, rope_scaling: dict | None
) -> Any:
    """(q, q_indptr, k, v, kv_indptr, q_rope_position, k_rope_pos_offset, output, lse, causal,
    rotary_mode, rope_scale, rope_theta, sm_scale): sequence b's queries
    q[q_indptr[b]:q_indptr[b+1]] attend to its keys k[kv_indptr[b]:kv_indptr[b+1]] (causally:
    the last query sees every key); keys rotate at k_rope_pos_offset[b] + their index."""
    check_rope(rope_scaling, "_attention_prefill_ragged_cpu")
    return _ragged("batch_prefill_ragged_kv_cpu", h_kv, h_q, d_qk, d_v, dtype, tree=False)


def tree_attn_cpu(h_kv: int, h_q: int, d: int, dtype: str, rope_scaling: dict | None) -> Any:
    """(q, q_indptr, k, v, kv_indptr, q_rope_position, mn_indptr, mask, output, lse,
    rotary_mode, rope_scale, rope_theta, sm_scale): token-tree attention over ragged keys;
    `mask` holds the DFS intervals (tree_size, 2) of each sequence's nodes (offsets in
    mn_indptr), see _attn_kernels.tree_visible."""
    check_rope(rope_scaling, "tree_attn_cpu")
    return _ragged("batch_tree_attn_cpu", h_kv, h_q, d, d, dtype, tree=True)


_MASK_MODES = ("padded", "causal_padded_left")


def _attention_sequence_prefill_with_mask(
    h_kv: int,
    h_q: int,
    d: int,
    dtype: str,
    target: Any = None,
    sm_scale: float = 1.0,
    *,
    mask_mode: str = "padded",
) -> Any:
    """(q, k, v, valid_lens, output, lse) over a padded batch (batch, seq, heads, d). "padded":
    sample b's first valid_lens[b] tokens attend to each other (bidirectional); the padding rows
    are left as they are. "causal_padded_left": its last valid_lens[b] tokens attend causally.
    A CPU kernel: `target` must be an llvm target (or None)."""
    if mask_mode not in _MASK_MODES:
        raise ArgumentError(
            f"_attention_sequence_prefill_with_mask: mask_mode {mask_mode!r} is not one of "
            f"{list(_MASK_MODES)}"
        )
    kind = getattr(getattr(target, "kind", None), "name", None) or str(target or "llvm").split()[0]
    if kind != "llvm":
        raise TargetError(
            f"_attention_sequence_prefill_with_mask: target {kind!r}: minitvm's kernel is a CPU "
            "(llvm) kernel; GPU attention kernels are not provided"
        )
    group = groups(h_q, h_kv, "_attention_sequence_prefill_with_mask")
    left = mask_mode == "causal_padded_left"
    k = Kernel("sequence_prefill_with_mask")
    batch, qo_len, kv_len = size_vars("int32", "batch", "qo_len", "kv_len")
    q = k.buffer("q", (batch, qo_len, h_q, d), dtype)
    key_buf = k.buffer("k", (batch, kv_len, h_kv, d), dtype)
    val_buf = k.buffer("v", (batch, kv_len, h_kv, d), dtype)
    valid = k.buffer("valid_lens", (batch,), "int32")
    output = k.buffer("output", (batch, qo_len, h_q, d), dtype)
    lse = k.buffer("lse", (batch, qo_len, h_q), dtype)
    scale = tir.const(float(sm_scale), "float32")
    with k.loop(batch, "b") as b, k.loop(h_q, "h") as h:
        n = tir.min(valid[b], tir.min(qo_len, kv_len))
        q0 = qo_len - n if left else 0  # where sample b's valid tokens start
        k0 = kv_len - n if left else 0
        with k.loop(n, "i") as i:
            row, hk = q0 + i, h // group
            attend_row(
                k, d_qk=d, d_v=d, n_keys=(i + 1) if left else n, visible=None,
                query=lambda j, b=b, row=row, h=h: f32(q[b, row, h, j]),
                locate=lambda r, s: None,
                key=lambda r, j, s, b=b, hk=hk: f32(key_buf[b, k0 + r, hk, j]),
                value=lambda r, j, s, b=b, hk=hk: f32(val_buf[b, k0 + r, hk, j]),
                scale=scale,
                out=lambda j, o, b=b, row=row, h=h: k.store(output, (b, row, h, j), o),
                lse=lambda x, b=b, row=row, h=h: k.store(lse, (b, row, h), x),
            )  # fmt: skip
    return k.func()


def llama_rope_with_position_map(
    theta: float,
    scale: float,
    head_dim: int,
    num_q_heads: int,
    num_kv_heads: int,
    dtype: str,
    rope_scaling: dict | None,
    rotary_dim: int | None = None,
) -> Any:
    """(qkv, position_map, q, k, v, apply_rope): split fused qkv `(n, q_heads + 2 * kv_heads,
    head_dim)` into q, k, v, rotating q and k for position `position_map[i]` when apply_rope > 0
    (the first `rotary_dim` dims; the rest pass through)."""
    check_rope(rope_scaling, "llama_rope_with_position_map")
    rdim = head_dim if rotary_dim is None else int(rotary_dim)
    if not (0 < rdim <= head_dim and rdim % 2 == 0):
        raise ArgumentError(
            f"llama_rope_with_position_map: rotary_dim {rdim} must be even and in 1..{head_dim}"
        )
    nq, nkv = num_q_heads, num_kv_heads
    (seq_len,) = size_vars("int32", "seq_len")
    k = Kernel("fused_rope")
    qkv = k.buffer("qkv", (seq_len, nq + 2 * nkv, head_dim), dtype)
    position_map = k.buffer("position_map", (seq_len,), "int32")
    outs = [k.buffer(n, (seq_len, h, head_dim), dtype) for n, h in (("q", nq), ("k", nkv),
                                                                     ("v", nkv))]  # fmt: skip
    apply_rope = k.scalar("apply_rope", "int64")
    th, sc = tir.const(float(theta), "float32"), tir.const(float(scale), "float32")
    with k.loop(seq_len, "s") as s, k.loop(head_dim, "j") as j:
        turn = tir.all(apply_rope > 0, j < rdim)
        for first, count, out, rotate in ((0, nq, outs[0], True), (nq, nkv, outs[1], True),
                                          (nq + nkv, nkv, outs[2], False)):  # fmt: skip
            with k.loop(count, "h") as h:
                x = qkv[s, first + h, j]
                if rotate:
                    turned = rope(qkv, (s, first + h, j), position_map[s], rdim, th, sc, dtype)
                    x = tir.if_then_else(turn, tir.Cast(dtype, turned), x)
                k.store(out, (s, h, j), x)
    return k.func()


__all__ = [
    "_attention_prefill_ragged_cpu",
    "_attention_sequence_prefill_with_mask",
    "llama_rope_with_position_map",
    "tree_attn_cpu",
]
