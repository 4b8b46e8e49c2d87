"""Vectorized conditions on OpenCL: OpenCL C has no bool vectors, so a tir bool vector is an intN
mask of -1/0 (a broadcast condition printed as `(bool4)(c)` did not compile: TVM's
test_opencl_type_casting). Each kernel is checked against numpy, for values of 8/16/32/64 bits
(select() needs a mask as wide as its values), bool buffers (stored 0/1) and bool-to-number
casts (true is 1, not the mask's -1)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te

_REASON = tvm.opencl(0).unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _run(outs, ins, arrays, lanes=4, threads=8):
    """Build [*ins, *outs] with every output's loop split into threads x lanes (vectorized)."""
    func = te.create_prim_func([*ins, *outs])
    sch = tvm.tir.Schedule(func)
    for out in outs:
        (x,) = sch.get_loops(sch.get_block(out.op.name))
        tx, vx = sch.split(x, factors=[threads, lanes])
        sch.bind(tx, "threadIdx.x")
        sch.vectorize(vx)
    f = tvm.build(sch.mod, target="opencl")
    assert f"{lanes}(" in f.imported_modules[0].get_source(), "the kernel is vectorized"
    dev = tvm.opencl(0)
    args = [tvm.nd.array(a, dev) for a in arrays]
    args += [tvm.nd.empty(o.shape, o.dtype, dev) for o in outs]
    f(*args)
    return [a.numpy() for a in args[len(arrays) :]]


def _fp64() -> bool:
    import pyopencl as cl

    return any("cl_khr_fp64" in d.extensions for p in cl.get_platforms() for d in p.get_devices())


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "uint8", "int64", "float64"])
def test_broadcast_and_vector_conditions_select_every_width(dtype):
    # TVM's test_opencl_type_casting: a condition on the thread (broadcast) and on the lane
    if dtype == "float64" and not _fp64():
        pytest.skip("the OpenCL device has no cl_khr_fp64")
    n = 32
    C = te.compute(
        (n,),
        lambda i: tvm.tir.Select(
            tvm.tir.all(i // 4 == 3, i % 3 == 1), tvm.tir.const(1, dtype), tvm.tir.const(0, dtype)
        ),
        name="C",
    )
    (got,) = _run([C], [], [])
    i = np.arange(n)
    np.testing.assert_array_equal(got, ((i // 4 == 3) & (i % 3 == 1)).astype(dtype))


def test_mask_of_one_width_selects_values_of_another():
    # float64 comparisons (a long4 mask) pick float32 and int8 values (int4 / char4 masks)
    if not _fp64():
        pytest.skip("the OpenCL device has no cl_khr_fp64")
    n = 32
    A = te.placeholder((n,), "float64", name="A")
    X = te.placeholder((n,), "float32", name="X")
    Y = te.placeholder((n,), "int8", name="Y")
    F = te.compute((n,), lambda i: tvm.tir.Select(A[i] > 0.5, X[i], -X[i]), name="F")
    G = te.compute((n,), lambda i: tvm.tir.if_then_else(A[i] < 0.25, Y[i], Y[i] * 2), name="G")
    rng = np.random.default_rng(0)
    a, x = rng.random(n), rng.standard_normal(n).astype("float32")
    y = rng.integers(-50, 50, n).astype("int8")
    f, g = _run([F, G], [A, X, Y], [a, x, y])
    np.testing.assert_array_equal(f, np.where(a > 0.5, x, -x))
    np.testing.assert_array_equal(g, np.where(a < 0.25, y, (y * 2).astype("int8")))


def test_bool_vectors_store_load_and_cast():
    n = 32
    A = te.placeholder((n,), "float32", name="A")
    M = te.compute((n,), lambda i: A[i] > 0.0, name="M")  # a bool buffer, stored 0/1
    Mask = te.placeholder((n,), "bool", name="Mask")
    X = te.placeholder((n,), "int16", name="X")
    P = te.compute((n,), lambda i: tvm.tir.Select(Mask[i], X[i], X[i] + 1), name="P")
    Q = te.compute((n,), lambda i: (A[i] < 0.0).astype("float32") * 3.0, name="Q")
    N = te.compute((n,), lambda i: tvm.tir.Not(Mask[i]), name="N")
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n).astype("float32")
    mask = rng.random(n) > 0.5
    x = rng.integers(-100, 100, n).astype("int16")
    m, p, q, neg = _run([M, P, Q, N], [A, Mask, X], [a, mask, x])
    np.testing.assert_array_equal(m, a > 0)
    np.testing.assert_array_equal(p, np.where(mask, x, x + 1))
    np.testing.assert_array_equal(q, (a < 0).astype("float32") * 3)
    np.testing.assert_array_equal(neg, ~mask)
