"""TVM's paged attention KV cache for the relax VM: the state object and its builtins under TVM's
names (`vm.builtin.kv_state_*`, `vm.builtin.attention_kv_cache_*`,
`vm.builtin.paged_attention_kv_cache_create`), registered as global functions at import.

    kv = vm["create_paged_kv_cache"](max_batch, max_total_len, chunk, page_size, 0)
    add = tvm.get_global_func("vm.builtin.kv_state_add_sequence")
    add(kv, 0); add(kv, 1)
    begin(kv, (0, 1), (5, 3))          # vm.builtin.kv_state_begin_forward: 5 and 3 new tokens
    logits = vm["batch_prefill"](embeds, kv, *weights)
    end(kv)                            # vm.builtin.kv_state_end_forward

The cache keeps, per layer, one host array of fixed-size pages; each sequence owns a page table
(the ids of its pages, in order), so a token at position p lives in page `table[p // page_size]`,
slot `p % page_size`. `begin_forward` checks the whole batch (sequences known, lengths, chunk
size, free pages) before it changes anything, then reserves the slots of the new tokens; each
layer's attention call writes that layer's keys/values there and attends over the cached ones.

Attention is computed with numpy (float32 accumulation, rounded to the cache dtype where
TVM's kernels round) when the create call passes no kernels (None or empty lists in arguments
13..27, as nn.llm.TIRPagedKVCache does); when it passes TVM's kernels (e.g. those of
nn.llm.kv_cache, built for the CPU), each layer runs the transpose-append and paged prefill
kernels on its pages (vm_builtin_kv_kernels.py). Not provided (clear errors): MLA, sliding
windows, token trees, KV transfer, rope scaling other than a constant position scale (no
`rope_ext_factors`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..error import ArgumentError, DTypeError, RuntimeError_, ShapeError
from . import vm_builtin_kv_kernels as _kernels
from .ndarray import NDArray, _dtype_str
from .registry import register_func
from .vm_builtin import VMObject, _host_array, _int, _shape

_CREATE = "vm.builtin.paged_attention_kv_cache_create"
_ATTN = "vm.builtin.attention_kv_cache_attention_with_fused_qkv"

# TVM's RopeMode and AttnKind values (nn.llm.kv_cache.RopeMode / AttnKind)
ROPE_NONE, ROPE_NORMAL, ROPE_INLINE = 0, 1, 2
_ROPE_NAMES = {ROPE_NONE: "NONE", ROPE_NORMAL: "NORMAL", ROPE_INLINE: "INLINE"}
_ATTN_MHA = 0


@dataclass
class _Sequence:
    """One sequence: its page table and its number of cached tokens."""

    pages: list[int] = field(default_factory=list)
    length: int = 0


@dataclass(frozen=True)
class _Batch:
    """The forward pass announced by begin_forward: which sequences, how many new tokens each,
    and where the new tokens' keys/values go (page id and slot per token, in batch order)."""

    seq_ids: tuple[int, ...]
    append_lengths: tuple[int, ...]
    starts: tuple[int, ...]  # each sequence's length before this forward
    write_pages: np.ndarray
    write_slots: np.ndarray
    positions: np.ndarray  # in-sequence position of every new token (int32)

    @property
    def total(self) -> int:
        return int(sum(self.append_lengths))


@dataclass(frozen=True)
class PagedConfig:
    """What the create function fixes: sizes, heads, RoPE and dtype."""

    page_size: int
    num_pages: int
    reserved_num_seqs: int
    prefill_chunk_size: int
    num_layers: int
    layer_begin: int
    num_qo_heads: int
    num_kv_heads: int
    head_dim: int
    rope_mode: int
    rope_scale: float
    rope_theta: float
    rotary_dim: int
    dtype: str


