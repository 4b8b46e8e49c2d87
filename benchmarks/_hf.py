"""HuggingFace models for models.py --hf: minitvm vs ONNX Runtime vs torch eager, interleaved.

Each model of `minitvm.testing.hf_models` (the "bench" preset: hidden 256, 4 heads, 2 layers,
FFN 1024 (SwiGLU 704), 128 tokens / 196 patches / 128 audio frames, random weights, no
downloads) is built for each batch size with static shapes three ways: torch.export ->
from_exported_program -> relax.build (untuned); torch.onnx.export -> onnxruntime; torch eager.
Timing rounds are interleaved (ours, ORT, torch, ours, ...) with a pause before each sample, so
load that comes and goes on a shared machine hits all three alike; ratios are of the minima.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import warnings

import numpy as np
from _common import Timing

import minitvm as tvm
from minitvm import relax
from minitvm.testing import hf_models

PAUSE = 0.2  # s before each sample: lets the previous framework's spinning pool go idle


def measure_interleaved(fns: dict, repeat: int, min_sample: float = 0.05) -> dict[str, Timing]:
    """Per-call seconds of each fn, sampled in `repeat` rounds that visit every fn in turn."""
    numbers = {}
    for key, fn in fns.items():
        fn()  # warm-up: first-call allocation, lazy initialisation
        start = time.perf_counter()
        fn()
        numbers[key] = max(1, int(min_sample / max(time.perf_counter() - start, 1e-9)))
    samples: dict[str, list[float]] = {key: [] for key in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            time.sleep(PAUSE)
            start = time.perf_counter()
            for _ in range(numbers[key]):
                fn()
            samples[key].append((time.perf_counter() - start) / numbers[key])
    return {k: Timing(min(v), statistics.median(v)) for k, v in samples.items()}


def build_minitvm(model, x):
    """(vm, compile seconds) of torch.export -> from_exported_program -> relax.build."""
    import torch

    from minitvm.relax.frontend.torch import from_exported_program

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # export-time deprecation notices of transformers
        ep = torch.export.export(model, (x,))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm, time.perf_counter() - start


def build_ort(model, x, threads):
    """An ONNX Runtime callable of the model (default graph optimisations), or None."""
    try:
        import onnxruntime as ort
        import torch
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "model.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and legacy-exporter notices
            torch.onnx.export(
                model, (x,), path, input_names=["x"], output_names=["out"], dynamo=False
            )
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    xn = x.numpy()
    return lambda: sess.run(None, {"x": xn})[0]


def _rel_err(got, want) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


def run_case(name: str, batch: int, args, threads: int) -> list[str]:
    """One table row: timings, ratios and errors of one model at one batch size."""
    import torch

    case = hf_models.build(name, "bench")
    x = case.make_input(batch, 1)
    with torch.inference_mode():
        want = case.model(x).numpy()
    vm, compile_s = build_minitvm(case.model, x)
    xnd = tvm.nd.array(x.numpy())
    got = vm["main"](xnd).numpy()
    fns = {"ours": lambda: vm["main"](xnd)}
    ort_run = build_ort(case.model, x, threads)
    if ort_run is not None:
        fns["ort"] = ort_run
        ort_err = _rel_err(ort_run(), want)

    def eager():
        with torch.inference_mode():
            return case.model(x)

    fns["torch"] = eager
    times = measure_interleaved(fns, args.repeat)
    if args.profile:
        vm.profile("main", xnd)  # the first profiled run pays one-time costs; not reported
        print(f"\n{name} batch {batch}:\n{vm.profile('main', xnd, number=3)}\n", flush=True)
    ok = np.allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())

    def ms(key):
        t = times.get(key)
        return "-" if t is None else f"{t.min * 1e3:.2f} / {t.median * 1e3:.2f}"

    def ratio(key):
        return f"{times['ours'].min / times[key].min:.2f}" if key in times else "-"

    return [
        name, str(batch), tuple_str(x.shape), f"{compile_s:.1f}", ms("ours"), ms("ort"),
        ms("torch"), ratio("ort"), ratio("torch"), f"{_rel_err(got, want):.1e}",
        "yes" if ok else "NO", f"{ort_err:.1e}" if ort_run is not None else "-",
    ]  # fmt: skip


def tuple_str(shape) -> str:
    return "x".join(str(int(d)) for d in shape)


HEADERS = ["model", "batch", "input", "compile s", "minitvm ms min/med", "ORT ms min/med",
           "torch ms min/med", "ours/ORT", "ours/torch", "rel err", "rtol 1e-4",
           "ORT rel err"]  # fmt: skip
