"""GPU benchmark: the seed homework's convolution layer (its HWCN schedule with shared/local
caches, vthreads and cooperative fetching; and NCHW through DefaultGPUSchedule, what relax.build
gives a model's conv) and a 4096^3 matmul (a hand TE schedule and DefaultGPUSchedule), beside
torch on the same CUDA device; prints GFLOPS of each and our speed as a ratio of torch's. Every
result is checked against numpy first. The workloads live in minitvm.testing.gpu, shared with
the tests.

    python benchmarks/gpu.py                 # CUDA; says so and exits 0 where there is none
    python benchmarks/gpu.py --device opencl --batch 4 --size 128 --number 1   # a check on
                                             # OpenCL (minutes on PoCL: the conv is the seed's)

Results are measured, never assumed: no device, no numbers."""

from __future__ import annotations

import argparse
import sys

import numpy as np

import minitvm as tvm
from minitvm.testing.gpu import (  # conv_hwcn, matmul_shared: also what the codegen tests load
    conv2d_nchw_default_gpu,
    conv_hwcn,
    conv_hwcn_reference,
    matmul_default_gpu,
    matmul_shared,
)


def _time(f, dev, args, number: int) -> float:
    return f.time_evaluator(f.entry_name, dev, number=number, repeat=3)(*args).min


def _cuda_torch():
    """torch when it can run on a CUDA device here, else None (the torch column stays empty)."""
    try:
        import torch
    except ImportError:
        print("torch is not installed: no torch column")
        return None
    if not torch.cuda.is_available():
        print("torch has no CUDA here: no torch column")
        return None
    torch.backends.cuda.matmul.allow_tf32 = False  # the same fp32 arithmetic as ours
    torch.backends.cudnn.allow_tf32 = False
    return torch


def _torch_time(torch, fn, number: int) -> float:
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(number):
            fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / number)
    return best


def _conv_rows(
    kind: str, dev, torch, batch: int, number: int, channels=(256, 512), size: int = 14
) -> list:
    """The seed's layer twice: its HWCN schedule, and NCHW through DefaultGPUSchedule."""
    (cin, cout), rng = channels, np.random.default_rng(0)
    a_np = rng.random((size, size, cin, batch), dtype="float32")  # HWCN
    w_np = rng.random((3, 3, cin, cout), dtype="float32")  # HWIO
    want = conv_hwcn_reference(a_np, w_np)
    to_nchw = (3, 2, 0, 1)  # HWCN -> NCHW, HWIO -> OIHW, HWFN -> NFHW
    nchw = [np.ascontiguousarray(t.transpose(to_nchw)) for t in (a_np, w_np)]
    theirs = None
    if torch is not None:
        x, k = (torch.from_numpy(t).cuda() for t in nchw)
        theirs = _torch_time(torch, lambda: torch.nn.functional.conv2d(x, k, padding=1), number)
    rows = []
    for label, (sched, args, flops), inputs, layout in (
        ("HWCN, the seed's schedule", conv_hwcn(batch, cin, cout, size), (a_np, w_np), None),
        ("NCHW, DefaultGPUSchedule", conv2d_nchw_default_gpu(batch, cin, cout, size, kind),
         nchw, to_nchw),
    ):  # fmt: skip
        f = tvm.build(sched, args, kind, name="conv")
        ins = [tvm.nd.array(t, dev) for t in inputs]
        out = tvm.nd.empty([int(d) for d in args[2].shape], "float32", dev)
        f(*ins, out)
        ref = want if layout is None else want.transpose(layout)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-3, atol=1e-3)
        name = f"conv b={batch} {cin}->{cout} {size}x{size}, {label}"
        rows.append((name, flops, _time(f, dev, (*ins, out), number), theirs))
    return rows


def _matmul_rows(kind: str, dev, torch, n: int, number: int) -> list:
    rng = np.random.default_rng(1)
    x_np, y_np = rng.random((n, n), dtype="float32"), rng.random((n, n), dtype="float32")
    want = x_np @ y_np
    x, y = tvm.nd.array(x_np, dev), tvm.nd.array(y_np, dev)
    z = tvm.nd.empty((n, n), "float32", dev)
    theirs = None
    if torch is not None:
        tx, ty = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()
        theirs = _torch_time(torch, lambda: tx @ ty, number)
    rows = []
    for label, (sched, args, flops) in (
        ("hand TE schedule", matmul_shared(n)),
        ("DefaultGPUSchedule", matmul_default_gpu(n, kind)),
    ):
        f = tvm.build(sched, args, kind, name="matmul")
        z.copyfrom(np.zeros((n, n), "float32"))
        f(x, y, z)
        np.testing.assert_allclose(z.numpy(), want, rtol=1e-3, atol=1e-2)
        rows.append(
            (f"matmul {n}^3 fp32, {label}", flops, _time(f, dev, (x, y, z), number), theirs)
        )
    return rows


def run(kind: str, batch: int, size: int, number: int) -> int:
    dev = tvm.device(kind, 0)
    if not dev.exist:
        print(f"benchmarks/gpu.py: no {kind} device here ({dev.unavailable_reason()}); nothing "
              "was measured")  # fmt: skip
        return 0
    print(f"device: {kind}(0) = {dev.device_name}")
    torch = _cuda_torch() if kind == "cuda" else None
    rows = [
        *_conv_rows(kind, dev, torch, batch, number),
        *_matmul_rows(kind, dev, torch, size, number),
    ]
    print(f"{'workload':56} {'ours GFLOPS':>12} {'torch GFLOPS':>13} {'ours/torch':>10}")
    for name, flops, ours, theirs in rows:
        torch_text = f"{flops / theirs / 1e9:13.1f}" if theirs else f"{'-':>13}"
        ratio = f"{theirs / ours:10.2f}" if theirs else f"{'-':>10}"
        print(f"{name:56} {flops / ours / 1e9:12.1f} {torch_text} {ratio}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default="cuda", choices=["cuda", "opencl"])
    p.add_argument(
        "--batch",
        type=int,
        default=256,
        help="convolution batch (the seed's: 256)",
    )
    p.add_argument("--size", type=int, default=4096, help="matmul size n (n x n x n)")
    p.add_argument("--number", type=int, default=10, help="calls per timing")
    a = p.parse_args(argv)
    if a.size % 64:
        p.error("--size must be a multiple of 64 (the hand schedule's block tile)")
    return run(a.device, a.batch, a.size, a.number)


if __name__ == "__main__":
    sys.exit(main())
