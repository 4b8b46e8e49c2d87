"""A reduction over an empty axis writes the reducer's identity (issue 10, item 8)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.script import tir as T


def _run(s, args, *arrays):
    f = tvm.build(s, args, "llvm")
    f(*arrays)
    return arrays[-1]


@pytest.mark.parametrize("axis", [(0, 0), (5, 2)])
def test_sum_over_an_empty_reduce_axis_is_zero(axis):
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis(axis, name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    out = _run(te.create_schedule(B.op), [A, B], np.ones((4, 8), "float32"), np.full(4, 7, "float32"))
    np.testing.assert_array_equal(out, np.sum(np.ones((4, 0), "float32"), axis=1))


@pytest.mark.parametrize(
    "dtype, identity", [("float32", -np.inf), ("int32", np.iinfo("int32").min)]
)
def test_max_over_an_empty_reduce_axis_is_the_reducer_identity(dtype, identity):
    A = te.placeholder((4, 8), dtype=dtype, name="A")
    k = te.reduce_axis((5, 2), name="k")
    B = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="B")
    out = _run(te.create_schedule(B.op), [A, B], np.ones((4, 8), dtype), np.full(4, 7, dtype))
    np.testing.assert_array_equal(out, np.full(4, identity, dtype))


def _symbolic_matmul():
    n, m, K = te.var("n"), te.var("m"), te.var("K")
    A = te.placeholder((n, K), name="A")
    B = te.placeholder((K, m), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


@pytest.mark.parametrize("K", [0, 5])
def test_symbolic_reduction_extent_zero_at_run_time(K):
    A, B, C = _symbolic_matmul()
    s = te.create_schedule(C.op)
    rng = np.random.default_rng(0)
    a, b = rng.random((3, K), "float32"), rng.random((K, 20), "float32")
    out = _run(s, [A, B, C], a, b, np.full((3, 20), 7, "float32"))
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


@pytest.mark.parametrize("K", [0, 9])
def test_reduction_loop_outside_vectorized_spatial_loops_with_empty_extent(K):
    A, B, C = _symbolic_matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    jo, ji = s[C].split(j, factor=8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(i, jo, ko, ki, ji)
    s[C].vectorize(ji)
    rng = np.random.default_rng(1)
    a, b = rng.random((3, K), "float32"), rng.random((K, 16), "float32")
    out = _run(s, [A, B, C], a, b, np.full((3, 16), 7, "float32"))
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


def test_tvmscript_reduction_over_range_zero_runs_the_init():
    @T.prim_func
    def row_sum(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 0):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    f = tvm.build(row_sum, target="llvm")
    b = np.full(4, 7, "float32")
    f(np.ones((4, 8), "float32"), b)
    np.testing.assert_array_equal(b, np.zeros(4, "float32"))
