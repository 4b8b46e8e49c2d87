"""The paged KV cache's CPU kernels (nn.llm.kv_cache, TVM's factory names and argument orders):
each is built as TVM's tests build it (dlight's Fallback rule on the CPU target, then
`tvm.tirx.build`), run on small random data and compared with a numpy reference of paged
attention written here: softmax(q k^T * sm_scale) v per sequence, causal, grouped-query, with
Llama RoPE, sliding windows with attention sinks, and token trees."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import ArgumentError, TargetError
from minitvm.relax.frontend.nn.llm import kv_cache as K
from minitvm.s_tir import dlight as dl

HKV, HQ, D, PS = 2, 4, 8, 4
SCALE = D**-0.5
RNG = np.random.default_rng(11)


def _build(func):
    target = tvm.target.Target("llvm")
    mod = tvm.IRModule({"main": func})
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    lib = tvm.tirx.build(mod["main"], target=target)
    return lib[lib.entry_name]


def _call(fn, *args):
    tensors = [tvm.runtime.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    fn(*tensors)
    return [t.numpy() if hasattr(t, "numpy") else t for t in tensors]


def _rope(x, pos, dtype, scale=1.0, theta=1e4):
    """Llama RoPE of x (n, heads, d) at positions pos, rounded to dtype (as the cache does)."""
    half = x.shape[-1] // 2
    inv = scale / theta ** (np.arange(0, 2 * half, 2, dtype="float32") / (2 * half))
    angle = np.asarray(pos, "float32")[:, None] * inv[None]
    emb = np.concatenate([angle, angle], -1)[:, None, :]
    turned = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return (np.cos(emb) * x + np.sin(emb) * turned).astype(dtype).astype("float32")


def _attend(q, k, v, visible):
    """Grouped-query attention with a (n, L) visibility mask; also the base-2 log-sum-exp."""
    g = q.shape[1] // k.shape[1]
    out = np.zeros(q.shape, "float32")
    lse = np.zeros(q.shape[:2], "float32")
    for h in range(q.shape[1]):
        s = (q[:, h] @ k[:, h // g].T) * SCALE
        s = np.where(visible, s, -np.inf)
        m = s.max(-1, keepdims=True)
        e = np.exp(s - m)
        out[:, h] = e / e.sum(-1, keepdims=True) @ v[:, h // g]
        lse[:, h] = (np.log(e.sum(-1)) + m[:, 0]) / math.log(2)
    return out, lse


def _causal(n, length):
    return np.arange(length)[None] <= (length - n + np.arange(n))[:, None]


class _Paged:
    """Two sequences (lengths 7 and 5, the last 3 and 5 tokens new) in shuffled pages."""

    def __init__(self, dtype="float32"):
        self.dtype = dtype
        self.lens, self.news, tables = [7, 5], [3, 5], [[3, 1], [6, 0]]
        self.pages = np.zeros((8, 2, HKV, PS, D), dtype)
        self.k = [RNG.standard_normal((n, HKV, D)).astype(dtype) for n in self.lens]
        self.v = [RNG.standard_normal((n, HKV, D)).astype(dtype) for n in self.lens]
        for table, k, v in zip(tables, self.k, self.v):
            for p in range(len(k)):
                self.pages[table[p // PS], 0, :, p % PS] = k[p]
                self.pages[table[p // PS], 1, :, p % PS] = v[p]
        self.q = [RNG.standard_normal((n, HQ, D)).astype(dtype) for n in self.news]
        self.q_indptr = np.array([0, 3, 8], "int32")
        self.page_indptr = np.array([0, 2, 4], "int32")
        self.page_values = np.array([p for t in tables for p in t], "int32")
        self.last = np.array([(n - 1) % PS + 1 for n in self.lens], "int32")
        pos = [np.arange(n - m, n) for n, m in zip(self.lens, self.news)]
        self.q_pos = np.concatenate(pos).astype("int32")


@pytest.mark.parametrize("rotary", [0, 1])
@pytest.mark.parametrize("causal", [1, 0])
def test_paged_prefill_matches_numpy(causal, rotary):
    c = _Paged()
    fn = _build(K._attention_prefill_cpu(HKV, HQ, D, "float32", False, {}, PS))
    q = np.concatenate(c.q)
    out, lse = np.zeros_like(q), np.zeros((len(q), HQ), "float32")
    args = [q, c.q_indptr, c.pages, c.page_indptr, c.page_values, c.last, np.zeros(2, "int32")]
    res = _call(fn, *args, c.q_pos, out, lse, causal, rotary, 1.0, 1e4, SCALE)
    for i in range(2):
        rows = slice(c.q_indptr[i], c.q_indptr[i + 1])
        q_i, k_i = c.q[i], c.k[i]
        if rotary:
            q_i, k_i = _rope(q_i, c.q_pos[rows], "float32"), _rope(k_i, range(c.lens[i]), "float32")
        mask = _causal(c.news[i], c.lens[i]) if causal else np.ones((c.news[i], c.lens[i]), bool)
        want, want_lse = _attend(q_i, k_i, c.v[i], mask)
        np.testing.assert_allclose(res[8][rows], want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(res[9][rows], want_lse, rtol=1e-5, atol=1e-5)


def test_paged_decode_float16_matches_numpy():
    c = _Paged("float16")
    fn = _build(K._attention_decode_cpu(HKV, HQ, D, "float16", False, {}, PS))
    q = np.stack([c.q[0][-1], c.q[1][-1]])
    q_pos = np.array([6, 4], "int32")
    out, lse = np.zeros_like(q), np.zeros((2, HQ), "float32")
    args = [q, c.pages, c.page_indptr, c.page_values, c.last, np.zeros(2, "int32"), q_pos]
    res = _call(fn, *args, out, lse, 1, 1.0, 1e4, SCALE)
    for i in range(2):
        q_i = _rope(q[i : i + 1].astype("float32"), q_pos[i : i + 1], "float16")
        k_i = _rope(c.k[i].astype("float32"), range(c.lens[i]), "float16")
        want, _ = _attend(q_i, k_i, c.v[i].astype("float32"), np.ones((1, c.lens[i]), bool))
        np.testing.assert_allclose(res[7][i].astype("float32"), want[0], rtol=2e-3, atol=2e-3)


def test_paged_prefill_sliding_window_reads_sink_then_window():
    """length_info (3, b): [last-page length, window start, sink size]; the kept positions of
    sequence 0 (length 7) with sink 2 and window start 4 are 0, 1, 4, 5, 6."""
    c = _Paged()
    fn = _build(K._attention_prefill_cpu(HKV, HQ, D, "float32", True, {}, PS))
    info = np.array([c.last, [4, 0], [2, 0]], "int32")
    q = np.concatenate(c.q)
    out, lse = np.zeros_like(q), np.zeros((len(q), HQ), "float32")
    args = [q, c.q_indptr, c.pages, c.page_indptr, c.page_values, info, np.zeros(2, "int32")]
    res = _call(fn, *args, c.q_pos, out, lse, 0, 0, 1.0, 1e4, SCALE)
    kept = [0, 1, 4, 5, 6]
    want, _ = _attend(c.q[0], c.k[0][kept], c.v[0][kept], np.ones((3, 5), bool))
    np.testing.assert_allclose(res[8][:3], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rotary", [0, 1])
def test_ragged_prefill_matches_numpy(rotary):
    c = _Paged()
    fn = _build(K._attention_prefill_ragged_cpu(HKV, HQ, D, D, "float32", {}))
    k = np.concatenate([c.k[0][-3:], c.k[1]])
    v = np.concatenate([c.v[0][-3:], c.v[1]])
    kv_indptr, k_offset = np.array([0, 3, 8], "int32"), np.array([4, 0], "int32")
    q = np.concatenate(c.q)
    out, lse = np.zeros_like(q), np.zeros((len(q), HQ), "float32")
    args = [q, c.q_indptr, k, v, kv_indptr, c.q_pos, k_offset, out, lse, 1, rotary]
    res = _call(fn, *args, 1.0, 1e4, SCALE)
    for i, (a, b) in enumerate([(0, 3), (3, 8)]):
        rows = slice(c.q_indptr[i], c.q_indptr[i + 1])
        q_i, k_i = q[rows], k[a:b]
        if rotary:
            q_i = _rope(q_i, c.q_pos[rows], "float32")
            k_i = _rope(k_i, k_offset[i] + np.arange(b - a), "float32")
        want, _ = _attend(q_i, k_i, v[a:b], _causal(b - a, b - a))
        np.testing.assert_allclose(res[7][rows], want, rtol=1e-5, atol=1e-5)


def test_merge_state_combines_two_partial_attentions():
    """Attention over keys A then B, merged, equals attention over A and B at once."""
    q = RNG.standard_normal((3, HQ, D)).astype("float32")
    k = RNG.standard_normal((9, HKV, D)).astype("float32")
    v = RNG.standard_normal((9, HKV, D)).astype("float32")
    o1, s1 = _attend(q, k[:4], v[:4], np.ones((3, 4), bool))
    o2, s2 = _attend(q, k[4:], v[4:], np.ones((3, 5), bool))
    res = _call(_build(K._merge_state_inplace_cpu("float32")), o1, s1, o2, s2)
    want, want_lse = _attend(q, k, v, np.ones((3, 9), bool))
    np.testing.assert_allclose(res[0], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res[1], want_lse, rtol=1e-5, atol=1e-5)


def test_page_kernels_append_read_copy_and_compact():
    pages = np.zeros((5, 2, HKV, PS, D), "float32")
    k = RNG.standard_normal((6, HKV, D)).astype("float32")
    v = RNG.standard_normal((6, HKV, D)).astype("float32")
    slots = np.array([0, 5, -1, 9, 19, 2], "int32")  # -1: not written
    pages = _call(_build(K._kv_cache_transpose_append(HKV, D, "float32", PS)), pages, k, v, slots)[
        0
    ]
    want = np.zeros_like(pages)
    for i, s in enumerate(slots):
        if s >= 0:
            want[s // PS, :, :, s % PS] = np.stack([k[i], v[i]])
    np.testing.assert_array_equal(pages, want)
    got = np.zeros((3, 4, HKV, D), "float32"), np.zeros((3, 4, HKV, D), "float32")
    get = _build(K._kv_cache_debug_get_kv(3, HKV, D, "float32"))
    res = _call(get, pages, np.array([0, 5, 9, 19], "int32"), *got, 1)
    np.testing.assert_array_equal(res[2][1], k[[0, 1, 3, 4]])
    np.testing.assert_array_equal(res[3][1], v[[0, 1, 3, 4]])
    copied = _call(_build(K._copy_single_page_cpu(HKV, PS, D, "float32")), pages, 2, 3, 2)[0]
    want = pages.copy()
    want[3, :, :, :2] = pages[2, :, :, :2]
    np.testing.assert_array_equal(copied, want)
    moves = np.array([[5, 9, 19], [1, 2, 17]], "int32")
    compact = _build(K._compact_kv_copy_cpu(HKV, D, "float32", PS))
    res = _call(compact, pages, np.array([0, 2, 3], "int32"), moves, 2)[0]
    want = pages.copy()
    for src, dst in moves.T:
        want[dst // PS, :, :, dst % PS] = want[src // PS, :, :, src % PS]
    np.testing.assert_array_equal(res, want)


def test_fused_rope_splits_and_rotates():
    qkv = RNG.standard_normal((5, HQ + 2 * HKV, D)).astype("float32")
    pos = np.array([0, 3, 4, 9, 2], "int32")
    fn = _build(K.llama_rope_with_position_map(1e4, 1.0, D, HQ, HKV, "float32", {}))
    outs = [np.zeros((5, n, D), "float32") for n in (HQ, HKV, HKV)]
    q, k, v = _call(fn, qkv, pos, *outs, 1)[2:5]
    np.testing.assert_allclose(q, _rope(qkv[:, :HQ], pos, "float32"), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(k, _rope(qkv[:, HQ : HQ + HKV], pos, "float32"), atol=1e-6)
    np.testing.assert_array_equal(v, qkv[:, HQ + HKV :])
    q0 = _call(fn, qkv, pos, *[np.zeros_like(o) for o in outs], 0)[2]
    np.testing.assert_array_equal(q0, qkv[:, :HQ])  # apply_rope = 0: a plain split


@pytest.mark.parametrize("mode", ["padded", "causal_padded_left"])
def test_sequence_prefill_with_mask_matches_numpy(mode):
    fn = _build(K._attention_sequence_prefill_with_mask(HKV, HQ, D, "float32", "llvm", SCALE,
                                                         mask_mode=mode))  # fmt: skip
    q = RNG.standard_normal((3, 6, HQ, D)).astype("float32")
    k = RNG.standard_normal((3, 6, HKV, D)).astype("float32")
    v = RNG.standard_normal((3, 6, HKV, D)).astype("float32")
    valid = np.array([0, 6, 4], "int32")
    res = _call(fn, q, k, v, valid, np.zeros_like(q), np.zeros((3, 6, HQ), "float32"))
    for b, n in enumerate(valid[1:], start=1):
        rows = slice(0, n) if mode == "padded" else slice(6 - n, 6)
        mask = np.ones((n, n), bool) if mode == "padded" else _causal(n, n)
        want, _ = _attend(q[b, rows], k[b, rows], v[b, rows], mask)
        np.testing.assert_allclose(res[4][b, rows], want, rtol=1e-5, atol=1e-5)


def _tree():
    """Five tokens: 0 is the root, 1 and 2 its children, 3 and 4 children of 1."""
    parent = [-1, 0, 0, 1, 1]
    order, clock = np.zeros((5, 2), "int32"), [0]

    def dfs(n):
        order[n, 0] = clock[0]
        clock[0] += 1
        for c in (c for c, p in enumerate(parent) if p == n):
            dfs(c)
        order[n, 1] = clock[0]

    dfs(0)

    def sees(i, j):
        while i != -1 and i != j:
            i = parent[i]
        return i == j

    return order, np.array([[sees(i, j) for j in range(5)] for i in range(5)])


def test_tree_attention_ragged_follows_ancestors():
    order, visible = _tree()
    q = RNG.standard_normal((5, HQ, D)).astype("float32")
    k = RNG.standard_normal((5, HKV, D)).astype("float32")
    v = RNG.standard_normal((5, HKV, D)).astype("float32")
    indptr, pos = np.array([0, 5], "int32"), np.array([2, 3, 3, 4, 4], "int32")
    fn = _build(K.tree_attn_cpu(HKV, HQ, D, "float32", {}))
    out, lse = np.zeros_like(q), np.zeros((5, HQ), "float32")
    res = _call(fn, q, indptr, k, v, indptr, pos, indptr, order, out, lse, 0, 1.0, 1e4, SCALE)
    np.testing.assert_allclose(res[8], _attend(q, k, v, visible)[0], rtol=1e-5, atol=1e-5)


def test_tree_attention_paged_sees_prefix_and_ancestors():
    """A sequence of 3 committed tokens then a 5-token tree, all in pages [2, 0]."""
    order, tree_visible = _tree()
    k = RNG.standard_normal((8, HKV, D)).astype("float32")
    v = RNG.standard_normal((8, HKV, D)).astype("float32")
    pages = np.zeros((3, 2, HKV, PS, D), "float32")
    for p, page in enumerate([2, 2, 2, 2, 0, 0, 0, 0]):
        pages[page, :, :, p % PS] = np.stack([k[p], v[p]])
    q = RNG.standard_normal((5, HQ, D)).astype("float32")
    fn = _build(K.tree_attn_with_paged_kv_cache_cpu(HKV, HQ, D, "float32", {}, PS))
    out, lse = np.zeros_like(q), np.zeros((5, HQ), "float32")
    idx = np.array([0, 5], "int32")
    args = [q, idx, pages, np.array([0, 2], "int32"), np.array([2, 0], "int32")]
    args += [np.array([4], "int32"), np.zeros(1, "int32"), np.arange(3, 8, dtype="int32")]
    res = _call(fn, *args, out, lse, 0, 1.0, 1e4, SCALE, idx, order)
    visible = np.concatenate([np.ones((5, 3), bool), tree_visible], axis=1)
    np.testing.assert_allclose(res[8], _attend(q, k, v, visible)[0], rtol=1e-5, atol=1e-5)


def test_kernel_factories_refuse_what_they_cannot_build():
    with pytest.raises(ArgumentError, match="rope_scaling type 'longrope' is not supported"):
        K._attention_prefill_cpu(HKV, HQ, D, "float32", False, {"rope_type": "longrope"})
    with pytest.raises(ArgumentError, match="mask_mode 'causal' is not one of"):
        K._attention_sequence_prefill_with_mask(HKV, HQ, D, "float32", mask_mode="causal")
    with pytest.raises(TargetError, match="target 'cuda'"):
        K._attention_sequence_prefill_with_mask(HKV, HQ, D, "float16", tvm.target.Target("cuda"))
