"""Relay's quick-start path timed: `relay.testing` workloads through `relay.build` and the graph
executor, beside PyTorch eager and ONNX Runtime in the same run.

`relay.build` is a front end onto `relax.build`, so its latency should equal the relax build
of the same network (the `relax zoo` column: `minitvm.testing.zoo`'s model built directly).
PyTorch and ONNX Runtime run the zoo's torch twin of the nearest architecture: VGG-16 has the
same layers as `relay.testing.vgg` (16 layers, no batch norm); the zoo's ResNet-18 is the
post-activation v1 network while `relay.testing.resnet` is TVM's pre-activation (v2) one, with
the same conv shapes and FLOPs up to the batch norms.

    python benchmarks/relay_models.py --models vgg16 resnet18 --repeat 5
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from _common import machine_lines, measure, print_table, set_threads
from models import build_minitvm, build_ort

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.testing import zoo

WORKLOADS = {
    "vgg16": lambda shape: relay.testing.vgg.get_workload(num_layers=16, image_shape=shape),
    "resnet18": lambda shape: relay.testing.resnet.get_workload(num_layers=18, image_shape=shape),
}


def relay_case(name: str, shape: tuple, repeat: int) -> tuple:
    """(compile seconds, Timing) of the Relay quick start for `name`."""
    mod, params = WORKLOADS[name](shape)
    start = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    compile_s = time.perf_counter() - start
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    data = np.random.default_rng(0).standard_normal((1, *shape)).astype("float32")
    module.set_input("data", data)
    return compile_s, measure(module.run, repeat)


def reference_case(name: str, shape: tuple, repeat: int, threads: int) -> dict:
    """The zoo's relax build, torch eager and ORT timings of the nearest architecture."""
    mod, params = zoo.get_model(name, image_shape=shape)
    x = np.random.default_rng(1).standard_normal((1, *shape)).astype("float32")
    vm, _ = build_minitvm(mod, params)
    xnd = tvm.nd.array(x)
    out = {"relax": measure(lambda: vm["main"](xnd), repeat)}
    try:
        import torch
    except ImportError:
        return out
    model = zoo.torch_model(name, params)
    xt = torch.from_numpy(x)
    with torch.inference_mode():
        out["torch"] = measure(lambda: model(xt), repeat)
    with tempfile.TemporaryDirectory() as workdir:
        run = build_ort(model, x, threads, workdir)
    if run is not None:
        out["ort"] = measure(run, repeat)
    return out


def _ms(t) -> str:
    return "-" if t is None else f"{t.min * 1e3:.2f} / {t.median * 1e3:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--image-size", type=int, default=224)
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print("\n".join(machine_lines(threads)))
    shape = (3, args.image_size, args.image_size)
    rows = []
    for name in args.models:
        compile_s, ours = relay_case(name, shape, args.repeat)
        ref = reference_case(name, shape, args.repeat, threads)
        ratio = {k: f"{ours.min / ref[k].min:.2f}" if k in ref else "-" for k in ("ort", "torch")}
        rows.append([
            name, f"{compile_s:.2f}", _ms(ours), _ms(ref.get("relax")), _ms(ref.get("torch")),
            _ms(ref.get("ort")), ratio["ort"], ratio["torch"],
        ])  # fmt: skip
        print("  ".join(rows[-1]), flush=True)
    print()
    print_table(
        ["model", "relay.build s", "relay ms min/med", "relax zoo ms", "torch ms", "ORT ms",
         "relay/ORT", "relay/torch"],
        rows,
    )  # fmt: skip


if __name__ == "__main__":
    main()
