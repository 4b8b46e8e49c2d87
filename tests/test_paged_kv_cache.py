"""TVM's paged KV cache (runtime/vm_builtin_kv.py, nn.llm.PagedKVCache) against numpy oracles:
full causal attention recomputed from every token seen, torch's scaled_dot_product_attention,
and a tiny llama run through relax.build + the VM checked against a cache-free numpy forward
and against the functional-cache llama of examples/llama_generate.py."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, DTypeError, RuntimeError_, ShapeError, TargetError
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn.llm import (
    FlashInferPagedKVCache,
    PagedKVCache,
    RopeMode,
    TIRPagedKVCache,
)

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
F = {
    name: tvm.get_global_func(f"vm.builtin.{name}")
    for name in (
        "paged_attention_kv_cache_create",
        "kv_state_clear",
        "kv_state_add_sequence",
        "kv_state_remove_sequence",
        "kv_state_fork_sequence",
        "kv_state_popn",
        "kv_state_begin_forward",
        "kv_state_end_forward",
        "attention_kv_cache_attention_with_fused_qkv",
        "attention_kv_cache_get_num_available_pages",
        "attention_kv_cache_get_total_sequence_length",
        "attention_kv_cache_get_query_positions",
        "attention_kv_cache_debug_get_kv",
        "attention_kv_cache_empty",
        "attention_kv_cache_enable_sliding_window_for_seq",
    )
}
LAYERS, NQ, NKV, HEAD_DIM, THETA = 2, 8, 2, 16, 10000.0


def create(
    rope_mode=RopeMode.NORMAL,
    dtype="float32",
    page_size=4,
    capacity=96,
    chunk=64,
    max_batch=8,
    kernels=None,
    extra=(),
):
    """A cache through the create builtin with TVM's 28 arguments (kernel slots empty)."""
    args = [
        (max_batch, capacity, chunk, page_size, 0),
        (0, LAYERS),
        NQ,
        NKV,
        HEAD_DIM,
        HEAD_DIM,
        (0,) * LAYERS,
        False,
        int(rope_mode),
        1.0,
        THETA,
        None,
        tvm.nd.array(np.zeros((), dtype)),
        *([None, None] + [()] * 13 if kernels is None else kernels),
        *extra,
    ]
    return F["paged_attention_kv_cache_create"](*args)


