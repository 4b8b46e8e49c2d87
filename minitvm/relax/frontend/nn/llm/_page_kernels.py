"""TIR kernels that move keys/values in and out of a paged KV cache, under TVM's factory names.

A layer's pages are one array `(num_pages, 2, num_kv_heads, page_size, head_dim)` (2: keys,
values). A token at cache slot `pos` (page id * page_size + offset, from a sequence's page
table) lives at `pages[pos // page_size, :, :, pos % page_size, :]`; a position map holds one
slot per token (-1: nothing to write). The kernels take plain, offset-free arrays; TVM's
`elem_offset` buffer views are not declared.

Every factory returns a `tir.PrimFunc` with TVM's arguments in TVM's order, so it can be built
with `tvm.tirx.build` and called with the arrays TVM's runtime would pass.
"""

from __future__ import annotations

from typing import Any

from ..... import tir
from ._tir_build import Kernel, f32, size_vars


def _kv_cache_transpose_append(
    num_key_value_heads: int, head_dim: int, dtype: str, page_size: int = 16
) -> Any:
    """(pages, k_data, v_data, position_map): store each token's k and v `(n, heads, dim)` at
    its slot `position_map[i]`; tokens whose slot is -1 are skipped."""
    heads, dim, ps = num_key_value_heads, head_dim, page_size
    ntoken, num_pages = size_vars("int64", "num_tokens", "num_pages")
    k = Kernel("tir_kv_cache_transpose_append")
    pages = k.buffer("pages", (num_pages, 2, heads, ps, dim), dtype)
    k_data = k.buffer("k_data", (ntoken, heads, dim), dtype)
    v_data = k.buffer("v_data", (ntoken, heads, dim), dtype)
    position_map = k.buffer("position_map", (ntoken,), "int32")
    with k.loop(ntoken, "i") as i:
        pos = position_map[i]
        with k.ib.if_scope(pos != -1), k.loop(heads, "h") as h, k.loop(dim, "f") as f:
            k.store(pages, (pos // ps, 0, h, pos % ps, f), k_data[i, h, f])
            k.store(pages, (pos // ps, 1, h, pos % ps, f), v_data[i, h, f])
    return k.func()


def _kv_cache_debug_get_kv(
    num_hidden_layers: int, num_key_value_heads: int, head_dim: int, dtype: str
) -> Any:
    """(pages, position_map, k_data, v_data, layer_id): copy the keys and values at the slots
    of `position_map` into row `layer_id` of k_data / v_data `(layers, n, heads, dim)`."""
    layers, heads, dim = num_hidden_layers, num_key_value_heads, head_dim
    seqlen, page_size, num_pages = size_vars("int64", "seqlen", "page_size", "num_pages")
    k = Kernel("tir_kv_cache_debug_get_kv")
    pages = k.buffer("pages", (num_pages, 2, heads, page_size, dim), dtype)
    position_map = k.buffer("position_map", (seqlen,), "int32")
    k_data = k.buffer("k_data", (layers, seqlen, heads, dim), dtype)
    v_data = k.buffer("v_data", (layers, seqlen, heads, dim), dtype)
    layer_id = k.scalar("layer_id", "int64")
    with k.loop(seqlen, "p") as p, k.loop(heads, "h") as h, k.loop(dim, "d") as d:
        pos = tir.Cast("int64", position_map[p])
        page, slot = pos // page_size, pos % page_size
        k.store(k_data, (layer_id, p, h, d), pages[page, 0, h, slot, d])
        k.store(v_data, (layer_id, p, h, d), pages[page, 1, h, slot, d])
    return k.func()


def _copy_single_page_cpu(num_heads: int, page_size: int, head_dim: int, dtype: str) -> Any:
    """(pages, src_page_id, tgt_page_id, copy_length): copy the first `copy_length` slots of a
    page (keys and values) into another page (a fork that ends inside a page)."""
    (num_pages,) = size_vars("int64", "num_pages")
    k = Kernel("copy_single_page_cpu")
    pages = k.buffer("pages", (num_pages, 2, num_heads, page_size, head_dim), dtype)
    src, tgt, length = (k.scalar(n, "int64") for n in ("src_page_id", "tgt_page_id", "copy_length"))
    with k.loop(num_heads, "h") as h, k.loop(length, "p") as p, k.loop(head_dim, "d") as d:
        k.store(pages, (tgt, 0, h, p, d), pages[src, 0, h, p, d])
        k.store(pages, (tgt, 1, h, p, d), pages[src, 1, h, p, d])
    return k.func()


def _compact_kv_copy_cpu(num_heads: int, head_dim: int, dtype: str, page_size: int = 16) -> Any:
    """(pages, copy_length_indptr, copy_src_dst_pos, batch_size): for each of `batch_size`
    groups b, move the slots `copy_src_dst_pos[0, j]` to `copy_src_dst_pos[1, j]` for j in
    `copy_length_indptr[b] .. copy_length_indptr[b + 1] - 1`, in order (compaction after a
    token tree is accepted)."""
    ps = page_size
    num_pages, total = size_vars("int32", "num_pages", "total_copy_length")
    k = Kernel("compact_kv_copy_cpu")
    pages = k.buffer("pages", (num_pages, 2, num_heads, ps, head_dim), dtype)
    batch_size = tir.Var("batch_size", "int32")  # a scalar argument, after the buffers
    indptr = k.buffer("copy_length_indptr", (batch_size + 1,), "int32")
    moves = k.buffer("copy_src_dst_pos", (2, total), "int32")
    k.params.append(batch_size)
    with k.loop(batch_size, "b") as b, k.loop(indptr[b + 1] - indptr[b], "i") as i:
        src, dst = moves[0, indptr[b] + i], moves[1, indptr[b] + i]
        with k.loop(num_heads, "h") as h, k.loop(head_dim, "d") as d:
            for kv in (0, 1):
                k.store(
                    pages, (dst // ps, kv, h, dst % ps, d), pages[src // ps, kv, h, src % ps, d]
                )
    return k.func()


def _merge_state_inplace_cpu(v_dtype: str) -> Any:
    """(v, s, v_other, s_other): merge two partial attention results in place. `s` is each
    row's log2-sum-exp2 of its scores; the merged v weighs both by their share of the total."""
    n, h, d = size_vars("int32", "N", "H", "D")
    k = Kernel("merge_state_inplace_cpu")
    v = k.buffer("v", (n, h, d), v_dtype)
    s = k.buffer("s", (n, h), "float32")
    v_other = k.buffer("v_other", (n, h, d), v_dtype)
    s_other = k.buffer("s_other", (n, h), "float32")
    with k.loop(n, "n") as i, k.loop(h, "h") as j, k.block("merge", w=((3,), "float32")) as b:
        w = b["w"]  # max, own weight, other weight
        k.store(w, (0,), tir.max(s[i, j], s_other[i, j]))
        k.store(w, (1,), tir.exp2(s[i, j] - w[0]))
        k.store(w, (2,), tir.exp2(s_other[i, j] - w[0]))
        with k.loop(d, "d") as c:
            merged = (f32(v[i, j, c]) * w[1] + f32(v_other[i, j, c]) * w[2]) / (w[1] + w[2])
            k.store(v, (i, j, c), merged)
        k.store(s, (i, j), tir.log2(w[1] + w[2]) + w[0])
    return k.func()


__all__ = [
    "_compact_kv_copy_cpu",
    "_copy_single_page_cpu",
    "_kv_cache_debug_get_kv",
    "_kv_cache_transpose_append",
    "_merge_state_inplace_cpu",
]
