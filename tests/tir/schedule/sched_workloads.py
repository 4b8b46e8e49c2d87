"""Small TE workloads for the scheduler tests, each with a numpy reference, plus a runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from minitvm import te, tir
from minitvm.runtime.ndarray import array


@dataclass
class Workload:
    name: str
    args: list  # te tensors, inputs first, output last
    reference: Callable
    rtol: float = 1e-4

    def func(self) -> tir.PrimFunc:
        return te.create_prim_func(self.args)

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal([int(d) for d in t.shape]).astype(t.dtype) for t in self.args[:-1]
        ]


def matmul(n: int = 16, m: int = 12, k: int = 8) -> Workload:
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return Workload("matmul", [A, B, C], lambda a, b: a @ b)


def chain(n: int = 12, m: int = 10) -> Workload:
    """Three elementwise stages: B = A * 2, C = B + 1, D = exp-free C * C."""
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * C[i, j], name="D")
    return Workload("chain", [A, D], lambda a: (a * 2 + 1) ** 2)


def softmax(n: int = 6, m: int = 10) -> Workload:
    A = te.placeholder((n, m), name="A")
    k1 = te.reduce_axis((0, m), name="k1")
    mx = te.compute((n,), lambda i: te.max(A[i, k1], axis=k1), name="mx")
    E = te.compute((n, m), lambda i, j: te.exp(A[i, j] - mx[i]), name="E")
    k2 = te.reduce_axis((0, m), name="k2")
    S = te.compute((n,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    Y = te.compute((n, m), lambda i, j: E[i, j] / S[i], name="Y")

    def ref(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return Workload("softmax", [A, Y], ref)


def conv2d(n: int = 1, c: int = 2, h: int = 6, w: int = 6, f: int = 3, kh: int = 3) -> Workload:
    """NCHW conv with padding 1 through a padding stage."""
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((f, c, kh, kh), name="W")
    P = te.compute(
        (n, c, h + 2, w + 2),
        lambda b, ch, y, x: te.if_then_else(
            te.all(y >= 1, y < h + 1, x >= 1, x < w + 1), X[b, ch, y - 1, x - 1], 0.0
        ),
        name="P",
    )
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kh), name="rx")
    Y = te.compute(
        (n, f, h, w),
        lambda b, o, y, x: te.sum(P[b, rc, y + ry, x + rx] * W[o, rc, ry, rx], axis=[rc, ry, rx]),
        name="Y",
    )

    def ref(x, wt):
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((n, f, h, w), "float32")
        for dy in range(kh):
            for dx in range(kh):
                patch = xp[:, :, dy : dy + h, dx : dx + w]
                out += np.einsum("bchw,oc->bohw", patch, wt[:, :, dy, dx])
        return out

    return Workload("conv2d", [X, W, Y], ref)


def build_and_run(target, wl: Workload, args: list | None = None, seed: int = 0) -> None:
    """Build a PrimFunc / IRModule / tir.Schedule (or a te schedule with `args`) and compare."""
    from minitvm.driver import build

    if isinstance(target, tir.Schedule):
        target = target.mod
    mod = build(target, args, "llvm") if args is not None else build(target, target="llvm")
    inputs = wl.inputs(seed)
    expected = wl.reference(*inputs)
    out = np.zeros(expected.shape, "float32")
    nds = [array(x) for x in inputs] + [array(out)]
    mod(*nds)
    np.testing.assert_allclose(nds[-1].numpy(), expected, rtol=wl.rtol, atol=1e-4)


WORKLOADS = {"matmul": matmul, "chain": chain, "softmax": softmax, "conv2d": conv2d}


def same_numbers(
    before: tir.PrimFunc, after: tir.PrimFunc, seed: int = 0, tol: float = 1e-5
) -> None:
    """Build both functions and run them on the same random data; every buffer must agree."""
    from minitvm import build

    rng = np.random.default_rng(seed)
    args = []
    for p in before.params:
        buf = before.buffer_map[p]
        args.append(rng.standard_normal([int(s) for s in buf.shape]).astype(str(buf.dtype)))
    outs = []
    for f in (before, after):
        nds = [array(a.copy()) for a in args]
        build(f, target="llvm")(*nds)
        outs.append([x.numpy() for x in nds])
    for x, y in zip(*outs):
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)