# ---------------------------------------------------------------------------- numpy oracle
def rope_np(x: np.ndarray, positions: np.ndarray, theta: float = THETA) -> np.ndarray:
    """HF/TVM llama RoPE of x (n, heads, d): element j < d/2 pairs with j + d/2."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.outer(positions, inv_freq)
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    rot = np.concatenate([-x[..., d // 2 :], x[..., : d // 2]], axis=-1)
    return x * cos + rot * sin


def causal_attention_np(q, k, v, scale):
    """q (n, NQ, d) for the last n of the L positions of k, v (L, NKV, d); head by head."""
    n, length = q.shape[0], k.shape[0]
    out = np.zeros(q.shape, np.float64)
    group = q.shape[1] // k.shape[1]
    mask = np.tril(np.ones((n, length), bool), k=length - n)
    for h in range(q.shape[1]):
        s = q[:, h].astype(np.float64) @ k[:, h // group].astype(np.float64).T * scale
        s = np.where(mask, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[:, h] = (p / p.sum(-1, keepdims=True)) @ v[:, h // group]
    return out


class Oracle:
    """Every token's raw q/k/v per sequence and layer; the expected outputs recomputed from
    scratch (no cache), with RoPE at each token's position."""

    def __init__(self, rope_mode: RopeMode) -> None:
        self.rope = rope_mode != RopeMode.NONE
        self.k: dict = {}
        self.v: dict = {}

    def step(self, kv, batch, rng, dtype="float32", tol=1e-5):
        ids = [s for s, _ in batch]
        lengths = [n for _, n in batch]
        for s in ids:
            if s not in self.k:
                F["kv_state_add_sequence"](kv, s)
                self.k[s] = np.zeros((LAYERS, 0, NKV, HEAD_DIM))
                self.v[s] = np.zeros((LAYERS, 0, NKV, HEAD_DIM))
        F["kv_state_begin_forward"](kv, tuple(ids), tuple(lengths))
        total = sum(lengths)
        starts = [self.k[s].shape[1] for s in ids]
        positions = np.concatenate([np.arange(a, a + n) for a, n in zip(starts, lengths)])
        got_pos = F["attention_kv_cache_get_query_positions"](kv).numpy()
        np.testing.assert_array_equal(got_pos, positions)
        qkv_all = rng.standard_normal((LAYERS, total, NQ + 2 * NKV, HEAD_DIM)).astype(dtype)
        for s, n, start in zip(ids, lengths, starts):
            rows = slice(sum(lengths[: ids.index(s)]), sum(lengths[: ids.index(s)]) + n)
            self.k[s] = np.concatenate([self.k[s], qkv_all[:, rows, NQ : NQ + NKV]], axis=1)
            self.v[s] = np.concatenate([self.v[s], qkv_all[:, rows, NQ + NKV :]], axis=1)
        for layer in range(LAYERS):
            out = tvm.nd.empty((total, NQ, HEAD_DIM), dtype)
            F["attention_kv_cache_attention_with_fused_qkv"](
                kv, layer, HEAD_DIM**-0.5, tvm.nd.array(qkv_all[layer]), out
            )
            row = 0
            for s, n in zip(ids, lengths):
                q = qkv_all[layer, row : row + n, :NQ].astype(np.float64)
                k, v = self.k[s][layer], self.v[s][layer]
                if self.rope:
                    q = rope_np(q, np.arange(k.shape[0] - n, k.shape[0]))
                    k = rope_np(k, np.arange(k.shape[0]))
                want = causal_attention_np(q, k, v, HEAD_DIM**-0.5)
                np.testing.assert_allclose(
                    out.numpy()[row : row + n], want, rtol=tol, atol=tol, err_msg=f"seq {s}"
                )
                row += n
        F["kv_state_end_forward"](kv)

    def check_cached(self, kv, mode: RopeMode, tol=1e-5):
        """The cache's stored k/v (debug_get_kv): rotated in NORMAL mode, as given otherwise."""
        for s, k in self.k.items():
            length = k.shape[1]
            got_k = tvm.nd.empty(k.shape, "float32")
            got_v = tvm.nd.empty(k.shape, "float32")
            F["attention_kv_cache_debug_get_kv"](kv, s, 0, length, got_k, got_v)
            if mode == RopeMode.NORMAL:
                k = np.stack([rope_np(k[i], np.arange(length)) for i in range(LAYERS)])
            np.testing.assert_allclose(got_k.numpy(), k, rtol=tol, atol=tol)
            np.testing.assert_allclose(got_v.numpy(), self.v[s], rtol=tol, atol=tol)


