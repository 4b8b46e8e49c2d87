"""An LLM end to end: prefill and greedy decode of a Llama-architecture decoder, minitvm vs HF.

The model of `examples/llama_generate.py` (RMSNorm, RoPE, GQA, SwiGLU, functional KV cache),
written with `relax.frontend.nn` and built with `relax.build`, against HF transformers'
`LlamaForCausalLM` (PyTorch eager, same random weights, its KV cache) with the same thread count.

- prefill: the forward of a `--prompt`-token prompt (logits of the last position), min over
  `--repeat` runs; HF: `model(ids, use_cache=True, logits_to_keep=1)`.
- decode: `--tokens` greedy steps after that prompt, tokens/s from the min over `--repeat` runs;
  HF: `generate(max_new_tokens=N)` minus its prefill, both timed the same way.

- `--gemv`: instead, each distinct weight shape of the config's decode step as one `nn.Linear`
  kernel at one row (what a decode step runs), in GB/s of weight read, against numpy's `w @ x`
  on the same arrays (its BLAS named through threadpoolctl when installed); min and median of
  15 samples of about 2 ms each, numpy's first, then ours, each after a pause.

    python benchmarks/llm.py [--config tiny|small|medium] [--prompt 128] [--tokens 32]
                             [--repeat 3] [--gemv]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _common import SETTLE, machine_lines, set_threads
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


def blas_line() -> str:
    """numpy's BLAS as threadpoolctl reports it, or why it cannot."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "numpy BLAS: unknown (pip install threadpoolctl to name it)"
    found = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "numpy BLAS: " + "; ".join(
        f"{i['internal_api']} {i['version']} ({i.get('architecture')} kernels, "
        f"{i['num_threads']} threads)"
        for i in found
    )


def linear_kernel(rows: int, k: int, n: int):
    """The one-row `nn.Linear(k, n)` kernel as relax.build compiles it (default pipeline)."""
    import minitvm as tvm
    from minitvm.relax.frontend import nn
    from minitvm.relax.pipeline import run_default_pipeline

    class Proj(nn.Module):
        def __init__(self) -> None:
            self.proj = nn.Linear(k, n, bias=False)

        def forward(self, x):
            return self.proj(x)

    mod, _ = Proj().export_tvm({"forward": {"x": nn.spec.Tensor((1, rows, k), "float32")}})
    prims = [f for _, f in run_default_pipeline(mod, "llvm").functions_items()
             if isinstance(f, tvm.tir.PrimFunc)]  # fmt: skip
    assert len(prims) == 1, "a bias-free linear is one kernel"
    return tvm.build(prims[0], target="llvm")


def _per_call(fn, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def gemv_rates(n: int, k: int, rounds: int = 15) -> tuple[list, list]:
    """Seconds per call of our one-row linear kernel and of numpy's `w @ x` (samples of each)."""
    import minitvm as tvm

    lib = linear_kernel(1, k, n)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    xn, wn, yn = tvm.nd.array(x), tvm.nd.array(w), tvm.nd.empty((1, 1, n))
    lib(wn, xn, yn)
    np.testing.assert_allclose(yn.numpy(), x @ w.T, rtol=1e-4, atol=1e-3)
    x1 = x.reshape(k)
    number = max(1, int(2e-3 / (w.nbytes / 50e9)))  # about 2 ms a sample at 50 GB/s
    # one framework at a time, after a pause: the other's idle threads keep spinning a while,
    # and on 2 cores a spinning pool stalls a 2-thread GEMV (numpy read 0.6 GB/s interleaved)
    time.sleep(SETTLE)
    ref = [_per_call(lambda: w @ x1, number) for _ in range(rounds)]
    time.sleep(SETTLE)
    ours = [_per_call(lambda: lib(wn, xn, yn), number) for _ in range(rounds)]
    return ours, ref


def run_gemv(cfg: dict) -> None:
    print(blas_line())
    h, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * h // cfg["num_attention_heads"]
    shapes = {(h, h): "q/o_proj", (kv, h): "k/v_proj", (inter, h): "gate/up_proj",
              (h, inter): "down_proj", (vocab, h): "lm_head"}  # fmt: skip
    print(f"{'weight (n x k)':24} {'minitvm GB/s':>16} {'numpy GB/s':>16}   (min / median)")
    for (n, k), name in shapes.items():
        ours, ref = gemv_rates(n, k)
        gb = n * k * 4 / 1e9
        mine = f"{gb / min(ours):7.1f} / {gb / float(np.median(ours)):6.1f}"
        theirs = f"{gb / min(ref):7.1f} / {gb / float(np.median(ref)):6.1f}"
        print(f"{name:12} {n:5}x{k:<5}  {mine:>16} {theirs:>16}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--gemv", action="store_true", help="time the decode GEMVs instead")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print("\n".join(machine_lines(threads)))
    cfg = CONFIGS[args.config]
    print(f"config {args.config}: {cfg}")
    if args.gemv:
        run_gemv(cfg)
        return
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
