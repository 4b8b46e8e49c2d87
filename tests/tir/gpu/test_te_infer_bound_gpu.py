"""te.schedule.InferBound under GPU bindings: a "shared" stage spans every threadIdx and vthread
of its block, a "local" one a single thread, and a chain of cache_reads (shared, then local)
is bounded through to the tensor the reader names, as TVM's bound inference does."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _vthread_copy(n=64):
    """B = A * 2 over blocks of 32: 2 vthreads x 8 threads x 2 items, A cached in shared
    (fetched cooperatively by the 8 threads) and then in local, both at the thread loop."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    bx, rest = s[B].split(B.op.axis[0], factor=32)
    vx, rest = s[B].split(rest, nparts=2)
    tx, _ = s[B].split(rest, nparts=8)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(vx, te.thread_axis((0, 2), "vthread", name="vx"))
    s[B].bind(tx, te.thread_axis((0, 8), "threadIdx.x"))
    s[AA].compute_at(s[B], tx)
    s[AL].compute_at(s[B], tx)
    fetch, _ = s[AA].split(AA.op.axis[0], nparts=8)
    s[AA].bind(fetch, te.thread_axis((0, 8), "threadIdx.x"))
    return s, A, B, AA, AL


def _extents(bounds, tensor):
    return [int(bounds[iv].extent) for iv in tensor.op.axis]


def test_shared_spans_threads_and_vthreads_local_one_thread():
    s, _A, _B, AA, AL = _vthread_copy()
    bounds = tvm.te.schedule.InferBound(s)
    assert _extents(bounds, AA) == [32]  # 2 vthreads x 8 threads x 2 items (was 16: no vthread)
    assert _extents(bounds, AL) == [2]  # one thread's items (was 32: the chain was not followed)


def test_lowered_shapes_agree_with_infer_bound():
    s, A, B, _AA, _AL = _vthread_copy()
    text = str(tvm.lower(s, [A, B]))
    assert 'A_shared = T.decl_buffer((32,), "float32", scope="shared")' in text
    assert 'A_shared_local = T.decl_buffer((2,), "float32", scope="local")' in text


@requires_opencl
@pytest.mark.parametrize("n", [64, 128])
def test_vthread_shared_local_chain_matches_numpy_on_opencl(n):
    s, A, B, _, _ = _vthread_copy(n)
    f = tvm.build(s, [A, B], target="opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(n).random(n, dtype="float32")
    b = tvm.nd.empty((n,), "float32", dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2)
