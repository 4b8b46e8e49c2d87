"""The seed homework's GPU schedules, built with tvm.build(..., "opencl") and run on the OpenCL
device (PoCL here): the vector-add bind schedule, the HWCN convolution schedule of
benchmarks/gpu.py at reduced sizes, and the shared-memory matmul; all match numpy/torch."""

import importlib.util
import pathlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te

_REASON = tvm.opencl(0).unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _bench():
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "gpu.py"
    spec = importlib.util.spec_from_file_location("bench_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seed_vector_add_bind_schedule():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], "opencl", name="double")
    assert "get_group_id(0)" in f.get_source()
    dev = tvm.opencl(0)
    for size in (1, 64, 1000):
        a = np.random.default_rng(size).random(size, dtype="float32")
        b = tvm.nd.empty((size,), "float32", dev)
        f(tvm.nd.array(a, dev), b)
        np.testing.assert_array_equal(b.numpy(), a * 2)


def test_seed_hwcn_convolution_schedule_at_reduced_size():
    s, args, _ = _bench().conv_hwcn(64, in_channel=16, out_channel=64, in_size=6)
    f = tvm.build(s, args, "opencl", name="conv")
    src = f.get_source()
    assert "__local float Apad_shared" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src
    assert "vload4" in src  # the vectorized cooperative fetch
    rng = np.random.default_rng(0)
    a, w = rng.random((6, 6, 16, 64), dtype="float32"), rng.random((3, 3, 16, 64), dtype="float32")
    dev = tvm.opencl(0)
    b = tvm.nd.empty((6, 6, 64, 64), "float32", dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(w, dev), b)
    apad = np.pad(a, ((1, 1), (1, 1), (0, 0), (0, 0)))
    ref = sum(np.einsum("hwcn,cf->hwfn", apad[y : y + 6, x : x + 6], w[y, x])
              for y in range(3) for x in range(3))  # fmt: skip
    np.testing.assert_allclose(b.numpy(), ref, rtol=1e-4)


def test_shared_memory_matmul_schedule():
    s, args, _ = _bench().matmul_shared(128)
    f = tvm.build(s, args, "opencl", name="mm")
    rng = np.random.default_rng(1)
    x, y = rng.random((128, 128), dtype="float32"), rng.random((128, 128), dtype="float32")
    dev = tvm.opencl(0)
    z = tvm.nd.empty((128, 128), "float32", dev)
    f(tvm.nd.array(x, dev), tvm.nd.array(y, dev), z)
    np.testing.assert_allclose(z.numpy(), x @ y, rtol=1e-4)
