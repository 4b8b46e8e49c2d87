"""Compiled kernels of the paged KV cache: the kernel arguments 13..27 of
`vm.builtin.paged_attention_kv_cache_create`, in TVM's order, and the attention step that runs
them (see vm_builtin_kv.py for the cache itself).

When the create call passes kernels (as TVM's tests and `TIRPagedKVCache` do), each layer's
attention stores the new keys/values with the transpose-append kernel (slot 13) and attends
with the paged prefill kernel (slot 16, causal), both on the layer's pages in place. The other
slots are optional speed-ups of the same computation in TVM's runtime (ragged prefill, decode,
merge, page copies, debug read) or features this cache refuses elsewhere (sliding windows, token
trees, MLA); they are checked to be callables and not called. Kernels are trusted to follow
TVM's signatures, as in TVM: a call with the wrong arguments fails in the compiled function's
argument checks, naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..error import ArgumentError
from .ndarray import NDArray

_CREATE = "vm.builtin.paged_attention_kv_cache_create"

# TVM's names of the kernel arguments of the create function
SLOTS = {
    13: "f_transpose_append",
    14: "f_transpose_append_mla",
    15: "f_attention_prefill_ragged",
    16: "f_attention_prefill",
    17: "f_attention_decode",
    18: "f_attention_prefill_sliding_window",
    19: "f_attention_decode_sliding_window",
    20: "f_attention_prefill_with_tree_mask_paged_kv_cache",
    21: "f_attention_prefill_with_tree_mask",
    22: "f_mla_prefill",
    23: "f_merge_inplace",
    24: "f_split_rotary",
    25: "f_copy_single_page",
    26: "f_debug_get_kv",
    27: "f_compact_copy",
}
_MLA = (14, 22)
_BACKENDS = ("tir", "tirx")


@dataclass(frozen=True)
class KVKernels:
    """The kernels the cache runs: append keys/values, then paged causal attention."""

    transpose_append: Callable
    attention_prefill: Callable


def _unwrap(value: Any, index: int) -> Callable | None:
    """A kernel argument: None / empty, a callable, [callable] or [backend name, callable]."""
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        return None
    fn = value
    if isinstance(value, list | tuple):
        if len(value) == 2 and isinstance(value[0], str):
            if value[0] not in _BACKENDS:
                raise ArgumentError(
                    f"{_CREATE}: argument {index} ({SLOTS[index]}) names backend {value[0]!r}; "
                    f"minitvm runs compiled TIR kernels only ({' or '.join(_BACKENDS)})"
                )
            fn = value[1]
        elif len(value) == 1:
            fn = value[0]
    if not callable(fn):
        raise ArgumentError(
            f"{_CREATE}: argument {index} ({SLOTS[index]}) must be a built kernel (a callable, "
            f"or a list [backend, kernel]), None or an empty list; got {type(fn).__name__}"
        )
    return fn


def parse_kernels(args: tuple, rope_mode_inline: bool, rotary_dim: int, head_dim: int):
    """KVKernels from arguments 13..27, or None when every slot is empty (numpy attention)."""
    fns = {i: _unwrap(args[i], i) for i in SLOTS}
    if all(f is None for f in fns.values()):
        return None
    for i in _MLA:
        if fns[i] is not None:
            raise ArgumentError(
                f"{_CREATE}: argument {i} ({SLOTS[i]}) is an MLA kernel; minitvm's paged KV "
                "cache supports MHA layers only, so pass None or []"
            )
    missing = [f"{i} ({SLOTS[i]})" for i in (13, 16) if fns[i] is None]
    if missing:
        given = min(i for i, f in fns.items() if f is not None)
        raise ArgumentError(
            f"{_CREATE}: argument {given} is a kernel ({SLOTS[given]}), but argument "
            f"{' and '.join(missing)} is empty: the cache runs the transpose-append (13) and "
            "paged prefill (16) kernels; pass them too, or no kernels at all (numpy attention)"
        )
    if rope_mode_inline and rotary_dim != head_dim:
        raise ArgumentError(
            f"{_CREATE}: inline RoPE with rotary_dim {rotary_dim} < head_dim {head_dim} cannot "
            "run in the attention kernel (it rotates whole heads); create the cache without "
            "kernels"
        )
    return KVKernels(fns[13], fns[16])


def run_attention(cache: Any, local: int, batch: Any, q: np.ndarray, k: np.ndarray,
                  v: np.ndarray, out: np.ndarray, sm_scale: float, inline_rope: bool) -> None:  # fmt: skip
    """Append this forward's k/v (cache dtype, (total, kv_heads, d)) to layer `local`'s pages,
    then write the causal attention of q (cache dtype) into `out`, all through the kernels."""
    c = cache.config
    kernels: KVKernels = cache.kernels
    pages = NDArray(cache._pages[local])  # a view: the kernels write the cache in place
    slots = (batch.write_pages * c.page_size + batch.write_slots).astype(np.int32)
    kernels.transpose_append(pages, NDArray(k), NDArray(v), NDArray(slots))
    tables = [cache._seqs[i].pages for i in batch.seq_ids]
    lengths = [start + n for start, n in zip(batch.starts, batch.append_lengths)]
    q_indptr = np.concatenate([[0], np.cumsum(batch.append_lengths)]).astype(np.int32)
    page_indptr = np.concatenate([[0], np.cumsum([len(t) for t in tables])]).astype(np.int32)
    page_values = np.asarray([p for t in tables for p in t], np.int32)
    last_page_len = np.asarray([(n - 1) % c.page_size + 1 for n in lengths], np.int32)
    k_rope_pos_offset = np.zeros(len(tables), np.int32)  # keys sit at positions 0..len-1
    lse = np.zeros((len(q), c.num_qo_heads), np.float32)
    arrays = [q, q_indptr, None, page_indptr, page_values, last_page_len, k_rope_pos_offset]
    tensors = [pages if a is None else NDArray(np.ascontiguousarray(a)) for a in arrays]
    tensors += [NDArray(batch.positions), NDArray(out), NDArray(lse)]
    rotary = 1 if inline_rope else 0
    kernels.attention_prefill(
        *tensors, 1, rotary, float(c.rope_scale), float(c.rope_theta), float(sm_scale)
    )


__all__ = ["SLOTS", "KVKernels", "parse_kernels", "run_attention"]