class PagedAttentionKVCache(VMObject):
    """TVM's `relax.vm.PagedAttentionKVCache` on the host, made by
    `vm.builtin.paged_attention_kv_cache_create`. Pages are stored as one array
    `(num_layers, num_pages, 2, num_kv_heads, page_size, head_dim)` (2: keys, values): each
    layer's slice has the layout of TVM's page kernels, so compiled kernels can run on it."""

    __slots__ = ("_batch", "_free", "_pages", "_seqs", "config", "kernels")

    def __init__(self, config: PagedConfig, kernels: Any = None) -> None:
        c = config
        self.config = c
        self.kernels = kernels  # vm_builtin_kv_kernels.KVKernels, or None: numpy attention
        shape = (c.num_layers, c.num_pages, 2, c.num_kv_heads, c.page_size, c.head_dim)
        self._pages = np.zeros(shape, c.dtype)  # zeros: an unused slot never holds garbage
        self._seqs: dict[int, _Sequence] = {}
        self._batch: _Batch | None = None
        self._free: list[int] = []
        self.clear()

    def __repr__(self) -> str:
        c = self.config
        return (
            f"PagedAttentionKVCache({len(self._seqs)} sequences, {self.total_sequence_length()} "
            f"tokens, {len(self._free)} of {c.num_pages} pages of {c.page_size} free, "
            f"{c.num_layers} layers, {c.num_qo_heads}/{c.num_kv_heads} heads of {c.head_dim}, "
            f"{c.dtype})"
        )

    # ---------------------------------------------------------------- sequence management
    def clear(self) -> None:
        """Forget every sequence; every page is free again."""
        self._seqs.clear()
        self._free = list(range(self.config.num_pages - 1, -1, -1))  # pop() takes low ids first
        self._batch = None

    def add_sequence(self, seq_id: int) -> None:
        if seq_id in self._seqs:
            raise ArgumentError(
                f"vm.builtin.kv_state_add_sequence: sequence {seq_id} is already in the KV "
                "cache; pick a new id or remove it first (kv_state_remove_sequence)"
            )
        self._seqs[seq_id] = _Sequence()

    def remove_sequence(self, seq_id: int) -> None:
        seq = self._seq(seq_id, "vm.builtin.kv_state_remove_sequence")
        self._free.extend(reversed(seq.pages))
        del self._seqs[seq_id]
        self._drop_batch_with(seq_id)

    def fork_sequence(self, parent_id: int, child_id: int, fork_pos: int = -1) -> None:
        """The child starts as a copy of the parent's first `fork_pos` tokens (all when -1).
        Pages are copied, not shared: simple and safe, at the cost of memory."""
        what = "vm.builtin.kv_state_fork_sequence"
        parent = self._seq(parent_id, what)
        if child_id in self._seqs:
            raise ArgumentError(
                f"{what}: the child sequence {child_id} is already in the KV cache; fork into "
                "a new id"
            )
        length = parent.length if fork_pos == -1 else fork_pos
        if not 0 <= length <= parent.length:
            raise ArgumentError(
                f"{what}: fork_pos {fork_pos} is outside the parent sequence {parent_id} of "
                f"length {parent.length}; pass -1 (all of it) or 0..{parent.length}"
            )
        n_pages = self._pages_for(length)
        self._check_free(n_pages, what, f"fork {length} tokens of sequence {parent_id}")
        pages = [self._free.pop() for _ in range(n_pages)]
        self._pages[:, pages] = self._pages[:, parent.pages[:n_pages]]
        self._seqs[child_id] = _Sequence(pages, length)

    def popn(self, seq_id: int, n: int) -> None:
        """Forget the last `n` tokens of a sequence, freeing the pages they alone used."""
        what = "vm.builtin.kv_state_popn"
        seq = self._seq(seq_id, what)
        if not 0 <= n <= seq.length:
            raise ArgumentError(
                f"{what}: cannot pop {n} tokens from sequence {seq_id}, which holds "
                f"{seq.length}; pass 0..{seq.length}"
            )
        seq.length -= n
        keep = self._pages_for(seq.length)
        self._free.extend(reversed(seq.pages[keep:]))
        del seq.pages[keep:]
        if n:
            self._drop_batch_with(seq_id)

    # ---------------------------------------------------------------- forward
    def begin_forward(self, seq_ids: Any, append_lengths: Any, tree: Any = None) -> None:
        """Announce the next forward: `append_lengths[i]` new tokens of sequence `seq_ids[i]`,
        in that order along the token axis of the attention inputs."""
        what = "vm.builtin.kv_state_begin_forward"
        if tree is not None:
            raise ArgumentError(
                f"{what}: token trees (token_tree_parent_ptr) are not supported by minitvm's "
                "paged KV cache; pass only seq_ids and append_lengths (a chain per sequence)"
            )
        ids = _int_list(seq_ids, f"{what}: seq_ids")
        lengths = _int_list(append_lengths, f"{what}: append_lengths")
        self._check_batch(ids, lengths, what)
        need = {i: self._pages_for(self._seqs[i].length + n) for i, n in zip(ids, lengths)}
        extra = sum(need[i] - len(self._seqs[i].pages) for i in ids)
        self._check_free(extra, what, f"append {sum(lengths)} tokens")
        pages, slots, positions, starts = [], [], [], []
        ps = self.config.page_size
        for i, n in zip(ids, lengths):
            seq = self._seqs[i]
            while len(seq.pages) < need[i]:
                seq.pages.append(self._free.pop())
            pos = np.arange(seq.length, seq.length + n)
            table = np.asarray(seq.pages, np.int64)
            pages.append(table[pos // ps])
            slots.append(pos % ps)
            positions.append(pos)
            starts.append(seq.length)
            seq.length += n
        self._batch = _Batch(
            tuple(ids),
            tuple(lengths),
            tuple(starts),
            np.concatenate(pages),
            np.concatenate(slots),
            np.concatenate(positions).astype(np.int32),
        )

    def end_forward(self) -> None:
        """Close the forward opened by begin_forward (its tokens stay cached)."""
        self._batch = None

    def _check_batch(self, ids: list[int], lengths: list[int], what: str) -> None:
        c = self.config
        if len(ids) != len(lengths):
            raise ShapeError(
                f"{what}: {len(ids)} seq_ids but {len(lengths)} append_lengths; pass one "
                "length per sequence"
            )
        if not ids:
            raise ArgumentError(f"{what}: the batch is empty; pass at least one sequence")
        if len(ids) > c.reserved_num_seqs:
            raise ArgumentError(
                f"{what}: a batch of {len(ids)} sequences exceeds the cache's max batch size "
                f"{c.reserved_num_seqs}; split the batch or create a larger cache"
            )
        if len(set(ids)) != len(ids):
            raise ArgumentError(f"{what}: seq_ids {ids} repeat a sequence; list each once")
        for i, n in zip(ids, lengths):
            self._seq(i, what)
            if n <= 0:
                raise ArgumentError(
                    f"{what}: sequence {i} has append length {n}; each length must be positive"
                )
        if sum(lengths) > c.prefill_chunk_size:
            raise ArgumentError(
                f"{what}: {sum(lengths)} tokens in one forward exceed the prefill chunk size "
                f"{c.prefill_chunk_size}; split the prompt into chunks of at most that many"
            )

    def current_batch(self, what: str) -> _Batch:
        if self._batch is None:
            raise RuntimeError_(
                f"{what}: no forward is in progress; call vm.builtin.kv_state_begin_forward("
                "kv, seq_ids, append_lengths) before the model's forward (and not after a "
                "sequence of the batch was removed or popped)"
            )
        return self._batch

    # ---------------------------------------------------------------- queries
    def num_available_pages(self) -> int:
        return len(self._free)

    def total_sequence_length(self) -> int:
        return sum(s.length for s in self._seqs.values())

    def empty(self) -> bool:
        return not self._seqs and len(self._free) == self.config.num_pages

    def sequence_length(self, seq_id: int) -> int:
        return self._seq(seq_id, "PagedAttentionKVCache.sequence_length").length

    def layer(self, layer_id: int, what: str) -> int:
        """The local index of `layer_id` (TVM numbers layers globally)."""
        c = self.config
        local = layer_id - c.layer_begin
        if not 0 <= local < c.num_layers:
            raise ArgumentError(
                f"{what}: layer_id {layer_id} is outside the cache's layers "
                f"{c.layer_begin}..{c.layer_begin + c.num_layers - 1}"
            )
        return local

    def gather(self, local_layer: int, seq_id: int, start: int, end: int) -> tuple:
        """Keys and values of tokens start..end-1 of a sequence: two (n, kv_heads, head_dim)."""
        seq = self._seqs[seq_id]
        ps = self.config.page_size
        pos = np.arange(start, end)
        table = np.asarray(seq.pages, np.int64)
        kv = self._pages[local_layer, table[pos // ps], :, :, pos % ps]  # (n, 2, heads, dim)
        return np.ascontiguousarray(kv[:, 0]), np.ascontiguousarray(kv[:, 1])  # BLAS-ready

    def write(self, local_layer: int, batch: _Batch, k: np.ndarray, v: np.ndarray) -> None:
        """Store the new tokens' keys and values in the slots begin_forward reserved."""
        self._pages[local_layer, batch.write_pages, 0, :, batch.write_slots] = k
        self._pages[local_layer, batch.write_pages, 1, :, batch.write_slots] = v

    # ---------------------------------------------------------------- helpers
    def _seq(self, seq_id: int, what: str) -> _Sequence:
        seq = self._seqs.get(seq_id)
        if seq is None:
            known = sorted(self._seqs)[:16]
            raise ArgumentError(
                f"{what}: sequence {seq_id} is not in the KV cache (it holds {known}); add it "
                "first with vm.builtin.kv_state_add_sequence"
            )
        return seq

    def _pages_for(self, length: int) -> int:
        return -(-length // self.config.page_size)

    def _check_free(self, n_pages: int, what: str, doing: str) -> None:
        if n_pages > len(self._free):
            c = self.config
            raise RuntimeError_(
                f"{what}: out of KV cache pages: to {doing} the cache needs {n_pages} more "
                f"pages of {c.page_size} tokens but has {len(self._free)} free of "
                f"{c.num_pages}; remove finished sequences or create the cache with a larger "
                "max_total_seq_len"
            )

    def _drop_batch_with(self, seq_id: int) -> None:
        """A forward whose reserved slots were freed must not write into them."""
        if self._batch is not None and seq_id in self._batch.seq_ids:
            self._batch = None


def _int_list(value: Any, what: str) -> list[int]:
    """A sequence of ints (a VM shape, a tuple, a list, an int tensor) as a list of ints."""
    if isinstance(value, NDArray | np.ndarray):
        data = _host_array(value, what)
        if data.ndim == 1 and data.dtype.kind in "iu":
            return [int(x) for x in data]
    elif isinstance(value, list | tuple) and all(
        isinstance(x, int | np.integer) and not isinstance(x, bool) for x in value
    ):
        return [int(x) for x in value]
    raise ArgumentError(f"{what}: expected a sequence of ints (e.g. a tuple), got {value!r}")


def _float(value: Any, what: str) -> float:
    """A float argument: a Python/numpy number or a one-element float or int tensor (the relax
    VM passes float scalars as 0-d constants)."""
    if isinstance(value, NDArray | np.ndarray):
        data = _host_array(value, what)
        if data.size == 1 and data.dtype.kind in "fiu":
            return float(data.reshape(()))
    elif isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        return float(value)
    raise ArgumentError(f"{what}: expected a number, got {value!r}")


def _kv(value: Any, what: str) -> PagedAttentionKVCache:
    if not isinstance(value, PagedAttentionKVCache):
        raise ArgumentError(
            f"{what}: the first argument must be a paged KV cache (made by {_CREATE}), got "
            f"{type(value).__name__}"
        )
    return value


def _seq_id(value: Any, what: str) -> int:
    return _int(value, f"{what}: seq_id")


# ------------------------------------------------------------------------ the builtins
def kv_state_clear(kv: Any) -> None:
    _kv(kv, "vm.builtin.kv_state_clear").clear()


def kv_state_add_sequence(kv: Any, seq_id: Any) -> None:
    what = "vm.builtin.kv_state_add_sequence"
    _kv(kv, what).add_sequence(_seq_id(seq_id, what))


def kv_state_remove_sequence(kv: Any, seq_id: Any) -> None:
    what = "vm.builtin.kv_state_remove_sequence"
    _kv(kv, what).remove_sequence(_seq_id(seq_id, what))


def kv_state_fork_sequence(kv: Any, parent_id: Any, child_id: Any, fork_pos: Any = -1) -> None:
    what = "vm.builtin.kv_state_fork_sequence"
    _kv(kv, what).fork_sequence(
        _int(parent_id, f"{what}: parent_seq_id"),
        _int(child_id, f"{what}: child_seq_id"),
        _int(fork_pos, f"{what}: fork_pos"),
    )


def kv_state_popn(kv: Any, seq_id: Any, n: Any) -> None:
    what = "vm.builtin.kv_state_popn"
    _kv(kv, what).popn(_seq_id(seq_id, what), _int(n, f"{what}: n"))


def kv_state_begin_forward(kv: Any, seq_ids: Any, append_lengths: Any, tree: Any = None) -> None:
    _kv(kv, "vm.builtin.kv_state_begin_forward").begin_forward(seq_ids, append_lengths, tree)


def kv_state_end_forward(kv: Any) -> None:
    _kv(kv, "vm.builtin.kv_state_end_forward").end_forward()


def attention_kv_cache_get_num_available_pages(kv: Any) -> int:
    return _kv(kv, "vm.builtin.attention_kv_cache_get_num_available_pages").num_available_pages()


def attention_kv_cache_get_total_sequence_length(kv: Any) -> int:
    what = "vm.builtin.attention_kv_cache_get_total_sequence_length"
    return _kv(kv, what).total_sequence_length()


def attention_kv_cache_empty(kv: Any) -> bool:
    return _kv(kv, "vm.builtin.attention_kv_cache_empty").empty()


def attention_kv_cache_get_query_positions(kv: Any) -> NDArray:
    """The in-sequence position of every token of the current forward, (total,) int32."""
    what = "vm.builtin.attention_kv_cache_get_query_positions"
    return NDArray(_kv(kv, what).current_batch(what).positions.copy())


def attention_kv_cache_enable_sliding_window_for_seq(kv: Any, *_args: Any) -> None:
    what = "vm.builtin.attention_kv_cache_enable_sliding_window_for_seq"
    _kv(kv, what)
    raise ArgumentError(
        f"{what}: minitvm's paged KV cache has no sliding-window attention; every token "
        "attends to its whole sequence"
    )


def attention_kv_cache_commit_accepted_token_tree_nodes(kv: Any, *_args: Any) -> None:
    what = "vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes"
    _kv(kv, what)
    raise ArgumentError(
        f"{what}: minitvm's paged KV cache has no token trees (kv_state_begin_forward refuses "
        "them), so there are no tree nodes to commit"
    )


def attention_kv_cache_debug_get_kv(
    kv: Any, seq_id: Any, start_pos: Any, end_pos: Any, k_data: Any, v_data: Any
) -> None:
    """Copy tokens start_pos..end_pos-1 of a sequence, every layer, into k_data and v_data
    (each `(num_layers, end_pos - start_pos, num_kv_heads, head_dim)`)."""
    what = "vm.builtin.attention_kv_cache_debug_get_kv"
    cache = _kv(kv, what)
    sid = _seq_id(seq_id, what)
    length = cache.sequence_length(sid)
    start, end = _int(start_pos, f"{what}: start_pos"), _int(end_pos, f"{what}: end_pos")
    if not 0 <= start < end <= length:
        raise ArgumentError(
            f"{what}: positions {start}..{end} are not a non-empty range within sequence {sid} "
            f"of length {length}"
        )
    c = cache.config
    want = (c.num_layers, end - start, c.num_kv_heads, c.head_dim)
    outs = [_host_array(a, f"{what}: {n}") for a, n in ((k_data, "k_data"), (v_data, "v_data"))]
    for out, name in zip(outs, ("k_data", "v_data")):
        if out.shape != want or _dtype_str(out.dtype) != c.dtype:
            raise ShapeError(
                f"{what}: {name} is {out.shape} {_dtype_str(out.dtype)}, expected {want} {c.dtype}"
            )
    for layer in range(c.num_layers):
        outs[0][layer], outs[1][layer] = cache.gather(layer, sid, start, end)


# ------------------------------------------------------------------------ attention
def _rope(x: np.ndarray, positions: np.ndarray, c: PagedConfig) -> np.ndarray:
    """x (n, heads, head_dim) float32 rotated as TVM's llama rope with a position map: pair j
    (j < rotary_dim/2) turns by `positions * scale / theta ** (2j / rotary_dim)`, element j
    paired with j + rotary_dim/2; dims past rotary_dim pass through."""
    half = c.rotary_dim // 2
    exponent = np.arange(0, c.rotary_dim, 2, dtype=np.float32) / np.float32(c.rotary_dim)
    pos = positions.astype(np.float32) * np.float32(c.rope_scale)
    angle = (pos[:, None] / np.float32(c.rope_theta) ** exponent)[:, None, :]  # (n, 1, half)
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :half], x[..., half : c.rotary_dim]
    out = x.copy()
    out[..., :half] = x1 * cos - x2 * sin
    out[..., half : c.rotary_dim] = x2 * cos + x1 * sin
    return out


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, sm_scale: float) -> np.ndarray:
    """Causal grouped-query attention of the last n of L positions: q (n, qo_heads, d), k and v
    (L, kv_heads, d), all float32; query head h reads kv head h // (qo_heads / kv_heads)."""
    n, hq, d = q.shape
    length, hkv, _ = k.shape
    g = hq // hkv
    # batched matmuls per kv head (BLAS), queries of a group stacked as rows
    qh = q.reshape(n, hkv, g, d).transpose(1, 2, 0, 3).reshape(hkv, g * n, d)
    scores = (qh @ k.transpose(1, 2, 0)).reshape(hkv, g, n, length) * np.float32(sm_scale)
    # query i sits at position length - n + i and sees keys 0..that position
    hidden = np.arange(length)[None, :] > (length - n + np.arange(n))[:, None]
    if hidden.any():
        scores[..., hidden] = -np.inf
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores, out=scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    out = probs.reshape(hkv, g * n, length) @ v.transpose(1, 0, 2)  # (hkv, g * n, d)
    return out.reshape(hkv, g, n, d).transpose(2, 0, 1, 3).reshape(n, hq, d)


def attention_kv_cache_attention_with_fused_qkv(
    kv: Any, layer_id: Any, sm_scale: Any, qkv_data: Any, o_data: Any
) -> None:
    """Attention of the current forward's tokens on one layer, in destination-passing style:
    qkv_data `(total, qo_heads + 2 * kv_heads, head_dim)` (q, k, v heads concatenated), o_data
    `(total, qo_heads, head_dim)`. Applies RoPE per the cache's rope mode, stores k/v in the
    pages begin_forward reserved, then attends causally within each sequence (numpy)."""
    cache = _kv(kv, _ATTN)
    c = cache.config
    local = cache.layer(_int(layer_id, f"{_ATTN}: layer_id"), _ATTN)
    scale = _float(sm_scale, f"{_ATTN}: sm_scale")
    batch = cache.current_batch(_ATTN)
    qkv = _host_array(qkv_data, f"{_ATTN}: qkv_data")
    out = _host_array(o_data, f"{_ATTN}: o_data")
    hq, hkv, d = c.num_qo_heads, c.num_kv_heads, c.head_dim
    _check_tensor(qkv, (batch.total, hq + 2 * hkv, d), c.dtype, "qkv_data")
    _check_tensor(out, (batch.total, hq, d), c.dtype, "o_data")
    x = qkv.astype(np.float32, copy=False)
    q, k, v = x[:, :hq], x[:, hq : hq + hkv], qkv[:, hq + hkv :]
    if cache.kernels is not None:  # compiled kernels: they rotate inline-RoPE q/k themselves
        if c.rope_mode == ROPE_NORMAL:
            q, k = _rope(q, batch.positions, c), _rope(k, batch.positions, c)
        q, k, v = (np.ascontiguousarray(a, dtype=c.dtype) for a in (q, k, v))
        inline = c.rope_mode == ROPE_INLINE
        _kernels.run_attention(cache, local, batch, q, k, v, out, scale, inline)
        return
    if c.rope_mode != ROPE_NONE:  # TVM rounds the rotated q (and k) to the cache dtype
        q = _rope(q, batch.positions, c).astype(c.dtype).astype(np.float32)
    if c.rope_mode == ROPE_NORMAL:  # keys are stored rotated
        k = _rope(k, batch.positions, c)
    cache.write(local, batch, k, v)  # numpy casts k to the cache dtype on assignment
    row = 0
    for seq_id, n, start in zip(batch.seq_ids, batch.append_lengths, batch.starts):
        keys, values = cache.gather(local, seq_id, 0, start + n)
        keys = keys.astype(np.float32, copy=False)
        if c.rope_mode == ROPE_INLINE:  # keys are stored as given, rotated when read
            keys = _rope(keys, np.arange(start + n), c).astype(c.dtype).astype(np.float32)
        o = _attend(q[row : row + n], keys, values.astype(np.float32, copy=False), scale)
        out[row : row + n] = o  # cast to the cache dtype on assignment
        row += n


def _check_tensor(data: np.ndarray, shape: tuple, dtype: str, name: str) -> None:
    if data.shape != shape:
        raise ShapeError(
            f"{_ATTN}: {name} has shape {data.shape}, expected {shape} (the tokens announced "
            "by kv_state_begin_forward, the cache's heads and head_dim)"
        )
    if _dtype_str(data.dtype) != dtype:
        raise DTypeError(
            f"{_ATTN}: {name} has dtype {_dtype_str(data.dtype)}, but the cache stores {dtype}"
        )


# ------------------------------------------------------------------------ creation
def _positive(value: int, name: str) -> int:
    if value <= 0:
        raise ArgumentError(f"{_CREATE}: {name} must be positive, got {value}")
    return value


def paged_attention_kv_cache_create(*args: Any) -> PagedAttentionKVCache:
    """TVM's 28 arguments (see nn.llm.kv_cache.TIRPagedKVCache): cache_config
    (max_batch_size, max_total_seq_len, prefill_chunk_size, page_size, support_sliding_window),
    layer_indptr, num_qo_heads, num_kv_heads, qk_head_dim, v_head_dim, attn_kinds,
    enable_kv_transfer, rope_mode, rope_scale, rope_theta, rope_ext_factors, init (a 0-d tensor
    of the cache dtype), then the kernels (13..27: all empty, or see vm_builtin_kv_kernels).
    A 29th argument, minitvm's own,
    is the rotary dim (default: head_dim)."""
    if len(args) not in (28, 29):
        raise ArgumentError(
            f"{_CREATE}: expected 28 arguments (TVM's order; 29 with rotary_dim), got {len(args)}"
        )
    config = _shape(args[0], f"{_CREATE}: cache_config")
    if len(config) != 5:
        raise ArgumentError(
            f"{_CREATE}: cache_config must be (max_batch_size, max_total_seq_len, "
            f"prefill_chunk_size, page_size, support_sliding_window), got {config}"
        )
    max_batch, capacity, chunk, page_size, sliding = config
    for value, name in ((max_batch, "max_batch_size"), (capacity, "max_total_seq_len")):
        _positive(value, name)
    _positive(chunk, "prefill_chunk_size")
    _positive(page_size, "page_size")
    indptr = _shape(args[1], f"{_CREATE}: layer_indptr")
    if len(indptr) != 2 or indptr[1] <= indptr[0]:
        raise ArgumentError(
            f"{_CREATE}: layer_indptr must be (first_layer, end_layer) with end > first "
            f"(one pipeline stage), got {indptr}"
        )
    hq, hkv, dqk, dv = (_int(args[i], f"{_CREATE}: argument {i}") for i in (2, 3, 4, 5))
    for value, name in ((hq, "num_qo_heads"), (hkv, "num_kv_heads"), (dqk, "qk_head_dim")):
        _positive(value, name)
    if hq % hkv:
        raise ArgumentError(f"{_CREATE}: num_qo_heads {hq} is not a multiple of num_kv_heads {hkv}")
    if dv != dqk:
        raise ArgumentError(
            f"{_CREATE}: v_head_dim {dv} differs from qk_head_dim {dqk}; only equal head dims "
            "(MHA / GQA) are supported"
        )
    kinds = _shape(args[6], f"{_CREATE}: attn_kinds")
    if any(k != _ATTN_MHA for k in kinds):
        raise ArgumentError(
            f"{_CREATE}: attn_kinds {kinds}: only MHA layers (AttnKind.MHA = 0) are supported; "
            "MLA and sliding-window layers are not"
        )
    transfer = args[7] if isinstance(args[7], bool) else _int(args[7], f"{_CREATE}: argument 7")
    if transfer:
        raise ArgumentError(f"{_CREATE}: KV transfer (disaggregation) is not supported")
    rope_mode = _int(args[8], f"{_CREATE}: rope_mode")
    if rope_mode not in _ROPE_NAMES:
        raise ArgumentError(
            f"{_CREATE}: rope_mode {rope_mode} is unknown; use RopeMode.NONE (0), NORMAL (1) "
            "or INLINE (2)"
        )
    if isinstance(args[11], NDArray | np.ndarray):  # TVM reads any non-tensor as "none"
        raise ArgumentError(
            f"{_CREATE}: rope_ext_factors (longrope scaling) are not supported; pass None"
        )
    init = _host_array(args[12], f"{_CREATE}: init")
    if init.dtype.kind != "f":
        raise DTypeError(f"{_CREATE}: init has dtype {init.dtype}; the cache needs a float dtype")
    rotary_dim = dqk if len(args) == 28 else _int(args[28], f"{_CREATE}: rotary_dim")
    if rope_mode != ROPE_NONE and not (0 < rotary_dim <= dqk and rotary_dim % 2 == 0):
        raise ArgumentError(
            f"{_CREATE}: rotary_dim {rotary_dim} must be even and in 1..head_dim ({dqk})"
        )
    kernels = _kernels.parse_kernels(args, rope_mode == ROPE_INLINE, rotary_dim, dqk)
    num_pages = -(-capacity // page_size) + 1 + (2 * max_batch if sliding else 0)  # as TVM
    cfg = PagedConfig(
        page_size=page_size,
        num_pages=num_pages,
        reserved_num_seqs=max_batch,
        prefill_chunk_size=chunk,
        num_layers=indptr[1] - indptr[0],
        layer_begin=indptr[0],
        num_qo_heads=hq,
        num_kv_heads=hkv,
        head_dim=dqk,
        rope_mode=rope_mode,
        rope_scale=_float(args[9], f"{_CREATE}: rope_scale"),
        rope_theta=_float(args[10], f"{_CREATE}: rope_theta"),
        rotary_dim=rotary_dim,
        dtype=_dtype_str(init.dtype),
    )
    if rope_mode != ROPE_NONE and cfg.rope_theta <= 0:
        raise ArgumentError(f"{_CREATE}: rope_theta must be positive, got {cfg.rope_theta}")
    return PagedAttentionKVCache(cfg, kernels)


BUILTINS: dict[str, Callable] = {
    _CREATE: paged_attention_kv_cache_create,
    _ATTN: attention_kv_cache_attention_with_fused_qkv,
    "vm.builtin.kv_state_clear": kv_state_clear,
    "vm.builtin.kv_state_add_sequence": kv_state_add_sequence,
    "vm.builtin.kv_state_remove_sequence": kv_state_remove_sequence,
    "vm.builtin.kv_state_fork_sequence": kv_state_fork_sequence,
    "vm.builtin.kv_state_popn": kv_state_popn,
    "vm.builtin.kv_state_begin_forward": kv_state_begin_forward,
    "vm.builtin.kv_state_end_forward": kv_state_end_forward,
    "vm.builtin.attention_kv_cache_get_num_available_pages": (
        attention_kv_cache_get_num_available_pages
    ),
    "vm.builtin.attention_kv_cache_get_total_sequence_length": (
        attention_kv_cache_get_total_sequence_length
    ),
    "vm.builtin.attention_kv_cache_empty": attention_kv_cache_empty,
    "vm.builtin.attention_kv_cache_get_query_positions": attention_kv_cache_get_query_positions,
    "vm.builtin.attention_kv_cache_enable_sliding_window_for_seq": (
        attention_kv_cache_enable_sliding_window_for_seq
    ),
    "vm.builtin.attention_kv_cache_debug_get_kv": attention_kv_cache_debug_get_kv,
    "vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes": (
        attention_kv_cache_commit_accepted_token_tree_nodes
    ),
}

for _name, _fn in BUILTINS.items():
    register_func(_name, _fn, override=True)