# ---------------------------------------------------------------------------- runtime tests
@pytest.mark.parametrize("mode", [RopeMode.NORMAL, RopeMode.NONE, RopeMode.INLINE])
def test_prefill_and_batched_decode_match_full_causal_attention(mode):
    rng = np.random.default_rng(int(mode))
    kv = create(mode)
    oracle = Oracle(mode)
    steps = [[(0, 6)], [(1, 9)], [(2, 1), (3, 13)], [(0, 3), (1, 1), (4, 5)]]
    steps += [[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]] * 3  # decode: 5 lengths, one batch
    steps += [[(3, 1), (0, 1)]]  # another order than the sequences were added
    for batch in steps:
        oracle.step(kv, batch, rng)
    oracle.check_cached(kv, mode)
    lengths = {s: k.shape[1] for s, k in oracle.k.items()}
    assert F["attention_kv_cache_get_total_sequence_length"](kv) == sum(lengths.values())
    used = sum(-(-n // 4) for n in lengths.values())
    assert F["attention_kv_cache_get_num_available_pages"](kv) == 96 // 4 + 1 - used


def test_float16_cache_matches_the_oracle_at_half_precision():
    rng = np.random.default_rng(7)
    kv = create(RopeMode.NORMAL, "float16")
    oracle = Oracle(RopeMode.NORMAL)
    for batch in ([(0, 5), (1, 3)], [(0, 1), (1, 1)]):
        oracle.step(kv, batch, rng, dtype="float16", tol=1e-2)


def test_attention_matches_torch_scaled_dot_product_attention():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as tf

    rng = np.random.default_rng(3)
    kv = create(RopeMode.NONE, page_size=3)
    F["kv_state_add_sequence"](kv, 0)
    qkv = rng.standard_normal((11, NQ + 2 * NKV, HEAD_DIM)).astype("float32")
    F["kv_state_begin_forward"](kv, (0,), (11,))
    out = tvm.nd.empty((11, NQ, HEAD_DIM), "float32")
    F["attention_kv_cache_attention_with_fused_qkv"](kv, 1, 0.3, tvm.nd.array(qkv), out)
    q, k, v = (torch.from_numpy(a).transpose(0, 1) for a in np.split(qkv, [NQ, NQ + NKV], 1))
    group = NQ // NKV
    want = tf.scaled_dot_product_attention(
        q, k.repeat_interleave(group, 0), v.repeat_interleave(group, 0), is_causal=True, scale=0.3
    )
    np.testing.assert_allclose(out.numpy(), want.transpose(0, 1).numpy(), rtol=1e-5, atol=1e-5)


def test_popn_and_remove_free_pages_and_later_steps_see_the_shorter_cache():
    rng = np.random.default_rng(1)
    kv = create(RopeMode.NORMAL)
    oracle = Oracle(RopeMode.NORMAL)
    oracle.step(kv, [(0, 10), (1, 7)], rng)
    free = F["attention_kv_cache_get_num_available_pages"](kv)
    F["kv_state_popn"](kv, 0, 5)  # 10 -> 5 tokens: 3 pages of 4 -> 2
    for d in (oracle.k, oracle.v):
        d[0] = d[0][:, :5]
    assert F["attention_kv_cache_get_num_available_pages"](kv) == free + 1
    assert F["attention_kv_cache_get_total_sequence_length"](kv) == 12
    oracle.step(kv, [(0, 2), (1, 1)], rng)  # continues at position 5, not 10
    F["kv_state_remove_sequence"](kv, 1)
    del oracle.k[1], oracle.v[1]
    assert F["attention_kv_cache_get_num_available_pages"](kv) == 25 - 2
    oracle.step(kv, [(0, 1)], rng)
    oracle.check_cached(kv, RopeMode.NORMAL)
    F["kv_state_remove_sequence"](kv, 0)
    assert F["attention_kv_cache_empty"](kv)


def test_fork_copies_a_prefix_that_the_child_extends_independently():
    rng = np.random.default_rng(2)
    kv = create(RopeMode.NORMAL)
    oracle = Oracle(RopeMode.NORMAL)
    oracle.step(kv, [(0, 9)], rng)
    F["kv_state_fork_sequence"](kv, 0, 5, 6)
    F["kv_state_fork_sequence"](kv, 0, 6)  # fork_pos -1 (default): the whole parent
    oracle.k[5], oracle.v[5] = oracle.k[0][:, :6], oracle.v[0][:, :6]
    oracle.k[6], oracle.v[6] = oracle.k[0], oracle.v[0]
    oracle.step(kv, [(5, 3), (0, 1), (6, 2)], rng)
    oracle.check_cached(kv, RopeMode.NORMAL)


def test_clear_empties_the_cache():
    kv = create()
    F["kv_state_add_sequence"](kv, 0)
    F["kv_state_begin_forward"](kv, (0,), (5,))
    F["kv_state_clear"](kv)
    assert F["attention_kv_cache_empty"](kv)
    assert F["attention_kv_cache_get_total_sequence_length"](kv) == 0


def test_out_of_pages_is_an_error_that_changes_nothing():
    kv = create(capacity=16, page_size=4)  # 16 / 4 + 1 = 5 pages
    for s in (0, 1):
        F["kv_state_add_sequence"](kv, s)
    F["kv_state_begin_forward"](kv, (0,), (12,))  # 3 pages
    F["kv_state_end_forward"](kv)
    with pytest.raises(RuntimeError_, match=r"out of KV cache pages.*needs 3 more pages.*has 2"):
        F["kv_state_begin_forward"](kv, (0, 1), (1, 8))
    assert F["attention_kv_cache_get_num_available_pages"](kv) == 2
    assert F["attention_kv_cache_get_total_sequence_length"](kv) == 12
    with pytest.raises(RuntimeError_, match="out of KV cache pages.*fork"):
        F["kv_state_fork_sequence"](kv, 0, 2)
    F["kv_state_begin_forward"](kv, (0, 1), (1, 4))  # exactly fits: 1 + 1 pages
    assert F["attention_kv_cache_get_num_available_pages"](kv) == 0


def _qkv(n, dtype="float32"):
    return tvm.nd.array(np.ones((n, NQ + 2 * NKV, HEAD_DIM), dtype))


def _out(n, dtype="float32"):
    return tvm.nd.empty((n, NQ, HEAD_DIM), dtype)


def test_hostile_arguments_raise_minitvm_errors():
    kv = create(chunk=16, max_batch=2)
    F["kv_state_add_sequence"](kv, 0)
    attn = F["attention_kv_cache_attention_with_fused_qkv"]
    cases = [
        (ArgumentError, "already in the KV cache", F["kv_state_add_sequence"], (kv, 0)),
        (ArgumentError, "sequence 7 is not in the KV cache", F["kv_state_popn"], (kv, 7, 1)),
        (ArgumentError, "sequence 7 is not", F["kv_state_remove_sequence"], (kv, 7)),
        (ArgumentError, "sequence 7 is not", F["kv_state_begin_forward"], (kv, (7,), (1,))),
        (ArgumentError, "cannot pop 1 tokens", F["kv_state_popn"], (kv, 0, 1)),
        (ArgumentError, "cannot pop -1", F["kv_state_popn"], (kv, 0, -1)),
        (ArgumentError, "fork_pos 3 is outside", F["kv_state_fork_sequence"], (kv, 0, 1, 3)),
        (ArgumentError, "child sequence 0", F["kv_state_fork_sequence"], (kv, 0, 0)),
        (ArgumentError, "exceed the prefill chunk size 16", F["kv_state_begin_forward"],
         (kv, (0,), (17,))),
        (ArgumentError, "must be positive", F["kv_state_begin_forward"], (kv, (0,), (0,))),
        (ArgumentError, "repeat a sequence", F["kv_state_begin_forward"], (kv, (0, 0), (1, 1))),
        (ArgumentError, "max batch size 2", F["kv_state_begin_forward"],
         (kv, (0, 1, 2), (1, 1, 1))),
        (ShapeError, "2 seq_ids but 1", F["kv_state_begin_forward"], (kv, (0, 1), (1,))),
        (ArgumentError, "sequence of ints", F["kv_state_begin_forward"], (kv, (0.5,), (1,))),
        (ArgumentError, "expected an int", F["kv_state_add_sequence"], (kv, "zero")),
        (ArgumentError, "token trees", F["kv_state_begin_forward"], (kv, (0,), (2,), (-1, 0))),
        (RuntimeError_, "no forward is in progress", attn, (kv, 0, 1.0, _qkv(1), _out(1))),
        (ArgumentError, "paged KV cache", F["kv_state_add_sequence"], (object(), 0)),
        (ArgumentError, "sliding-window", F["attention_kv_cache_enable_sliding_window_for_seq"],
         (kv, 0, 8, 0)),
    ]  # fmt: skip
    for err, msg, fn, args in cases:
        with pytest.raises(err, match=msg):
            fn(*args)
    F["kv_state_begin_forward"](kv, (0,), (3,))
    for err, msg, layer, qkv, out in [
        (ShapeError, r"qkv_data has shape \(4, 12, 16\), expected \(3, 12, 16\)", 0, _qkv(4),
         _out(3)),
        (ShapeError, "o_data has shape", 0, _qkv(3), _out(2)),
        (DTypeError, "dtype float64", 0, _qkv(3, "float64"), _out(3, "float64")),
        (ArgumentError, r"layer_id 2 is outside the cache's layers 0..1", 2, _qkv(3), _out(3)),
    ]:  # fmt: skip
        with pytest.raises(err, match=msg):
            attn(kv, layer, 1.0, qkv, out)
    F["kv_state_popn"](kv, 0, 2)  # the forward's reserved slots are freed: it is dropped
    with pytest.raises(RuntimeError_, match="no forward is in progress"):
        attn(kv, 0, 1.0, _qkv(3), _out(3))
    assert F["attention_kv_cache_get_total_sequence_length"](kv) == 1


def test_create_refuses_what_it_cannot_honour():
    with pytest.raises(ArgumentError, match="argument 17 is a kernel"):
        create(kernels=[None, None, (), (), ("tirx", len), *([()] * 10)])
    with pytest.raises(ArgumentError, match="expected 28 arguments"):
        F["paged_attention_kv_cache_create"](1, 2, 3)
    with pytest.raises(ArgumentError, match="rotary_dim 5 must be even"):
        create(extra=(5,))
    kv = create(RopeMode.NORMAL, extra=(8,))  # partial rotary: the first 8 of 16 dims turn
    assert kv.config.rotary_dim == 8


def test_partial_rotary_turns_only_the_first_dims():
    kv = create(RopeMode.NORMAL, extra=(8,))
    F["kv_state_add_sequence"](kv, 0)
    F["kv_state_begin_forward"](kv, (0,), (3,))
    rng = np.random.default_rng(4)
    qkv = rng.standard_normal((3, NQ + 2 * NKV, HEAD_DIM)).astype("float32")
    F["attention_kv_cache_attention_with_fused_qkv"](kv, 0, 1.0, tvm.nd.array(qkv), _out(3))
    k = tvm.nd.empty((LAYERS, 3, NKV, HEAD_DIM), "float32")
    F["attention_kv_cache_debug_get_kv"](kv, 0, 0, 3, k, tvm.nd.empty(k.shape, "float32"))
    raw = qkv[:, NQ : NQ + NKV]
    np.testing.assert_allclose(k.numpy()[0, :, :, 8:], raw[..., 8:])
    want = rope_np(raw[..., :8].astype(np.float64), np.arange(3))
    np.testing.assert_allclose(k.numpy()[0, :, :, :8], want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- a tiny llama
CFG = {
    "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
}  # fmt: skip


class PagedAttention(nn.Module):
    def __init__(self, cfg: dict, layer_id: int) -> None:
        self.layer_id = layer_id
        self.heads, self.kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.head_dim = cfg["hidden_size"] // self.heads
        fused = (self.heads + 2 * self.kv_heads) * self.head_dim
        self.qkv_proj = nn.Linear(cfg["hidden_size"], fused, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, cfg["hidden_size"], bias=False)

    def forward(self, x: nn.Tensor, kv: PagedKVCache) -> nn.Tensor:
        b, s, _ = x.shape
        qkv = nn.op.reshape(self.qkv_proj(x), (b, s, self.heads + 2 * self.kv_heads, self.head_dim))
        o = kv.attention_with_fused_qkv(self.layer_id, qkv, self.heads, self.head_dim**-0.5)
        return self.o_proj(nn.op.reshape(o, (b, s, self.heads * self.head_dim)))


class PagedLayer(nn.Module):
    def __init__(self, cfg: dict, layer_id: int) -> None:
        hidden, inter, eps = cfg["hidden_size"], cfg["intermediate_size"], cfg["rms_norm_eps"]
        self.self_attn = PagedAttention(cfg, layer_id)
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.input_layernorm = nn.RMSNorm(hidden, -1, eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(hidden, -1, eps, bias=False)

    def forward(self, x: nn.Tensor, kv: PagedKVCache) -> nn.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), kv)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(nn.op.silu(self.gate_proj(h)) * self.up_proj(h))


class PagedLlama(nn.Module):
    """Llama with TVM's paged cache: prefill (1, total) tokens of one or several sequences,
    decode (batch, 1); the caller brackets each call with kv_state_begin/end_forward."""

    def __init__(self, cfg: dict) -> None:
        self.cfg = cfg
        self.cache_override: dict = {}  # TIRPagedKVCache arguments a test changes
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([PagedLayer(cfg, i) for i in range(cfg["num_hidden_layers"])])
        self.norm = nn.RMSNorm(cfg["hidden_size"], -1, cfg["rms_norm_eps"], bias=False)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def forward(self, ids: nn.Tensor, kv: PagedKVCache):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, kv)
        return self.lm_head(self.norm(x)), kv

    def prefill(self, ids: nn.Tensor, kv: PagedKVCache):
        return self.forward(ids, kv)

    def batch_decode(self, ids: nn.Tensor, kv: PagedKVCache):
        return self.forward(ids, kv)

    def create_paged_kv_cache(
        self, max_batch_size, max_total_seq_len, prefill_chunk_size, page_size, sliding
    ) -> PagedKVCache:
        c = self.cfg
        head_dim = c["hidden_size"] // c["num_attention_heads"]
        args = {
            "attn_kind": "mha", "max_batch_size": max_batch_size,
            "max_total_seq_len": max_total_seq_len, "prefill_chunk_size": prefill_chunk_size,
            "page_size": page_size, "support_sliding_window": sliding, "layer_partition": None,
            "num_hidden_layers": c["num_hidden_layers"],
            "num_attention_heads": c["num_attention_heads"],
            "num_key_value_heads": c["num_key_value_heads"], "qk_head_dim": head_dim,
            "v_head_dim": head_dim, "mla_original_qk_head_dim": 0, "mla_original_v_head_dim": 0,
            "rope_mode": RopeMode.NORMAL, "rope_scale": 1, "rope_theta": c["rope_theta"],
            "rope_scaling": {}, "rope_ext_factors": None, "rotary_dim": head_dim,
            "enable_disaggregation": False, "dtype": "float32", "target": "llvm",
        }  # fmt: skip
        return TIRPagedKVCache(**(args | self.cache_override))

    def get_spec(self) -> dict:
        kv = nn.spec.Object(object_type=PagedKVCache)
        sizes = ("max_batch_size", "max_total_seq_len", "prefill_chunk_size", "page_size")
        create_spec = {n: int for n in (*sizes, "sliding")}
        create_spec["$"] = {"param_mode": "none", "effect_mode": "none"}
        return {
            "prefill": {"ids": nn.spec.Tensor((1, "n"), "int32"), "kv": kv},
            "batch_decode": {"ids": nn.spec.Tensor(("b", 1), "int32"), "kv": kv},
            "create_paged_kv_cache": create_spec,
        }


def random_weights(cfg: dict, seed: int = 0) -> dict:
    """HF-named weights (separate q/k/v), scaled so activations stay O(1)."""
    rng = np.random.default_rng(seed)
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    d = h // cfg["num_attention_heads"]
    shapes = {
        "model.embed_tokens.weight": (v, h),
        "model.norm.weight": (h,),
        "lm_head.weight": (v, h),
    }
    for n in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{n}."
        shapes |= {
            p + "self_attn.q_proj.weight": (cfg["num_attention_heads"] * d, h),
            p + "self_attn.k_proj.weight": (cfg["num_key_value_heads"] * d, h),
            p + "self_attn.v_proj.weight": (cfg["num_key_value_heads"] * d, h),
            p + "self_attn.o_proj.weight": (h, cfg["num_attention_heads"] * d),
            p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h),
            p + "mlp.down_proj.weight": (h, i),
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
        }  # fmt: skip
    out = {}
    for name, shape in shapes.items():
        scale = 1.0 if len(shape) == 1 or "embed" in name else shape[1] ** -0.5
        base = 1.0 if len(shape) == 1 else 0.0
        out[name] = (base + scale * rng.standard_normal(shape) * (0.1 if base else 1)).astype(
            "float32"
        )
    return out


