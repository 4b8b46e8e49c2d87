"""Small TE workloads for tuning tests (TVM's `meta_schedule.testing.te_workload` names).

Each function returns the workload's tensors, inputs first; `create_te_workload(name, i)`
makes the PrimFunc of the i-th shape of a named workload. Built here: GMM, NRM, SFM.
"""

from __future__ import annotations

from ... import te, topi
from ...error import ArgumentError
from ...tir import PrimFunc


def matmul(n: int, m: int, k: int, in_dtype: str = "float32", out_dtype: str = "float32"):
    """C[i, j] = sum_k A[i, k] * B[k, j], accumulated in `out_dtype`."""
    a = te.placeholder((n, k), name="A", dtype=in_dtype)
    b = te.placeholder((k, m), name="B", dtype=in_dtype)
    r = te.reduce_axis((0, k), name="k")
    c = te.compute(
        (n, m),
        lambda i, j: te.sum(a[i, r].astype(out_dtype) * b[r, j].astype(out_dtype), axis=[r]),
        name="C",
    )
    return (a, b, c)


def matmul_relu(n: int, m: int, k: int, in_dtype: str = "float32", out_dtype: str = "float32"):
    """relu(matmul(A, B)), the relu as topi.nn.relu."""
    a, b, c = matmul(n, m, k, in_dtype, out_dtype)
    return (a, b, topi.nn.relu(c))


def batch_matmul_nkkm(b: int, n: int, m: int, k: int, in_dtype="float32", out_dtype="float32"):
    """Z[b, i, j] = sum_k X[b, i, k] * Y[b, k, j]."""
    x = te.placeholder((b, n, k), name="X", dtype=in_dtype)
    y = te.placeholder((b, k, m), name="Y", dtype=in_dtype)
    r = te.reduce_axis((0, k), name="k")
    z = te.compute(
        (b, n, m),
        lambda q, i, j: te.sum(x[q, i, r].astype(out_dtype) * y[q, r, j].astype(out_dtype), r),
        name="Z",
    )
    return (x, y, z)


def norm_bmn(b: int, m: int, n: int):
    """D[b] = sqrt(sum of A[b]**2) over the last two dims."""
    a = te.placeholder((b, m, n), name="A")
    i = te.reduce_axis((0, m), name="i")
    j = te.reduce_axis((0, n), name="j")
    c = te.compute((b,), lambda q: te.sum(a[q, i, j] * a[q, i, j], axis=[i, j]), name="C")
    d = te.compute((b,), lambda q: te.sqrt(c[q]), name="D")
    return (a, d)


def softmax_mn(m: int, n: int):
    """Softmax of A over its last axis (topi.nn.softmax)."""
    a = te.placeholder((m, n), name="A")
    return (a, topi.nn.softmax(a, axis=1))


# name -> (workload, argument tuples); the shapes of TVM's tuning benchmarks
CONFIGS = {
    "GMM": (
        batch_matmul_nkkm,
        [(1, 128, 128, 128), (1, 512, 32, 512), (1, 512, 512, 512), (1, 1024, 1024, 1024)],
    ),
    "NRM": (norm_bmn, [(1, 256, 256), (1, 512, 512), (1, 1024, 1024), (1, 4096, 1024)]),
    "SFM": (softmax_mn, [(256, 256), (512, 512), (1024, 1024), (2048, 2048)]),
}


def create_te_workload(name: str, idx: int) -> PrimFunc:
    """The PrimFunc of shape `idx` of workload `name`: `create_te_workload("GMM", 0)`."""
    if name not in CONFIGS:
        raise ArgumentError(
            f"create_te_workload: workload {name!r} is not built here; known: {sorted(CONFIGS)}"
        )
    workload, shapes = CONFIGS[name]
    return te.create_prim_func(list(workload(*shapes[idx])))
