"""A Llama-architecture decoder written with `relax.frontend.nn`, compiled, generating greedily.

RMSNorm, rotary position embedding (`nn.llm.rope`), grouped-query attention (fewer key/value
heads than query heads), a SwiGLU MLP, and a functional key/value cache (`nn.llm.append_kv`):
`prefill` takes the prompt and returns its logits and the cache; `decode` takes one token and
the cache and returns the next logits and the extended cache. The weights are copied from HF
transformers' `LlamaForCausalLM` built offline from a small config with random weights; the
logits of the prompt and of every generated token are checked against it.

Needs torch and transformers (says so and exits when they are absent).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import llm


class LlamaAttention(nn.Module):
    def __init__(self, cfg: dict) -> None:
        self.heads, self.kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.head_dim = cfg["hidden_size"] // self.heads
        self.theta = cfg["rope_theta"]
        hidden = cfg["hidden_size"]
        self.q_proj = nn.Linear(hidden, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, hidden, bias=False)

    def forward(self, x: nn.Tensor, past_k, past_v):
        b, s, _ = x.shape
        offset = llm.past_length([past_k] if past_k is not None else None)
        q = nn.op.reshape(self.q_proj(x), (b, s, self.heads, self.head_dim))
        k = nn.op.reshape(self.k_proj(x), (b, s, self.kv_heads, self.head_dim))
        v = nn.op.reshape(self.v_proj(x), (b, s, self.kv_heads, self.head_dim))
        q = llm.rope(q, offset, self.theta, name="q_rope")
        k = llm.rope(k, offset, self.theta, name="k_rope")
        k_all, v_all = llm.append_kv(past_k, k, "k_cache"), llm.append_kv(past_v, v, "v_cache")
        group = self.heads // self.kv_heads
        k_rep = nn.op.repeat(k_all, group, axis=2) if group > 1 else k_all
        v_rep = nn.op.repeat(v_all, group, axis=2) if group > 1 else v_all
        # the prompt attends causally; a decoded token sees every cached position
        causal = past_k is None and not (isinstance(s, int) and s == 1)
        out = nn.op.scaled_dot_product_attention(q, k_rep, v_rep, is_causal=causal)
        out = self.o_proj(nn.op.reshape(out, (b, s, self.heads * self.head_dim)))
        return out, k_all, v_all


class LlamaMLP(nn.Module):
    def __init__(self, cfg: dict) -> None:
        hidden, inter = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return self.down_proj(nn.op.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg: dict) -> None:
        eps, hidden = cfg["rms_norm_eps"], cfg["hidden_size"]
        self.self_attn = LlamaAttention(cfg)
        self.mlp = LlamaMLP(cfg)
        self.input_layernorm = nn.RMSNorm(hidden, -1, eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(hidden, -1, eps, bias=False)

    def forward(self, x, past_k, past_v):
        attn, k, v = self.self_attn(self.input_layernorm(x), past_k, past_v)
        x = x + attn
        return x + self.mlp(self.post_attention_layernorm(x)), k, v


class LlamaModel(nn.Module):
    def __init__(self, cfg: dict) -> None:
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(cfg) for _ in range(cfg["num_hidden_layers"])]
        )
        self.norm = nn.RMSNorm(cfg["hidden_size"], -1, cfg["rms_norm_eps"], bias=False)

    def forward(self, ids, past):
        x = self.embed_tokens(ids)
        cache = []
        for i, layer in enumerate(self.layers):
            past_k, past_v = (past[2 * i], past[2 * i + 1]) if past is not None else (None, None)
            x, k, v = layer(x, past_k, past_v)
            cache += [k, v]
        return self.norm(x), cache


def _last_position(x: nn.Tensor) -> nn.Tensor:
    """x[:, -1:, :] as a small TE compute (the prompt's logits are needed at its end only)."""

    def compute(data):
        b, s, h = data.shape
        return tvm.te.compute((b, 1, h), lambda i, _, j: data[i, s - 1, j], name="last")

    return nn.op.tensor_expr_op(compute, "last_position", [x])


class LlamaForCausalLM(nn.Module):
    """HF's parameter names, so `state_dict()` copies over one to one."""

    def __init__(self, cfg: dict, all_logits: bool = True) -> None:
        self.cfg, self.all_logits = cfg, all_logits
        self.model = LlamaModel(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def prefill(self, ids: nn.Tensor):
        hidden, cache = self.model(ids, None)
        if not self.all_logits:
            hidden = _last_position(hidden)
        return self.lm_head(hidden), cache

    def decode(self, ids: nn.Tensor, past: list):
        hidden, cache = self.model(ids, llm.bind_kv_cache(past))
        return self.lm_head(hidden), cache

    def get_spec(self) -> dict:
        c = self.cfg
        head_dim = c["hidden_size"] // c["num_attention_heads"]
        past = llm.kv_cache_spec(c["num_hidden_layers"], c["num_key_value_heads"], head_dim)
        return {
            "prefill": {"ids": nn.spec.Tensor((1, "n"), "int32")},
            "decode": {"ids": nn.spec.Tensor((1, 1), "int32"), "past": past},
        }


CONFIG_KEYS = (
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "rms_norm_eps",
)  # fmt: skip


def config_of(hf_config) -> dict:
    """The fields of an HF LlamaConfig the model needs."""
    cfg = {k: getattr(hf_config, k) for k in CONFIG_KEYS}
    rope = getattr(hf_config, "rope_parameters", None) or {}
    cfg["rope_theta"] = rope.get("rope_theta", getattr(hf_config, "rope_theta", 10000.0))
    head_dim = getattr(hf_config, "head_dim", None)
    if rope.get("rope_type", "default") != "default" or head_dim not in (
        None,
        cfg["hidden_size"] // cfg["num_attention_heads"],
    ):
        raise tvm.error.ArgumentError(
            "this example supports the default RoPE and head_dim = hidden / heads only"
        )
    return cfg


class CompiledLlama:
    """The nn model exported, built and loaded; weights copied from an HF model."""

    def __init__(self, hf_model, target: str = "llvm", all_logits: bool = True) -> None:
        self.cfg = config_of(hf_model.config)
        model = LlamaForCausalLM(self.cfg, all_logits)
        mod, params = model.export_tvm(model.get_spec())
        state = {k: v.detach().float().numpy() for k, v in hf_model.state_dict().items()}
        if "lm_head.weight" not in state:  # tied embeddings
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        dev = tvm.cpu()
        self.weights = [tvm.nd.array(np.ascontiguousarray(state[name]), dev) for name, _ in params]
        self.vm = relax.VirtualMachine(relax.build(mod, target), dev)
        self.dev = dev

    def prefill(self, ids: np.ndarray):
        ids = tvm.nd.array(np.asarray(ids, "int32").reshape(1, -1), self.dev)
        logits, cache = self.vm["prefill"](ids, *self.weights)
        return logits, list(cache)

    def decode(self, token: int, cache: list):
        ids = tvm.nd.array(np.array([[token]], "int32"), self.dev)
        logits, cache = self.vm["decode"](ids, cache, *self.weights)
        return logits, list(cache)

    def generate(self, prompt: np.ndarray, new_tokens: int):
        """Greedy generation: (token ids, [logits of the prompt, of each decoded token])."""
        logits, cache = self.prefill(prompt)
        steps = [logits.numpy()[0]]
        tokens = [int(steps[-1][-1].argmax())]
        for _ in range(new_tokens - 1):
            logits, cache = self.decode(tokens[-1], cache)
            steps.append(logits.numpy()[0])
            tokens.append(int(steps[-1][-1].argmax()))
        return tokens, steps


def hf_llama(cfg: dict, seed: int = 0, tie: bool = False):
    """HF transformers' LlamaForCausalLM with random weights, built offline from a config."""
    import torch
    from transformers import LlamaConfig
    from transformers import LlamaForCausalLM as HFLlama

    torch.manual_seed(seed)
    config = LlamaConfig(
        **{k: v for k, v in cfg.items() if k != "rope_theta"},
        rope_theta=cfg.get("rope_theta", 10000.0),
        max_position_embeddings=2048,
        tie_word_embeddings=tie,
        attn_implementation="eager",
    )
    return HFLlama(config).eval()


def hf_generate(hf_model, prompt: np.ndarray, new_tokens: int):
    """HF's greedy generate with its KV cache: (token ids, per-step logits)."""
    import torch

    with torch.no_grad():
        out = hf_model.generate(
            torch.from_numpy(np.asarray(prompt, "int64")).reshape(1, -1),
            max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
            output_logits=True, return_dict_in_generate=True, use_cache=True,
            pad_token_id=0, eos_token_id=None,
        )  # fmt: skip
    tokens = out.sequences[0, len(prompt) :].tolist()
    return tokens, [lg[0].float().numpy() for lg in out.logits]


def hf_prompt_logits(hf_model, prompt: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        ids = torch.from_numpy(np.asarray(prompt, "int64")).reshape(1, -1)
        return hf_model(ids).logits[0].float().numpy()


TINY = {
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
}  # fmt: skip


def check_against_hf(cfg: dict = TINY, prompt_len: int = 12, new_tokens: int = 8, tie=False):
    """Build both, generate greedily, compare every step's logits; returns the max abs error."""
    hf = hf_llama(cfg, tie=tie)
    ours = CompiledLlama(hf)
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, cfg["vocab_size"], prompt_len)
    tokens, steps = ours.generate(prompt, new_tokens)
    np.testing.assert_allclose(steps[0], hf_prompt_logits(hf, prompt), rtol=1e-4, atol=1e-4)
    hf_tokens, hf_steps = hf_generate(hf, prompt, new_tokens)
    assert tokens == hf_tokens, (tokens, hf_tokens)
    worst = 0.0
    for i, (mine, theirs) in enumerate(zip(steps, hf_steps)):  # HF keeps each step's last row
        np.testing.assert_allclose(mine[-1], theirs, rtol=1e-4, atol=1e-4, err_msg=f"step {i}")
        worst = max(worst, float(np.abs(mine[-1] - theirs).max()))
    return tokens, worst


def main() -> None:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as err:
        print(f"skipping: this example compares against HF transformers ({err})")
        return
    small = os.environ.get("MINITVM_EXAMPLE_SMALL") == "1"
    start = time.perf_counter()
    tokens, worst = check_against_hf(TINY, 12, 6 if small else 16)
    print(f"generated {tokens}; logits match HF (max abs err {worst:.2e}); "
          f"{time.perf_counter() - start:.1f} s")  # fmt: skip
    if not small:
        _, worst = check_against_hf(TINY, 9, 8, tie=True)
        print(f"tied lm_head: logits match HF (max abs err {worst:.2e})")


if __name__ == "__main__":
    sys.exit(main())