def paged_weights(w: dict, params: list) -> list:
    """The HF-named weights in the paged model's parameter order (q/k/v fused row-wise)."""
    out = []
    for name, _ in params:
        key = "model." + name if not name.startswith("lm_head") else name
        if name.startswith("layers."):
            n, rest = name.split(".")[1], name.split(".", 2)[2]
            p = f"model.layers.{n}."
            if rest == "self_attn.qkv_proj.weight":
                qkv = [w[p + f"self_attn.{x}_proj.weight"] for x in "qkv"]
                out.append(tvm.nd.array(np.concatenate(qkv)))
                continue
            key = p + (rest if rest.startswith(("self_attn", "input", "post")) else "mlp." + rest)
        out.append(tvm.nd.array(w[key]))
    return out


def llama_np(w: dict, cfg: dict, ids: np.ndarray) -> np.ndarray:
    """Logits of every position of one sequence, full causal attention, no cache (float64)."""
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg["hidden_size"] // heads
    eps = cfg["rms_norm_eps"]

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    x = w["model.embed_tokens.weight"][ids].astype(np.float64)
    n = len(ids)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms(x, w[p + "input_layernorm.weight"])
        q, k, v = (h @ w[p + f"self_attn.{x}_proj.weight"].T for x in "qkv")
        q = rope_np(q.reshape(n, heads, d), np.arange(n), cfg["rope_theta"])
        k = rope_np(k.reshape(n, kv_heads, d), np.arange(n), cfg["rope_theta"])
        o = causal_attention_np(q, k, v.reshape(n, kv_heads, d), d**-0.5)
        x = x + o.reshape(n, heads * d) @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        x = (
            x
            + (gate / (1 + np.exp(-gate)) * (h @ w[p + "mlp.up_proj.weight"].T))
            @ w[p + "mlp.down_proj.weight"].T
        )
    return rms(x, w["model.norm.weight"]) @ w["lm_head.weight"].T


