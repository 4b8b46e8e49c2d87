"""Single conv2d layers, untuned minitvm vs torch.nn.functional.conv2d (oneDNN), same run.

The layers are the distinct conv2d calls of the zoo's ResNet-18 and MobileNet-v2 (batch 1,
224x224), read from their relax graphs. Each is a one-op relax module (NCHW data, OIHW weight
bound as a constant, so weight packing happens at compile time) built by `relax.build` with the
default pipeline. Printed: min latency of the module and of torch, GFLOPS, torch's time over
ours (>= 0.8 is the issue's target for ResNet-18), and the conv kernel alone: its minimum time
over single vm.profile runs, and its share of the module's minimum (the module also converts
the data layout at its edges, which a whole model does once, not per layer).

    python benchmarks/conv.py                       # both models
    python benchmarks/conv.py --models resnet18 --repeat 5 --threads 2
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import machine_lines, measure, print_table, set_threads

import minitvm as tvm
from minitvm import relax
from minitvm.testing import zoo


def distinct_convs(name: str) -> list[tuple]:
    """(data shape, weight shape, strides, padding, groups) of each distinct conv2d in the model."""
    mod, _ = zoo.get_model(name)
    seen = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            call = binding.value
            if isinstance(call, relax.Call) and getattr(call.op, "name", "") == "relax.nn.conv2d":
                a = call.attrs
                key = tuple(tuple(int(d) for d in arg.struct_info.shape) for arg in call.args)
                key += (tuple(a["strides"]), tuple(a["padding"]), int(a["groups"]))
                if key not in seen:
                    seen.append(key)
    return seen


def conv_module(data_shape, weight_shape, strides, padding, groups):
    """main(data, weight) = conv2d, with the weight to be bound by BindParams."""
    data = relax.Var("data", relax.TensorStructInfo(data_shape, "float32"))
    weight = relax.Var("weight", relax.TensorStructInfo(weight_shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [data, weight], attrs={"num_input": 1}):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.conv2d(data, weight, strides, padding, groups=groups))
        bb.emit_func_output(out)
    return bb.get()


def run_layer(layer, repeat):
    import torch
    import torch.nn.functional as F

    data_shape, weight_shape, strides, padding, groups = layer
    rng = np.random.default_rng(0)
    x = rng.standard_normal(data_shape).astype("float32")
    w = (rng.standard_normal(weight_shape) / np.sqrt(np.prod(weight_shape[1:]))).astype("float32")
    mod = relax.transform.BindParams("main", {"weight": w})(conv_module(*layer))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    xnd = tvm.nd.array(x)
    got = vm["main"](xnd).numpy()
    pt, pl, pb, pr = padding
    assert (pt, pl) == (pb, pr), "torch's conv2d pads symmetrically"
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    with torch.inference_mode():
        want = F.conv2d(xt, wt, None, strides, (pt, pl), 1, groups).numpy()
        theirs = measure(lambda: F.conv2d(xt, wt, None, strides, (pt, pl), 1, groups), repeat)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    ours = measure(lambda: vm["main"](xnd), repeat)
    vm.profile("main", xnd)  # the first profiled run pays one-time costs
    # the conv kernel alone: its minimum over single profiled runs (means are noisy)
    kernel = min(
        sum(s for n, _, s in vm.profile("main", xnd).rows if "conv2d" in n) for _ in range(repeat)
    )
    share = kernel / ours.min
    flops = 2 * np.prod(got.shape) * np.prod(weight_shape[1:])
    _, c, h, _ = data_shape
    o, _, kh, kw = weight_shape
    desc = f"{c}x{h}x{h} -> {o}, {kh}x{kw} s{strides[0]}" + (f" g{groups}" if groups > 1 else "")
    return [
        desc, f"{ours.min * 1e3:.3f}", f"{theirs.min * 1e3:.3f}",
        f"{flops / ours.min / 1e9:.1f}", f"{flops / theirs.min / 1e9:.1f}",
        f"{theirs.min / ours.min:.2f}", f"{100 * share:.0f}%",
        f"{flops / kernel / 1e9:.1f}" if kernel else "-",
    ]  # fmt: skip


HEADERS = ["layer (C x H x W -> O)", "ours ms", "torch ms", "ours GFLOPS", "torch GFLOPS",
           "torch/ours", "conv share", "conv kernel GFLOPS"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2"])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="minitvm and torch threads")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print("\n".join(machine_lines(threads)))
    for name in args.models:
        print(f"\n{name}: distinct conv2d layers (batch 1, 224x224)")
        rows = []
        for layer in distinct_convs(name):
            rows.append(run_layer(layer, args.repeat))
            print("  ".join(rows[-1]), flush=True)
        print()
        print_table(HEADERS, rows)


if __name__ == "__main__":
    main()
