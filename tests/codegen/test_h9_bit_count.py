"""tir.popcount and tir.clz on the CPU (LLVM ctpop/ctlz) and in OpenCL kernels, against Python's
bit counts: clz(0) is the bit width, negative numbers count their two's-complement bits."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")

DTYPES = ["uint8", "int16", "uint32", "int32", "uint64", "int64"]


def _inputs(dtype: str, n: int) -> np.ndarray:
    info = np.iinfo(dtype)
    a = np.random.default_rng(0).integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    a[:3] = [0, info.max, info.min]
    return a


def _reference(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bits = a.dtype.itemsize * 8
    unsigned = [int(x) % (1 << bits) for x in a]
    popcount = np.array([bin(u).count("1") for u in unsigned])
    clz = np.array([bits - u.bit_length() for u in unsigned])
    return popcount, clz


def _compute(dtype: str, n: int):
    a = te.placeholder((n,), dtype=dtype, name="A")
    p = te.compute(a.shape, lambda i: tvm.tir.popcount(a[i]), name="P")
    c = te.compute(a.shape, lambda i: tvm.tir.clz(a[i]), name="C")
    return a, p, c


@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_llvm_popcount_and_clz_match_python(dtype, vector):
    n = 16
    a, p, c = _compute(dtype, n)
    s = te.create_schedule([p.op, c.op])
    if vector:
        s[p].vectorize(p.op.axis[0])
        s[c].vectorize(c.op.axis[0])
    f = tvm.build(s, [a, p, c], "llvm")
    data = _inputs(dtype, n)
    out_p, out_c = tvm.nd.array(np.zeros(n, p.dtype)), tvm.nd.array(np.zeros(n, c.dtype))
    f(tvm.nd.array(data), out_p, out_c)
    ref_p, ref_c = _reference(data)
    np.testing.assert_array_equal(out_p.numpy(), ref_p)
    np.testing.assert_array_equal(out_c.numpy(), ref_c)


@requires_opencl
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint8"])
def test_opencl_popcount_and_clz_match_python(dtype):
    n = 64
    a, p, c = _compute(dtype, n)
    func = te.create_prim_func([a, p, c])
    sch = tvm.tir.Schedule(func)
    for block in ("P", "C"):
        (loop,) = sch.get_loops(sch.get_block(block))
        sch.bind(loop, "threadIdx.x")
    f = tvm.build(sch.mod, target="opencl")
    dev = tvm.opencl(0)
    data = _inputs(dtype, n)
    out_p = tvm.nd.array(np.zeros(n, p.dtype), dev)
    out_c = tvm.nd.array(np.zeros(n, c.dtype), dev)
    f(tvm.nd.array(data, dev), out_p, out_c)
    ref_p, ref_c = _reference(data)
    np.testing.assert_array_equal(out_p.numpy(), ref_p)
    np.testing.assert_array_equal(out_c.numpy(), ref_c)


def test_popcount_of_a_float_is_refused():
    a = te.placeholder((4,), dtype="float32", name="A")
    p = te.compute(a.shape, lambda i: tvm.tir.popcount(a[i]), name="P")
    with pytest.raises(tvm.error.TVMError, match="popcount"):
        tvm.build(te.create_schedule(p.op), [a, p], "llvm")