def _generate_paged(vm, weights, prompts: dict, new_tokens: int):
    """Prefill both prompts in one forward, then decode all sequences in one batch per step:
    ({seq: tokens}, {seq: [prompt logits, step logits...]})."""
    kv = vm["create_paged_kv_cache"]((4,), (128,), (64,), (4,), (0,))
    ids = list(prompts)
    for s in ids:
        F["kv_state_add_sequence"](kv, s)
    F["kv_state_begin_forward"](kv, tuple(ids), tuple(len(prompts[s]) for s in ids))
    flat = np.concatenate([prompts[s] for s in ids]).astype("int32")[None]
    logits, kv = vm["prefill"](tvm.nd.array(flat), kv, *weights)
    F["kv_state_end_forward"](kv)
    logits = logits.numpy()[0]
    steps, row = {}, 0
    for s in ids:
        steps[s] = [logits[row : row + len(prompts[s])]]
        row += len(prompts[s])
    tokens = {s: [int(steps[s][0][-1].argmax())] for s in ids}
    for _ in range(new_tokens - 1):
        F["kv_state_begin_forward"](kv, tuple(ids), (1,) * len(ids))
        batch = np.array([[tokens[s][-1]] for s in ids], "int32")
        logits, kv = vm["batch_decode"](tvm.nd.array(batch), kv, *weights)
        F["kv_state_end_forward"](kv)
        for i, s in enumerate(ids):
            steps[s].append(logits.numpy()[i])
            tokens[s].append(int(steps[s][-1][-1].argmax()))
    assert F["attention_kv_cache_get_total_sequence_length"](kv) == sum(
        len(p) + new_tokens - 1 for p in prompts.values()
    )
    return tokens, steps


