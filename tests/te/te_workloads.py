"""TE workloads shared by the TE tests, each paired with a numpy reference.

A builder takes sizes (ints or te.var's) and returns a `Workload`: the argument tensors
(inputs first, output last), a numpy reference and a function giving the concrete input
shapes for a choice of the symbolic sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from minitvm import te, tir


@dataclass
class Workload:
    name: str
    args: list  # te tensors: inputs..., output
    reference: Callable  # numpy inputs -> numpy output
    input_shapes: Callable  # dict of symbolic sizes -> list of input shapes
    inputs_fn: Callable | None = None  # (shapes, rng) -> inputs, for inputs needing structure
    rtol: float = 1e-5
    atol: float = 1e-5

    def inputs(self, sizes: dict, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        shapes = self.input_shapes(sizes)
        if self.inputs_fn is not None:
            return self.inputs_fn(shapes, rng)
        dtypes = [t.dtype for t in self.args[: len(shapes)]]
        return [rng.standard_normal(s).astype(d) for s, d in zip(shapes, dtypes)]


def _size(x, sizes: dict) -> int:
    return sizes[x.name] if isinstance(x, tir.Var) else int(x)


def matmul(n, m, k, trans_a: bool, trans_b: bool, dtype: str = "float32") -> Workload:
    """C = op(A) @ op(B), op = transpose or identity; one compute for all four cases."""
    A = te.placeholder((k, n) if trans_a else (n, k), dtype, name="A")
    B = te.placeholder((m, k) if trans_b else (k, m), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    a_at = (lambda i, r: (r, i)) if trans_a else (lambda i, r: (i, r))
    b_at = (lambda r, j: (j, r)) if trans_b else (lambda r, j: (r, j))
    C = te.compute((n, m), lambda i, j: te.sum(A[a_at(i, r)] * B[b_at(r, j)], axis=r), name="C")

    def reference(a, b):
        return (a.T if trans_a else a) @ (b.T if trans_b else b)

    def shapes(sizes):
        nn, mm, kk = (_size(x, sizes) for x in (n, m, k))
        return [(kk, nn) if trans_a else (nn, kk), (mm, kk) if trans_b else (kk, mm)]

    return Workload(f"matmul_{int(trans_a)}{int(trans_b)}", [A, B, C], reference, shapes, rtol=1e-4)


def softmax(n, m, dtype: str = "float32") -> Workload:
    """Numerically stable softmax over rows: max, exp, sum, divide as separate computes."""
    X = te.placeholder((n, m), dtype, name="X")
    j1 = te.reduce_axis((0, m), name="j")
    row_max = te.compute((n,), lambda i: te.max(X[i, j1], axis=j1), name="row_max")
    e = te.compute((n, m), lambda i, j: te.exp(X[i, j] - row_max[i]), name="exp")
    j2 = te.reduce_axis((0, m), name="j")
    total = te.compute((n,), lambda i: te.sum(e[i, j2], axis=j2), name="row_sum")
    out = te.compute((n, m), lambda i, j: e[i, j] / total[i], name="softmax")

    def reference(x):
        z = np.exp(x - x.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    return Workload("softmax", [X, out], reference, lambda s: [(_size(n, s), _size(m, s))])


def softmax_cross_entropy(n, m, dtype: str = "float32") -> Workload:
    """The dlsys assignment's loss: mean over rows of -sum(y * log softmax(x)); shape (1,)."""
    X = te.placeholder((n, m), dtype, name="A")
    Y = te.placeholder((n, m), dtype, name="A_")
    j = te.reduce_axis((0, m), name="softmax_j")
    max_x = te.compute((n,), lambda i: te.max(X[i, j], axis=j), name="max_x")
    e_x = te.compute((n, m), lambda i, jj: te.exp(X[i, jj] - max_x[i]), name="e_x")
    k = te.reduce_axis((0, m), name="softmax_k")
    ex_sum = te.compute((n,), lambda i: te.sum(e_x[i, k], axis=k), name="ex_sum")
    log_sm = te.compute((n, m), lambda i, jj: te.log(e_x[i, jj] / ex_sum[i]), name="log")
    jr = te.reduce_axis((0, m), name="j")
    row = te.compute((n,), lambda i: te.sum(-Y[i, jr] * log_sm[i, jr], axis=jr), name="row_ce")
    r = te.reduce_axis((0, n), name="k")
    loss = te.compute((1,), lambda _: te.sum(row[r] / n, axis=r), name="C")

    def reference(x, y):
        z = x - x.max(axis=1, keepdims=True)
        log_softmax = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return np.array([np.mean(-(y * log_softmax).sum(axis=1))], dtype=x.dtype)

    def inputs(shapes, rng):
        x = rng.standard_normal(shapes[0]).astype(dtype)
        labels = rng.integers(0, shapes[1][1], shapes[1][0])
        y = np.eye(shapes[1][1], dtype=dtype)[labels]
        return [x, y]

    shape = lambda s: [(_size(n, s), _size(m, s))] * 2
    return Workload("softmax_cross_entropy", [X, Y, loss], reference, shape, inputs, rtol=1e-4)


