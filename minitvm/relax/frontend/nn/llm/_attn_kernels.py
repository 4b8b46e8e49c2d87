"""CPU attention kernels over a paged KV cache, under TVM's factory names and argument orders:
`_attention_prefill_cpu`, `_attention_decode_cpu` and the token-tree variant
`tree_attn_with_paged_kv_cache_cpu`. Conventions (softmax in base 2, `lse`, RoPE): _tir_build.

Each sequence b owns pages `page_values[page_indptr[b]:page_indptr[b+1]]`; its key count is
`(pages - 1) * page_size + last_page_len`. With a sliding window, length_info is
(3, batch): last-page length, window start and sink size; the kept positions are the sink, then
the window. Differences from TVM's CPU kernels, kept on purpose: a row with no visible key
writes zeros (TVM's running denominator starts at 1, which biases short rows), and the running
output is rescaled by the row's one correction factor.
"""

from __future__ import annotations

from typing import Any

from ..... import tir
from ._tir_build import Kernel, attend_row, check_rope, f32, groups, rope, size_vars


def _paged_params(k: Kernel, h_kv: int, h_q: int, d: int, dtype: str, ps: int, sliding: bool,
                  decode: bool) -> dict:  # fmt: skip
    """TVM's leading arguments of the paged kernels, as buffers (decode has no q_indptr)."""
    batch, total, nnz, max_pages = size_vars("int32", "batch_size", "total_len", "nnz", "pages")
    rows = batch if decode else total
    a = {"batch": batch, "q": k.buffer("q", (rows, h_q, d), dtype)}
    if not decode:
        a["q_indptr"] = k.buffer("q_indptr", (batch + 1,), "int32")
    a["pages"] = k.buffer("pages", (max_pages, 2, h_kv, ps, d), dtype)
    a["page_indptr"] = k.buffer("page_indptr", (batch + 1,), "int32")
    a["page_values"] = k.buffer("page_values", (nnz,), "int32")
    a["length_info"] = k.buffer("length_info", (3, batch) if sliding else (batch,), "int32")
    a["k_rope_pos_offset"] = k.buffer("k_rope_pos_offset", (batch,), "int32")
    a["q_rope_position"] = k.buffer("q_rope_position", (rows,), "int32")
    a["output"] = k.buffer("output", (rows, h_q, d), dtype)
    a["lse"] = k.buffer("lse", (rows, h_q), "float32")
    return a


def _scalars(k: Kernel, causal: bool) -> dict:
    names = (["causal"] if causal else []) + ["rotary_mode"]
    out = {n: k.scalar(n, "int32") for n in names}
    out.update({n: k.scalar(n, "float32") for n in ("rope_scale", "rope_theta", "sm_scale")})
    return out


