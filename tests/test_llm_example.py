"""nn.llm (RoPE, functional KV cache) and examples/llama_generate.py against HF transformers."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, ShapeError
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import llm

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _hf_rope(x: np.ndarray, offset: int, theta: float) -> np.ndarray:
    """HF's LlamaRotaryEmbedding + apply_rotary_pos_emb on (b, s, h, d)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers", reason="the reference is HF transformers' Llama RoPE")
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import (
        LlamaRotaryEmbedding,
        apply_rotary_pos_emb,
    )

    _, s, h, d = x.shape
    cfg = LlamaConfig(hidden_size=h * d, num_attention_heads=h, rope_theta=theta)
    xt = torch.from_numpy(x).transpose(1, 2)
    cos, sin = LlamaRotaryEmbedding(cfg)(xt, torch.arange(offset, offset + s)[None])
    return apply_rotary_pos_emb(xt, xt, cos, sin)[0].transpose(1, 2).numpy()


class _Rope(nn.Module):
    def forward(self, x: nn.Tensor, offset: int):
        return llm.rope(x, offset, 500000.0)


def test_rope_at_a_symbolic_offset_matches_hf_llama():
    mod, _ = _Rope().export_tvm(
        {"forward": {"x": nn.spec.Tensor((1, "n", 4, 16), "float32"), "offset": nn.spec.Int()}}
    )
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(0)
    for n, offset in ((5, 0), (3, 37), (1, 900)):
        x = rng.standard_normal((1, n, 4, 16)).astype("float32")
        out = vm["forward"](tvm.nd.array(x), (offset,)).numpy()
        np.testing.assert_allclose(out, _hf_rope(x, offset, 500000.0), rtol=1e-5, atol=1e-5)


class _Cache(nn.Module):
    def forward(self, new: nn.Tensor, past: list):
        past = llm.bind_kv_cache(past)
        return [llm.append_kv(p, new) for p in past]


def test_kv_cache_appends_along_the_sequence_axis_and_checks_lengths():
    spec = {"new": nn.spec.Tensor((1, 1, 2, 4), "float32"), "past": llm.kv_cache_spec(1, 2, 4)}
    mod, _ = _Cache().export_tvm({"forward": spec})
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(1)
    new = rng.standard_normal((1, 1, 2, 4)).astype("float32")
    k, v = (rng.standard_normal((1, 3, 2, 4)).astype("float32") for _ in range(2))
    out = vm["forward"](tvm.nd.array(new), [tvm.nd.array(k), tvm.nd.array(v)])
    np.testing.assert_array_equal(out[0].numpy(), np.concatenate([k, new], axis=1))
    np.testing.assert_array_equal(out[1].numpy(), np.concatenate([v, new], axis=1))
    with pytest.raises(tvm.error.MiniTVMError, match="past_len|dim"):  # keys and values disagree
        vm["forward"](tvm.nd.array(new), [tvm.nd.array(k), tvm.nd.array(v[:, :2].copy())])


def test_llm_pieces_refuse_bad_input():
    class Bad(nn.Module):
        def forward(self, x: nn.Tensor):
            return llm.rope(x, 0)

    with pytest.raises(ShapeError, match="head_dim"):
        Bad().export_tvm({"forward": {"x": nn.spec.Tensor((1, 2, 4, 15), "float32")}})
    with pytest.raises(ShapeError, match=r"\(batch, seq, heads, head_dim\)"):
        Bad().export_tvm({"forward": {"x": nn.spec.Tensor((2, 4, 16), "float32")}})
    with pytest.raises(ArgumentError, match="num_layers"):
        llm.kv_cache_spec(0, 2, 4)


def test_llama_generates_greedily_with_logits_matching_hf():
    pytest.importorskip("torch")
    pytest.importorskip("transformers", reason="the reference is HF transformers' Llama")
    sys.path.insert(0, str(EXAMPLES))
    try:
        import llama_generate
    finally:
        sys.path.remove(str(EXAMPLES))
    # GQA (8 query heads, 2 key/value heads), untied lm_head; prompt + 6 decoded tokens
    tokens, worst = llama_generate.check_against_hf(llama_generate.TINY, 10, 6)
    assert len(tokens) == 6 and worst < 1e-4
