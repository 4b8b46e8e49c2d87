"""An LLM end to end: prefill and greedy decode of a Llama-architecture decoder, minitvm vs HF.

The model of `examples/llama_generate.py` (RMSNorm, RoPE, GQA, SwiGLU, functional KV cache),
written with `relax.frontend.nn` and built with `relax.build`, against HF transformers'
`LlamaForCausalLM` (PyTorch eager, same random weights, its KV cache) with the same thread count.

- prefill: the forward of a `--prompt`-token prompt (logits of the last position), min over
  `--repeat` runs; HF: `model(ids, use_cache=True, logits_to_keep=1)`.
- decode: `--tokens` greedy steps after that prompt, tokens/s from the min over `--repeat` runs;
  HF: `generate(max_new_tokens=N)` minus its prefill, both timed the same way.

    python benchmarks/llm.py [--config small|tiny] [--prompt 128] [--tokens 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _common import machine_lines, set_threads
from llama_generate import TINY, CompiledLlama, hf_llama

CONFIGS = {
    "tiny": TINY,
    "small": {**TINY, "vocab_size": 8000, "hidden_size": 512, "intermediate_size": 1408,
              "num_hidden_layers": 4},
    "medium": {**TINY, "vocab_size": 32000, "hidden_size": 1024, "intermediate_size": 2816,
               "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4},
}  # fmt: skip


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_ours(ours: CompiledLlama, prompt, tokens: int, repeat: int) -> tuple[float, float, list]:
    state = {}

    def prefill():
        state["logits"], state["cache"] = ours.prefill(prompt)

    def decode():
        token, cache = int(state["logits"].numpy()[0, -1].argmax()), state["cache"]
        out = [token]
        for _ in range(tokens):
            logits, cache = ours.decode(out[-1], cache)
            out.append(int(logits.numpy()[0, -1].argmax()))
        state["tokens"] = out

    prefill()
    decode()  # warm-up
    t_prefill = best(prefill, repeat)
    t_decode = best(decode, repeat)
    return t_prefill, t_decode, state["tokens"]


def run_hf(hf, prompt, tokens: int, repeat: int) -> tuple[float, float, list]:
    import torch

    ids = torch.from_numpy(np.asarray(prompt, "int64")).reshape(1, -1)
    out = {}

    def prefill():
        with torch.no_grad():
            hf(ids, use_cache=True, logits_to_keep=1)

    def generate():
        with torch.no_grad():
            out["seq"] = hf.generate(
                ids, max_new_tokens=tokens + 1, min_new_tokens=tokens + 1, do_sample=False,
                use_cache=True, pad_token_id=0, eos_token_id=None,
            )  # fmt: skip

    generate()  # warm-up
    t_prefill = best(prefill, repeat)
    t_generate = best(generate, repeat)
    return t_prefill, t_generate - t_prefill, out["seq"][0, len(prompt) :].tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print("\n".join(machine_lines(threads)))
    cfg = CONFIGS[args.config]
    print(f"config {args.config}: {cfg}")
    hf = hf_llama(cfg)
    start = time.perf_counter()
    ours = CompiledLlama(hf, all_logits=False)
    print(f"minitvm export + build: {time.perf_counter() - start:.1f} s")
    prompt = np.random.default_rng(0).integers(0, cfg["vocab_size"], args.prompt)
    p_ours, d_ours, tok_ours = run_ours(ours, prompt, args.tokens, args.repeat)
    p_hf, d_hf, tok_hf = run_hf(hf, prompt, args.tokens, args.repeat)
    same = "same" if tok_ours == tok_hf else "DIFFERENT"
    print(f"greedy tokens: {same} ({len(tok_ours)} tokens)")
    print(f"{'':8} {'minitvm':>12} {'HF eager':>12} {'ratio':>8}")
    print(f"{'prefill':8} {p_ours * 1e3:10.1f}ms {p_hf * 1e3:10.1f}ms "
          f"{p_hf / p_ours:7.2f}x  ({args.prompt} tokens; ratio = HF time / ours)")  # fmt: skip
    tps_ours, tps_hf = args.tokens / d_ours, args.tokens / d_hf
    print(f"{'decode':8} {tps_ours:8.1f} tok/s {tps_hf:8.1f} tok/s {tps_ours / tps_hf:7.2f}x  "
          f"({args.tokens} tokens; ratio = our tokens/s / HF's)")  # fmt: skip
    print("targets: decode >= 1.5x, prefill ratio >= 1.0x")


if __name__ == "__main__":
    main()
