"""GPU workloads shared by the tests and benchmarks/gpu.py: the seed homework's HWCN convolution
schedule (shared/local caches, vthreads, cooperative vectorized fetching) and its numpy
reference, a hand-scheduled shared-memory matmul in TE, and DefaultGPUSchedule's tiling of the
same convolution (NCHW, as models have it) and matmul.

Each schedule builder returns (schedule or PrimFunc, argument tensors, floating-point operations).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import te, tir

__all__ = [
    "conv2d_nchw_default_gpu",
    "conv_hwcn",
    "conv_hwcn_reference",
    "matmul_default_gpu",
    "matmul_shared",
]


def _conv_hwcn_compute(batch: int, in_channel: int, out_channel: int, in_size: int) -> tuple:
    """The seed's padded 3x3 HWCN convolution: (A, W, Apad, B)."""
    kernel, pad, stride = 3, 1, 1
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    out_size = (in_size - kernel + 2 * pad) // stride + 1
    Apad = te.compute(
        (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
        lambda yy, xx, cc, nn: tir.if_then_else(
            tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
            A[yy - pad, xx - pad, cc, nn],
            tir.const(0.0, "float32"),
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
    return A, W, Apad, B


def conv_hwcn(
    batch: int = 256, in_channel: int = 256, out_channel: int = 512, in_size: int = 14
) -> tuple[Any, list, float]:
    """The homework's 'Optimize Convolution on GPU' schedule, step for step (its `WM` typo is
    `WW`): 64x64 output tiles per block, 8x8 threads with 2x2 vthreads, K steps of 8 channels
    through shared memory, registers for the per-thread tiles. The defaults are the seed's
    layer (batch 256, 256 -> 512 channels, 14x14); a batch below 64 leaves guarded tails."""
    A, W, Apad, B = _conv_hwcn_compute(batch, in_channel, out_channel, in_size)
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
    tyz, fi = s[B].split(fi, nparts=vthread)  # virtual threads: two interleaved tiles
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
    for cache in (AA, WW):  # cooperative fetching: every thread loads 4-wide vectors
        yi, xi, ci, li = s[cache].op.axis
        ty, ci = s[cache].split(ci, nparts=num_thread)
        tx, li = s[cache].split(li, nparts=num_thread)
        _, li = s[cache].split(li, factor=4)
        s[cache].reorder(ty, tx, yi, xi, ci, li)
        s[cache].bind(ty, thread_y)
        s[cache].bind(tx, thread_x)
        s[cache].vectorize(li)
    out_size = int(B.shape[0])
    flops = 2.0 * out_size * out_size * out_channel * batch * in_channel * 9
    return s, [A, W, B], flops


def conv_hwcn_reference(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy's result of the seed convolution: a (H, W, C, N), w (3, 3, C, F) -> (H, W, F, N)."""
    size = a.shape[0]
    ap = np.pad(a, ((1, 1), (1, 1), (0, 0), (0, 0)))
    out = np.zeros((size, size, w.shape[3], a.shape[3]), np.float32)
    for ry in range(3):
        for rx in range(3):
            window = ap[ry : ry + size, rx : rx + size]
            out += np.einsum("yxcn,cf->yxfn", window, w[ry, rx], optimize=True)
    return out


def _matmul_compute(n: int) -> tuple:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def matmul_shared(n: int) -> tuple[Any, list, float]:
    """C = A @ B by hand in TE: 64x64 block tiles, 8x8 threads holding 8x8 results each in
    registers, K in steps of 8 through shared memory (cache_read "shared" then "local",
    cache_write "local"). n must be a multiple of 64."""
    A, B, C = _matmul_compute(n)
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
    for cache in (AA, BB):  # cooperative fetching of each K step's tiles
        r, c = s[cache].op.axis
        ty_, r = s[cache].split(r, nparts=thread)
        tx_, c = s[cache].split(c, nparts=thread)
        s[cache].bind(ty_, thread_y)
        s[cache].bind(tx_, thread_x)
    return s, [A, B, C], 2.0 * n**3


def _default_gpu(tensors: list, target: Any) -> Any:
    """The PrimFunc of `tensors` given DefaultGPUSchedule for `target`."""
    from ..dlight.gpu import default_gpu_schedule
    from ..ir.module import IRModule
    from ..target import Target

    mod = IRModule({"main": te.create_prim_func(tensors)})
    return default_gpu_schedule(mod, Target(target))["main"]


def conv2d_nchw_default_gpu(
    batch: int = 256,
    in_channel: int = 256,
    out_channel: int = 512,
    in_size: int = 14,
    target: Any = "cuda",
) -> tuple[Any, list, float]:
    """The seed's layer as a model has it (NCHW data, OIHW weights, 3x3, padding 1) given
    DefaultGPUSchedule's shared-memory tiling for `target` (what relax.build does to it)."""
    from .. import topi

    D = te.placeholder((batch, in_channel, in_size, in_size), name="D")
    W = te.placeholder((out_channel, in_channel, 3, 3), name="W")
    out = topi.nn.conv2d_nchw(D, W, 1, 1)
    flops = 2.0 * in_size * in_size * out_channel * batch * in_channel * 9
    return _default_gpu([D, W, out], target), [D, W, out], flops


def matmul_default_gpu(n: int, target: Any = "cuda") -> tuple[Any, list, float]:
    """C = A @ B as an unscheduled PrimFunc given DefaultGPUSchedule's shared-memory tiling for
    `target` (what relax.build does to a model's matmul); any n."""
    A, B, C = _matmul_compute(n)
    return _default_gpu([A, B, C], target), [A, B, C], 2.0 * n**3