def conv2d_nchw(
    batch, in_c, size, out_c, kernel: int, pad: int, dtype: str = "float32"
) -> Workload:
    """Stride-1 NCHW convolution; padding is a compute written with te.if_then_else."""
    X = te.placeholder((batch, in_c, size, size), dtype, name="X")
    W = te.placeholder((out_c, in_c, kernel, kernel), dtype, name="W")
    padded = size + 2 * pad

    def pad_value(b, c, y, x):
        inside = tir.all(y >= pad, y < size + pad, x >= pad, x < size + pad)
        return te.if_then_else(inside, X[b, c, y - pad, x - pad], tir.const(0.0, dtype))

    Xp = te.compute((batch, in_c, padded, padded), pad_value, name="X_pad")
    out_size = padded - kernel + 1
    rc = te.reduce_axis((0, in_c), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    Y = te.compute(
        (batch, out_c, out_size, out_size),
        lambda b, f, y, x: te.sum(Xp[b, rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv",
    )

    def reference(x, w):
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        win = np.lib.stride_tricks.sliding_window_view(xp, (kernel, kernel), axis=(2, 3))
        return np.einsum("bcyxuv,fcuv->bfyx", win, w).astype(dtype)

    def shapes(s):
        b, c, hw = _size(batch, s), _size(in_c, s), _size(size, s)
        return [(b, c, hw, hw), (_size(out_c, s), c, kernel, kernel)]

    return Workload("conv2d_nchw", [X, W, Y], reference, shapes, rtol=1e-4, atol=1e-4)


def bias_add_cast(n, m) -> Workload:
    """Broadcasting and casts: float64 out = float64(A[i, j] + b[j]) * int32 scale[i]."""
    A = te.placeholder((n, m), "float32", name="A")
    b = te.placeholder((m,), "float32", name="b")
    s = te.placeholder((n,), "int32", name="s")
    out = te.compute((n, m), lambda i, j: (A[i, j] + b[j]).astype("float64") * s[i], name="out")

    def reference(a, bb, ss):
        return (a + bb[None, :]).astype("float64") * ss[:, None]

    def inputs(shapes, rng):
        return [
            rng.standard_normal(shapes[0]).astype("float32"),
            rng.standard_normal(shapes[1]).astype("float32"),
            rng.integers(-5, 5, shapes[2]).astype("int32"),
        ]

    shapes = lambda z: [(_size(n, z), _size(m, z)), (_size(m, z),), (_size(n, z),)]
    return Workload("bias_add_cast", [A, b, s, out], reference, shapes, inputs)


def reductions(n, m, p) -> Workload:
    """sum over two axes, max and min over one, combined in a final compute."""
    A = te.placeholder((n, m, p), "float32", name="A")
    j = te.reduce_axis((0, m), name="j")
    k = te.reduce_axis((0, p), name="k")
    total = te.compute((n,), lambda i: te.sum(A[i, j, k], axis=[j, k]), name="total")
    k2 = te.reduce_axis((0, p), name="k")
    hi = te.compute((n, m), lambda i, jj: te.max(A[i, jj, k2], axis=k2), name="hi")
    lo = te.compute((n, m), lambda i, jj: te.min(A[i, jj, k2], axis=k2), name="lo")
    out = te.compute((n, m), lambda i, jj: hi[i, jj] - lo[i, jj] + total[i], name="out")

    def reference(a):
        return a.max(axis=2) - a.min(axis=2) + a.sum(axis=(1, 2))[:, None]

    shapes = lambda z: [(_size(n, z), _size(m, z), _size(p, z))]
    return Workload("reductions", [A, out], reference, shapes, rtol=1e-4, atol=1e-4)
