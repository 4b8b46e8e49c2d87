"""OpenCL C computes char/short arithmetic in int: the generated code casts each result back to
its TIR type, so values wrap like TIR's and min/max overloads are not ambiguous (TVM's
test_opencl_max / test_opencl_ternary_expression cases, checked against numpy on PoCL)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")
NARROW = ["int8", "uint8", "int16", "uint16"]


def _build(n, dtype, fcompute):
    A = te.placeholder((n,), name="A", dtype=dtype)
    C = te.compute((n,), lambda i: fcompute(A, i), name="C")
    sch = tvm.tir.Schedule(te.create_prim_func([A, C]))
    (x,) = sch.get_loops(sch.get_block("C"))
    sch.bind(x, "threadIdx.x")
    return tvm.build(sch.mod, target="opencl")


def _run(f, a, dtype):
    dev = tvm.opencl(0)
    c = tvm.nd.empty(a.shape, dtype, dev)
    f(tvm.nd.array(a, dev), c)
    return c.numpy()


@requires_opencl
@pytest.mark.parametrize("dtype", NARROW)
def test_max_of_narrow_int_arithmetic_and_ternary_compiles_and_matches(dtype):
    def body(A, i):
        one, three = tvm.tir.const(1, dtype), tvm.tir.const(3, dtype)
        two = tvm.tir.const(2, dtype)  # max(char constant, promoted int) was ambiguous
        return te.max(two, te.max(A[i] + one, tvm.tir.if_then_else(A[i] > 2, one, three)))

    a = np.arange(8).astype(dtype)
    got = _run(_build(8, dtype, body), a, dtype)
    want = np.maximum(2, np.maximum(a + 1, np.where(a > 2, 1, 3))).astype(dtype)
    np.testing.assert_array_equal(got, want)


@requires_opencl
@pytest.mark.parametrize("dtype,big", [("int8", 127), ("int16", 32767)])
def test_narrow_int_sum_wraps_before_it_is_compared(dtype, big):
    # TIR's int8 127 + 1 is -128; C's promoted int sum is 128 and would compare positive
    def body(A, i):
        wrapped = A[i] + tvm.tir.const(1, dtype)
        return tvm.tir.Select(wrapped < 0, tvm.tir.const(1, dtype), tvm.tir.const(0, dtype))

    a = np.array([big, 0, -5, big - 1], dtype)
    got = _run(_build(4, dtype, body), a, dtype)
    np.testing.assert_array_equal(got, np.array([1, 0, 1, 0], dtype))