@pytest.fixture(scope="module")
def paged_llama():
    model = PagedLlama(CFG)
    mod, params = model.export_tvm(model.get_spec())
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    w = random_weights(CFG)
    return vm, w, paged_weights(w, params)


PROMPTS = {0: np.array([5, 17, 3, 40, 22, 9, 61]), 1: np.array([12, 7, 33])}


def test_paged_llama_batch_decode_matches_a_cache_free_numpy_forward(paged_llama):
    vm, w, weights = paged_llama
    tokens, steps = _generate_paged(vm, weights, PROMPTS, 5)
    for s, prompt in PROMPTS.items():
        full = np.concatenate([prompt, tokens[s][:-1]])
        want = llama_np(w, CFG, full)
        got = np.concatenate(steps[s])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"seq {s}")
        assert tokens[s] == [int(r.argmax()) for r in want[len(prompt) - 1 :]]


def test_paged_llama_matches_the_functional_cache_llama_example(paged_llama):
    spec = importlib.util.spec_from_file_location("llama_generate", EXAMPLES / "llama_generate.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = example.LlamaForCausalLM(CFG)
    mod, params = model.export_tvm(model.get_spec())
    simple = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    vm, w, weights = paged_llama
    tokens, steps = _generate_paged(vm, weights, PROMPTS, 4)
    simple_weights = [tvm.nd.array(w[name]) for name, _ in params]
    for s, prompt in PROMPTS.items():  # the example runs one sequence at a time
        ids = tvm.nd.array(prompt.astype("int32")[None])
        logits, cache = simple["prefill"](ids, *simple_weights)
        want = [logits.numpy()[0]]
        for t in tokens[s][:-1]:
            token = tvm.nd.array(np.array([[t]], "int32"))
            logits, cache = simple["decode"](token, list(cache), *simple_weights)
            want.append(logits.numpy()[0])
        for i, (got, exp) in enumerate(zip(steps[s], want)):
            np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4, err_msg=f"seq {s} {i}")


def test_paged_llama_module_prints_and_parses_back():
    model = PagedLlama(CFG)
    mod, _ = model.export_tvm(model.get_spec())
    text = mod.script()
    assert "vm.builtin.attention_kv_cache_attention_with_fused_qkv" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


@pytest.mark.parametrize(
    "override, err, msg",
    [
        ({"attn_kind": "mla"}, ArgumentError, "only 'mha'"),
        ({"rope_scaling": {"rope_type": "llama3"}}, ArgumentError, "'llama3' is not supported"),
        ({"target": "cuda"}, TargetError, "host CPU only"),
        ({"num_key_value_heads": 3}, ArgumentError, "not a multiple"),
        ({"enable_disaggregation": True}, ArgumentError, "disaggregation"),
    ],
)
def test_tir_paged_kv_cache_refuses_what_it_cannot_run(override, err, msg):
    model = PagedLlama(CFG)
    model.cache_override = override
    spec = model.get_spec()
    del spec["prefill"], spec["batch_decode"]
    with pytest.raises(err, match=msg):
        model.export_tvm(spec)


def test_flashinfer_cache_is_refused_by_name():
    with pytest.raises(TargetError, match="CUDA-only"):
        FlashInferPagedKVCache()
