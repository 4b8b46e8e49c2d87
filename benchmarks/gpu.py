"""GPU benchmark: the seed homework's HWCN convolution schedule (shared/local caches, vthreads,
cooperative fetching) and a 4096^3 shared-memory-tiled matmul, beside torch on the same CUDA
device; prints GFLOPS of each and our speed as a ratio of torch's.

    python benchmarks/gpu.py                 # CUDA; says so and exits 0 where there is none
    python benchmarks/gpu.py --device opencl --batch 64 --size 256   # a check on OpenCL

Results are measured, never assumed: no device, no numbers.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import minitvm as tvm
from minitvm import te


def conv_hwcn(batch: int, in_channel: int = 256, out_channel: int = 512, in_size: int = 14):
    """The seed's schedule, verbatim but for its `WM` typo (WW): returns (s, [A, W, B], flops)."""
    kernel, pad, stride = 3, 1, 1
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    out_size = (in_size - kernel + 2 * pad) // stride + 1
    Apad = te.compute(
        (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
        lambda yy, xx, cc, nn: tvm.tir.if_then_else(
            tvm.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
            A[yy - pad, xx - pad, cc, nn],
            tvm.tir.const(0.0, "float32"),
        ),
        name="Apad",
    )
    rc = te.reduce_axis((0, in_channel), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    B = te.compute(
        (out_size, out_size, out_channel, batch),
        lambda yy, xx, ff, nn: te.sum(
            Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff], axis=[ry, rx, rc]
        ),
        name="B",
    )
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    WL = s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")
    tile, num_thread, step, vthread = 8, 8, 8, 2
    block_factor = tile * num_thread
    block_x, block_y, block_z = (te.thread_axis(f"blockIdx.{a}") for a in "xyz")
    thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
    thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
    thread_xz = te.thread_axis((0, vthread), "vthread", name="vx")
    thread_yz = te.thread_axis((0, vthread), "vthread", name="vy")
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=block_factor)
    bx, ni = s[B].split(ni, factor=block_factor)
    s[B].bind(bz, block_z)
    s[B].bind(by, block_y)
    s[B].bind(bx, block_x)
    tyz, fi = s[B].split(fi, nparts=vthread)
    txz, ni = s[B].split(ni, nparts=vthread)
    ty, fi = s[B].split(fi, nparts=num_thread)
    tx, ni = s[B].split(ni, nparts=num_thread)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(tyz, thread_yz)
    s[B].bind(txz, thread_xz)
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)
    s[BL].compute_at(s[B], tx)
    yi, xi, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=step)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    s[AA].compute_at(s[BL], rx)
    s[WW].compute_at(s[BL], rx)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)
    for cache, last in ((AA, "n"), (WW, "f")):
        yi, xi, ci, li = s[cache].op.axis
        ty, ci = s[cache].split(ci, nparts=num_thread)
        tx, li = s[cache].split(li, nparts=num_thread)
        _, li = s[cache].split(li, factor=4)
        s[cache].reorder(ty, tx, yi, xi, ci, li)
        s[cache].bind(ty, thread_y)
        s[cache].bind(tx, thread_x)
        s[cache].vectorize(li)
    flops = 2.0 * out_size * out_size * out_channel * batch * in_channel * kernel * kernel
    return s, [A, W, B], flops


