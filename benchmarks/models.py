"""Zoo models, untuned minitvm vs PyTorch eager vs ONNX Runtime, latency in the same run.

Each model of `minitvm.testing.zoo` (batch 1, and ResNet-18 at batch 16) is compiled with
`relax.build` after `BindParams` (the default pipeline, no tuning) and timed beside the same
network in PyTorch eager and in ONNX Runtime (exported with torch.onnx.export to a temp file).
All three use the same thread count. Printed: min / median latency, the ratios minitvm/ORT and
minitvm/torch (of the minima), minitvm's GFLOPS and % of the FMA peak measured by a
register-resident micro-kernel built with minitvm (`_common.fma_peak`), the compile time, and
the largest difference to PyTorch's output.

    python benchmarks/models.py                            # all models, 224x224
    python benchmarks/models.py --models resnet18 --profile
    python benchmarks/models.py --models resnet18 vgg16 --repeat 5 --threads 2

`--hf` (or `--models hf_bert hf_gpt2 ...`) times HuggingFace transformers models built offline
from their configs (random weights) at batch 1 and 8 instead, through torch.export; see _hf.py:

    python benchmarks/models.py --hf --threads 2
    python benchmarks/models.py --models hf_bert hf_vit --hf-batches 1 --profile
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import numpy as np
from _common import (
    Timing,
    fma_peak,
    machine_lines,
    measure,
    model_flops,
    print_table,
    set_threads,
)

import minitvm as tvm
from minitvm import relax
from minitvm.testing import hf_models, zoo

CASES = [(name, 1) for name in zoo.list_models()] + [("resnet18", 16)]


def build_minitvm(mod, params):
    """(vm, compile seconds): BindParams + relax.build, timed together."""
    start = time.perf_counter()
    mod = relax.transform.BindParams("main", params)(mod)
    ex = relax.build(mod, "llvm")
    return relax.VirtualMachine(ex, tvm.cpu()), time.perf_counter() - start


def build_ort(model, x, threads, workdir):
    """An ONNX Runtime session of the torch model, or None when onnxruntime is missing."""
    try:
        import onnxruntime as ort
        import torch
    except ImportError:
        return None
    path = os.path.join(workdir, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and legacy-exporter notices
        torch.onnx.export(
            model, (torch.from_numpy(x),), path, input_names=["data"], output_names=["out"],
            dynamo=False,
        )  # fmt: skip
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    os.remove(path)
    return lambda: sess.run(None, {"data": x})[0]


def run_case(name, batch, args, threads, peak):
    """One row of the table (and the VM profile when asked)."""
    kwargs = {} if args.image_size is None or name in ("bert_layer", "mlp", "lenet") else {
        "image_shape": (3, args.image_size, args.image_size)}  # fmt: skip
    mod, params = zoo.get_model(name, batch_size=batch, **kwargs)
    x = np.random.default_rng(1).standard_normal(zoo.input_shape(name, batch, **kwargs))
    x = x.astype("float32")
    flops = model_flops(mod)
    vm, compile_s = build_minitvm(mod, params)
    xnd = tvm.nd.array(x)
    ours = measure(lambda: vm["main"](xnd), args.repeat)
    got = vm["main"](xnd).numpy()
    row = {"ours": ours, "compile": compile_s, "flops": flops}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        model = zoo.torch_model(name, params)
        xt = torch.from_numpy(x)
        with torch.inference_mode():
            want = model(xt).numpy()
            row["torch"] = measure(lambda: model(xt), args.repeat)
        row["err"] = float(np.abs(got - want).max() / np.abs(want).max())
        with tempfile.TemporaryDirectory() as workdir:
            ort_run = build_ort(model, x, threads, workdir)
        if ort_run is not None:
            row["ort"] = measure(ort_run, args.repeat)
    if args.profile:
        vm.profile("main", xnd)  # the first profiled run pays one-time costs; not reported
        report = vm.profile("main", xnd, number=args.repeat)
        print(f"\n{name} batch {batch}:\n{report}\n", flush=True)
    return _format(name, batch, row, peak)


def _ms(t: Timing | None) -> str:
    return "-" if t is None else f"{t.min * 1e3:.3f} / {t.median * 1e3:.3f}"


def _ratio(row, other) -> str:
    return f"{row['ours'].min / row[other].min:.2f}" if other in row else "-"


def _format(name, batch, row, peak):
    gflops = row["flops"] / row["ours"].min / 1e9
    return [
        name, str(batch), f"{row['flops'] / 1e9:.2f}", f"{row['compile']:.2f}",
        _ms(row["ours"]), _ms(row.get("torch")), _ms(row.get("ort")),
        _ratio(row, "ort"), _ratio(row, "torch"), f"{gflops:.1f}", f"{100 * gflops / peak:.0f}%",
        f"{row['err']:.1e}" if "err" in row else "-",
    ]  # fmt: skip


HEADERS = ["model", "batch", "GFLOP", "compile s", "minitvm ms min/med", "torch ms min/med",
           "ORT ms min/med", "ours/ORT", "ours/torch", "GFLOPS", "% peak", "rel err"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=None,
        help=f"of {zoo.list_models() + hf_models.list_models()}",
    )
    parser.add_argument("--hf", action="store_true", help="all HuggingFace models (hf_*)")
    parser.add_argument(
        "--hf-batches",
        type=int,
        nargs="+",
        default=[1, 8],
        help="batch sizes of the HuggingFace models",
    )
    parser.add_argument("--repeat", type=int, default=10, help="timed samples per framework")
    parser.add_argument("--threads", type=int, default=None, help="for all three (default: all)")
    parser.add_argument("--image-size", type=int, default=None, help="CNN input HxW (224)")
    parser.add_argument("--no-batch16", action="store_true", help="skip ResNet-18 at batch 16")
    parser.add_argument("--profile", action="store_true", help="print vm.profile of each model")
    args = parser.parse_args()
    known = zoo.list_models() + hf_models.list_models()
    for name in args.models or ():
        if name not in known:
            parser.error(f"unknown model {name!r}; choose from {known}")
    threads = set_threads(args.threads)
    print("\n".join(machine_lines(threads)))
    hf_names = [n for n in args.models or () if n in hf_models.list_models()]
    if args.hf or hf_names:
        run_hf(hf_names or hf_models.list_models(), args, threads)
        return
    peak = fma_peak(threads)
    print(f"FMA peak: {peak:.1f} GFLOPS fp32 on {threads} threads ({fma_peak(1):.1f} on one), "
          "measured by a register-resident FMA micro-kernel built with minitvm "
          "(_common.fma_peak); '% peak' is of the first figure")  # fmt: skip
    cases = [(n, b) for n, b in CASES if args.models is None or n in args.models]
    if args.no_batch16:
        cases = [(n, b) for n, b in cases if b == 1]
    rows = []
    for name, batch in cases:
        rows.append(run_case(name, batch, args, threads, peak))
        print("  ".join(rows[-1]), flush=True)
    print()
    print_table(HEADERS, rows)


def run_hf(names: list[str], args, threads: int) -> None:
    """The HuggingFace table: each model at each of args.hf_batches (see _hf.py)."""
    import _hf

    rows = []
    for name in names:
        for batch in args.hf_batches:
            rows.append(_hf.run_case(name, batch, args, threads))
            print("  ".join(rows[-1]), flush=True)
    print("\nload average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print_table(_hf.HEADERS, rows)


if __name__ == "__main__":
    main()
