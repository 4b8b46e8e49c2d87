"""The paged KV cache runtime driving the CPU kernels of nn.llm.kv_cache (passed to the create
builtin in TVM's kernel slots): the same forwards (prefills of several sequences, a fork, decodes)
through a kernel cache and through the numpy cache give the same attention outputs and the same
cached keys/values, and the outputs match a numpy causal-attention reference."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import ArgumentError
from minitvm.relax.frontend.nn.llm import RopeMode
from minitvm.relax.frontend.nn.llm import kv_cache as K

LAYERS, NQ, NKV, D, PS = 2, 4, 2, 8, 4
F = {n: tvm.get_global_func(f"vm.builtin.{n}") for n in (
    "paged_attention_kv_cache_create", "kv_state_add_sequence", "kv_state_fork_sequence",
    "kv_state_begin_forward", "kv_state_end_forward", "attention_kv_cache_debug_get_kv",
    "attention_kv_cache_attention_with_fused_qkv",
)}  # fmt: skip


def _built(func):
    lib = tvm.tirx.build(func, target="llvm")
    return lib[lib.entry_name]


def _kernel_slots(dtype):
    append = _built(K._kv_cache_transpose_append(NKV, D, dtype, PS))
    prefill = _built(K._attention_prefill_cpu(NKV, NQ, D, dtype, False, {}, PS))
    return [append, None, [], ["tirx", prefill], *([[]] * 6), [], None, None, None, None]


def _create(rope_mode, dtype, kernels):
    slots = _kernel_slots(dtype) if kernels else [None, None] + [()] * 13
    return F["paged_attention_kv_cache_create"](
        (4, 64, 32, PS, 0), (0, LAYERS), NQ, NKV, D, D, (0,) * LAYERS, False, int(rope_mode),
        1.0, 1e4, None, tvm.nd.array(np.zeros((), dtype)), *slots,
    )  # fmt: skip


def _rope(x, pos):
    half = D // 2
    inv = 1.0 / 1e4 ** (np.arange(0, D, 2, dtype="float32") / D)
    emb = np.concatenate([pos[:, None] * inv] * 2, -1)[:, None, :].astype("float32")
    return np.cos(emb) * x + np.sin(emb) * np.concatenate([-x[..., half:], x[..., :half]], -1)


def _reference(q, k, v, n_new):
    """Causal attention of the last n_new of len(k) positions, grouped-query, float64."""
    out = np.zeros(q.shape)
    for h in range(NQ):
        s = q[:, h] @ k[:, h // (NQ // NKV)].T / np.sqrt(D)
        s[np.arange(len(k))[None] > (len(k) - n_new + np.arange(n_new))[:, None]] = -np.inf
        e = np.exp(s - s.max(-1, keepdims=True))
        out[:, h] = e / e.sum(-1, keepdims=True) @ v[:, h // (NQ // NKV)]
    return out


@pytest.mark.parametrize(
    ("rope_mode", "dtype"),
    [(RopeMode.NORMAL, "float32"), (RopeMode.INLINE, "float32"), (RopeMode.NONE, "float16")],
)
def test_kernel_cache_matches_numpy_cache_and_reference(rope_mode, dtype):
    rng = np.random.default_rng(int(rope_mode))
    caches = [_create(rope_mode, dtype, kernels) for kernels in (False, True)]
    assert caches[0].kernels is None and caches[1].kernels is not None  # numpy, then kernels
    for kv in caches:
        F["kv_state_add_sequence"](kv, 0)
        F["kv_state_add_sequence"](kv, 1)
    history = {0: [], 1: []}  # every token's raw qkv per sequence, for the reference
    steps = [((0, 1), (6, 3)), ("fork", 1, 2), ((0, 1, 2), (1, 2, 1)), ((2,), (5,))]
    for step in steps:
        if step[0] == "fork":
            for kv in caches:
                F["kv_state_fork_sequence"](kv, step[1], step[2], -1)
            history[step[2]] = list(history[step[1]])
            continue
        ids, lens = step
        total = sum(lens)
        qkv = rng.standard_normal((LAYERS, total, NQ + 2 * NKV, D)).astype(dtype)
        outs = []
        for kv in caches:
            F["kv_state_begin_forward"](kv, ids, lens)
            got = []
            for layer in range(LAYERS):
                out = tvm.nd.array(np.zeros((total, NQ, D), dtype))
                F["attention_kv_cache_attention_with_fused_qkv"](
                    kv, layer, D**-0.5, tvm.nd.array(qkv[layer]), out
                )
                got.append(out.numpy())
            F["kv_state_end_forward"](kv)
            outs.append(np.stack(got))
        np.testing.assert_allclose(outs[1], outs[0], rtol=2e-3, atol=2e-3)
        row = 0
        for sid, n in zip(ids, lens):
            history[sid].append(qkv[:, row : row + n])
            seq = np.concatenate(history[sid], axis=1).astype("float64")
            pos = np.arange(seq.shape[1])
            for layer in range(LAYERS):
                q, k = seq[layer, -n:, :NQ], seq[layer, :, NQ : NQ + NKV]
                if rope_mode != RopeMode.NONE:
                    q, k = _rope(q, pos[-n:]), _rope(k, pos)
                want = _reference(q, k, seq[layer, :, NQ + NKV :], n)
                np.testing.assert_allclose(outs[1][layer, row : row + n], want, atol=5e-3)
            row += n
    for sid, chunks in history.items():  # the kernel cache holds what the numpy one holds
        length = sum(h.shape[1] for h in chunks)
        kvs = []
        for kv in caches:
            k_out = tvm.nd.array(np.zeros((LAYERS, length, NKV, D), dtype))
            v_out = tvm.nd.array(np.zeros((LAYERS, length, NKV, D), dtype))
            F["attention_kv_cache_debug_get_kv"](kv, sid, 0, length, k_out, v_out)
            kvs.append((k_out.numpy(), v_out.numpy()))
        np.testing.assert_allclose(kvs[1][0], kvs[0][0], rtol=1e-3, atol=1e-3)
        np.testing.assert_array_equal(kvs[1][1], kvs[0][1])


def test_create_refuses_incomplete_or_foreign_kernels():
    slots = _kernel_slots("float32")
    missing_prefill = list(slots)
    missing_prefill[3] = []
    with pytest.raises(ArgumentError, match=r"argument 16 \(f_attention_prefill\) is empty"):
        F["paged_attention_kv_cache_create"](
            (4, 64, 32, PS, 0), (0, LAYERS), NQ, NKV, D, D, (0,) * LAYERS, False, 1, 1.0, 1e4,
            None, tvm.nd.array(np.zeros((), "float32")), *missing_prefill,
        )  # fmt: skip
    foreign = list(slots)
    foreign[3] = ["flashinfer", slots[3][1]]
    with pytest.raises(ArgumentError, match="names backend 'flashinfer'"):
        F["paged_attention_kv_cache_create"](
            (4, 64, 32, PS, 0), (0, LAYERS), NQ, NKV, D, D, (0,) * LAYERS, False, 1, 1.0, 1e4,
            None, tvm.nd.array(np.zeros((), "float32")), *foreign,
        )  # fmt: skip