def matmul_shared(n: int):
    """C = A @ B: 64x64 block tiles, 8x8 per thread in registers, K in steps of 8 through
    shared memory (cache_read "shared" + "local", cache_write "local")."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    AL = s.cache_read(AA, "local", [C])
    BL = s.cache_read(BB, "local", [C])
    CL = s.cache_write(C, "local")
    block, thread, step = 64, 8, 8
    i, j = s[C].op.axis
    by, i = s[C].split(i, factor=block)
    bx, j = s[C].split(j, factor=block)
    ty, i = s[C].split(i, nparts=thread)
    tx, j = s[C].split(j, nparts=thread)
    s[C].reorder(by, bx, ty, tx, i, j)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    thread_y = te.thread_axis((0, thread), "threadIdx.y")
    thread_x = te.thread_axis((0, thread), "threadIdx.x")
    s[C].bind(ty, thread_y)
    s[C].bind(tx, thread_x)
    s[CL].compute_at(s[C], tx)
    ci, cj = s[CL].op.axis
    (kk,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(kk, factor=step)
    s[CL].reorder(ko, ki, ci, cj)
    s[AA].compute_at(s[CL], ko)
    s[BB].compute_at(s[CL], ko)
    s[AL].compute_at(s[CL], ki)
    s[BL].compute_at(s[CL], ki)
    for cache in (AA, BB):
        r, c = s[cache].op.axis
        ty_, r = s[cache].split(r, nparts=thread)
        tx_, c = s[cache].split(c, nparts=thread)
        s[cache].bind(ty_, thread_y)
        s[cache].bind(tx_, thread_x)
    return s, [A, B, C], 2.0 * n**3


def _time(f, dev, args, number: int) -> float:
    return f.time_evaluator(f.entry_name, dev, number=number, repeat=3)(*args).min


def _torch_time(fn, number: int) -> float:
    import torch

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


def run(kind: str, batch: int, size: int, number: int) -> int:
    dev = tvm.device(kind, 0)
    if not dev.exist:
        print(f"benchmarks/gpu.py: no {kind} device here ({dev.unavailable_reason()}); nothing "
              "was measured")  # fmt: skip
        return 0
    print(f"device: {kind}(0) = {dev.device_name}")
    rng = np.random.default_rng(0)
    rows = []
    s, args, flops = conv_hwcn(batch)
    f = tvm.build(s, args, kind, name="conv_hwcn")
    a_np = rng.random(tuple(int(d) for d in args[0].shape), dtype="float32")
    w_np = rng.random(tuple(int(d) for d in args[1].shape), dtype="float32")
    b = tvm.nd.empty(tuple(int(d) for d in args[2].shape), "float32", dev)
    a, w = tvm.nd.array(a_np, dev), tvm.nd.array(w_np, dev)
    ours = _time(f, dev, (a, w, b), number)
    rows.append(
        (
            f"conv HWCN b={batch} 256->512 14x14",
            flops,
            ours,
            _torch_conv(a_np, w_np, b, kind, number),
        )
    )
    s, args, flops = matmul_shared(size)
    f = tvm.build(s, args, kind, name="matmul")
    x_np, y_np = (
        rng.random((size, size), dtype="float32"),
        rng.random((size, size), dtype="float32"),
    )
    x, y, z = (
        tvm.nd.array(x_np, dev),
        tvm.nd.array(y_np, dev),
        tvm.nd.empty((size, size), "float32", dev),
    )
    ours = _time(f, dev, (x, y, z), number)
    rows.append((f"matmul {size}^3 fp32", flops, ours, _torch_matmul(x_np, y_np, z, kind, number)))
    print(f"{'workload':34} {'ours GFLOPS':>12} {'torch GFLOPS':>13} {'ours/torch':>10}")
    for name, flops, ours, theirs in rows:
        torch_text = f"{flops / theirs / 1e9:13.1f}" if theirs else f"{'-':>13}"
        ratio = f"{theirs / ours:10.2f}" if theirs else f"{'-':>10}"
        print(f"{name:34} {flops / ours / 1e9:12.1f} {torch_text} {ratio}")
    return 0


def _torch_conv(a_np, w_np, b, kind: str, number: int):
    """torch's time for the same convolution (NCHW), after checking our result against it."""
    torch = _cuda_torch(kind)
    x = torch.from_numpy(a_np).permute(3, 2, 0, 1).contiguous()  # HWCN -> NCHW
    k = torch.from_numpy(w_np).permute(3, 2, 0, 1).contiguous()  # HWIO -> OIHW
    ref = torch.nn.functional.conv2d(x, k, padding=1).permute(2, 3, 1, 0).numpy()
    np.testing.assert_allclose(b.numpy(), ref, rtol=1e-3, atol=1e-3)
    if torch is None or kind != "cuda":
        return None
    x, k = x.cuda(), k.cuda()
    return _torch_time(lambda: torch.nn.functional.conv2d(x, k, padding=1), number)


def _torch_matmul(x_np, y_np, z, kind: str, number: int):
    torch = _cuda_torch(kind)
    np.testing.assert_allclose(z.numpy(), x_np @ y_np, rtol=1e-3, atol=1e-2)
    if torch is None or kind != "cuda":
        return None
    torch.backends.cuda.matmul.allow_tf32 = False  # the same fp32 arithmetic as ours
    x, y = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()
    return _torch_time(lambda: x @ y, number)


def _cuda_torch(kind: str):
    import torch

    if kind == "cuda" and not torch.cuda.is_available():
        print("torch has no CUDA here: no torch column")
    return torch


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default="cuda", choices=["cuda", "opencl"])
    p.add_argument(
        "--batch",
        type=int,
        default=256,
        help="convolution batch, a multiple of 64 (the seed's: 256)",
    )
    p.add_argument("--size", type=int, default=4096, help="matmul size n (n x n x n)")
    p.add_argument("--number", type=int, default=10, help="calls per timing")
    a = p.parse_args(argv)
    if a.batch % 64 or a.size % 64:
        p.error("--batch and --size must be multiples of 64 (the schedules' block tiles)")
    return run(a.device, a.batch, a.size, a.number)


if __name__ == "__main__":
    sys.exit(main())