def _paged_row(k: Kernel, a: dict, s: dict, *, b: Any, h: Any, row: Any, n_q: Any, qi: Any,
               d: int, dtype: str, group: int, ps: int, sliding: bool, mask: Any) -> None:  # fmt: skip
    """Query `row` (the qi-th of n_q new tokens of sequence b), head h, over b's pages."""
    info, pind = a["length_info"], a["page_indptr"]
    n_pages = pind[b + 1] - pind[b]
    if sliding:
        kept = (n_pages - 1) * ps + info[0, b] - info[1, b] + info[2, b]
    else:
        kept = (n_pages - 1) * ps + info[b]
    n_keys = tir.if_then_else(n_pages > 0, kept, 0)

    def seq_pos(r: Any) -> Any:
        if not sliding:
            return r
        return tir.if_then_else(r < info[2, b], r, r - info[2, b] + info[1, b])

    def locate(r: Any, scratch: dict) -> None:
        loc = scratch["loc"]
        k.store(loc, (0,), a["page_values"][pind[b] + seq_pos(r) // ps])
        k.store(loc, (1,), seq_pos(r) % ps)

    rotate = s["rotary_mode"] == 1
    theta, scale = s["rope_theta"], s["rope_scale"]
    q, pages, hk = a["q"], a["pages"], h // group

    def query(j: Any) -> Any:
        rotated = rope(q, (row, h, j), a["q_rope_position"][row], d, theta, scale, dtype)
        return tir.if_then_else(rotate, rotated, f32(q[row, h, j]))

    def key(r: Any, j: Any, scratch: dict) -> Any:
        loc = scratch["loc"]
        idx = (loc[0], 0, hk, loc[1], j)
        rotated = rope(pages, idx, a["k_rope_pos_offset"][b] + r, d, theta, scale, dtype)
        return tir.if_then_else(rotate, rotated, f32(pages[idx]))

    def value(r: Any, j: Any, scratch: dict) -> Any:
        loc = scratch["loc"]
        return f32(pages[loc[0], 1, hk, loc[1], j])

    visible = None if mask is None else (lambda r: mask(r, n_keys))
    attend_row(
        k, d_qk=d, d_v=d, query=query, n_keys=n_keys, visible=visible, locate=locate, key=key,
        value=value, scale=s["sm_scale"], out=lambda j, o: k.store(a["output"], (row, h, j), o),
        lse=lambda x: k.store(a["lse"], (row, h), x),
    )  # fmt: skip


def _attention_prefill_cpu(
    h_kv: int,
    h_q: int,
    d: int,
    dtype: str,
    sliding_window: bool,
    rope_scaling: dict | None,
    page_size: int = 16,
) -> Any:
    """(q, q_indptr, pages, page_indptr, page_values, length_info, k_rope_pos_offset,
    q_rope_position, output, lse, causal, rotary_mode, rope_scale, rope_theta, sm_scale):
    attention of each sequence's new queries (rows q_indptr[b]..) over its paged keys/values;
    with causal, query i of n sees the first len - n + i + 1 keys."""
    check_rope(rope_scaling, "_attention_prefill_cpu")
    group = groups(h_q, h_kv, "_attention_prefill_cpu")
    name = "batch_prefill_paged_kv_cpu" + ("_sliding_window" if sliding_window else "")
    k = Kernel(name)
    a = _paged_params(k, h_kv, h_q, d, dtype, page_size, sliding_window, decode=False)
    s = _scalars(k, causal=True)
    q_indptr = a["q_indptr"]
    with k.loop(a["batch"], "b") as b, k.loop(h_q, "h") as h:
        n_q = q_indptr[b + 1] - q_indptr[b]
        with k.loop(n_q, "qi") as qi:

            def mask(r: Any, n_keys: Any, qi: Any = qi, n_q: Any = n_q) -> Any:
                return tir.any(s["causal"] == 0, r < n_keys - n_q + qi + 1)

            _paged_row(k, a, s, b=b, h=h, row=q_indptr[b] + qi, n_q=n_q, qi=qi, d=d,
                       dtype=dtype, group=group, ps=page_size, sliding=sliding_window,
                       mask=mask)  # fmt: skip
    return k.func()


def _attention_decode_cpu(
    num_kv_heads: int,
    num_qo_heads: int,
    head_dim: int,
    qkv_dtype: str,
    sliding_window: bool,
    rope_scaling: dict | None,
    page_size: int = 16,
) -> Any:
    """(q, pages, page_indptr, page_values, length_info, k_rope_pos_offset, q_rope_position,
    output, lse, rotary_mode, rope_scale, rope_theta, sm_scale): one query per sequence (its
    newest token), which sees every kept key of the sequence."""
    check_rope(rope_scaling, "_attention_decode_cpu")
    group = groups(num_qo_heads, num_kv_heads, "_attention_decode_cpu")
    name = "batch_decode_paged_kv_cpu" + ("_sliding_window" if sliding_window else "")
    k = Kernel(name)
    a = _paged_params(k, num_kv_heads, num_qo_heads, head_dim, qkv_dtype, page_size,
                      sliding_window, decode=True)  # fmt: skip
    s = _scalars(k, causal=False)
    with k.loop(a["batch"], "b") as b, k.loop(num_qo_heads, "h") as h:
        _paged_row(k, a, s, b=b, h=h, row=b, n_q=1, qi=0, d=head_dim, dtype=qkv_dtype,
                   group=group, ps=page_size, sliding=sliding_window, mask=None)  # fmt: skip
    return k.func()


def tree_visible(indptr: Any, order: Any, b: Any, row: Any, col: Any, kv_len: Any,
                 qo_len: Any) -> Any:  # fmt: skip
    """Query `row` (of qo_len) sees key `col` (of kv_len) in sequence b's token tree: the
    sequence's last tree_len keys and queries are tree nodes with DFS intervals order[n] =
    [enter, exit); a node sees its ancestors and itself, and every key before the tree."""
    tree_len = indptr[b + 1] - indptr[b]
    start = kv_len - tree_len
    # clamped into the sequence's nodes: both reads stay in bounds where `col < start` decides
    child = indptr[b] + tir.max(row + tree_len - qo_len, 0)
    parent = indptr[b] + tir.max(col - start, 0)
    in_subtree = tir.all(order[child, 0] >= order[parent, 0], order[child, 0] < order[parent, 1])
    return tir.all(col < kv_len, tir.any(col < start, in_subtree))


def tree_attn_with_paged_kv_cache_cpu(
    h_kv: int, h_q: int, d: int, dtype: str, rope_scaling: dict | None, page_size: int = 16
) -> Any:
    """(q, q_indptr, pages, page_indptr, page_values, length_info, k_rope_pos_offset,
    q_rope_position, output, lse, rotary_mode, rope_scale, rope_theta, sm_scale,
    tree_order_indptr, tree_order): tree attention of each sequence's new tokens over its paged
    keys, the tree's DFS intervals in tree_order (see tree_visible)."""
    check_rope(rope_scaling, "tree_attn_with_paged_kv_cache_cpu")
    group = groups(h_q, h_kv, "tree_attn_with_paged_kv_cache_cpu")
    k = Kernel("tree_attn_paged_kv_cpu")
    a = _paged_params(k, h_kv, h_q, d, dtype, page_size, False, decode=False)
    s = _scalars(k, causal=False)
    batch, total = a["batch"], a["q"].shape[0]
    tree_indptr = k.buffer("tree_order_indptr", (batch + 1,), "int32")
    tree_order = k.buffer("tree_order", (total, 2), "int32")
    q_indptr = a["q_indptr"]
    with k.loop(batch, "b") as b, k.loop(h_q, "h") as h:
        n_q = q_indptr[b + 1] - q_indptr[b]
        with k.loop(n_q, "qi") as qi:

            def mask(r: Any, n_keys: Any, b: Any = b, qi: Any = qi, n_q: Any = n_q) -> Any:
                return tree_visible(tree_indptr, tree_order, b, qi, r, n_keys, n_q)

            _paged_row(k, a, s, b=b, h=h, row=q_indptr[b] + qi, n_q=n_q, qi=qi, d=d,
                       dtype=dtype, group=group, ps=page_size, sliding=False,
                       mask=mask)  # fmt: skip
    return k.func()


__all__ = ["_attention_decode_cpu", "_attention_prefill_cpu", "tree_attn_with_paged_kv_cache_cpu"]
