"""ThreadSync: no barrier where each thread reads back the shared element it wrote itself (the
index uses thread indices only), one where the index also depends on a loop or another thread
wrote it, and ThreadSync("shared.dyn") treating every dynamic shared buffer as one memory
(TVM's test_sync_shared_dyn). The numpy checks run the kernels on OpenCL (PoCL)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.script import tir as T
from minitvm.tir.transform import ThreadSync

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _syncs(func, scope="shared"):
    return str(ThreadSync(scope)(tvm.IRModule({"main": func}))["main"]).count(
        f'T.tvm_storage_sync("{scope}")'
    )


def test_own_element_read_back_needs_no_barrier():
    @T.prim_func
    def func(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        tx = T.launch_thread("threadIdx.x", 16)
        S = T.allocate([16], "float32", "shared")
        S_1 = T.Buffer((16,), data=S, scope="shared")
        S_1[tx] = A[tx]
        B[tx] = S_1[tx] * T.float32(2)

    assert _syncs(func) == 0


def test_neighbour_read_needs_a_barrier():
    @T.prim_func
    def func(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        tx = T.launch_thread("threadIdx.x", 16)
        S = T.allocate([16], "float32", "shared")
        S_1 = T.Buffer((16,), data=S, scope="shared")
        S_1[tx] = A[tx]
        B[tx] = S_1[(tx + 1) % 16]

    assert _syncs(func) == 1


def test_index_over_a_loop_is_not_a_threads_own_element():
    # iteration k reads S[tx + k], which thread tx + k wrote in iteration 0: a barrier is needed
    @T.prim_func
    def func(A: T.Buffer((18,), "float32"), B: T.Buffer((16,), "float32")):
        tx = T.launch_thread("threadIdx.x", 16)
        S = T.allocate([18], "float32", "shared")
        S_1 = T.Buffer((18,), data=S, scope="shared")
        for k in range(2):
            S_1[tx + k] = A[tx + k]
            B[tx] = B[tx] + S_1[tx + k]

    assert _syncs(func) >= 1


def test_dynamic_shared_buffers_are_one_memory():
    # B and D are different buffers, but both live in the one dynamic allocation: writing D
    # after other threads read B must wait for them
    @T.prim_func
    def func(A: T.Buffer((16,), "float32"), E: T.Buffer((16,), "float32")):
        tx = T.launch_thread("threadIdx.x", 16)
        B = T.allocate([24], "float32", "shared.dyn")
        D = T.allocate([16], "float32", "shared.dyn")
        B_1 = T.Buffer((24,), data=B, scope="shared.dyn")
        D_1 = T.Buffer((16,), data=D, scope="shared.dyn")
        B_1[tx] = A[tx]
        D_1[tx] = B_1[tx]
        E[tx] = D_1[tx]

    @T.prim_func
    def static(A: T.Buffer((16,), "float32"), E: T.Buffer((16,), "float32")):
        tx = T.launch_thread("threadIdx.x", 16)
        B = T.allocate([24], "float32", "shared")
        D = T.allocate([16], "float32", "shared")
        B_1 = T.Buffer((24,), data=B, scope="shared")
        D_1 = T.Buffer((16,), data=D, scope="shared")
        B_1[tx] = A[tx]
        D_1[tx] = B_1[tx]
        E[tx] = D_1[tx]

    assert _syncs(func, "shared.dyn") == 1
    assert _syncs(static, "shared") == 0
    assert _syncs(func, "shared") == 1  # "shared" orders the dynamic buffers too


def _build_shared(index_fn):
    """B[i] = A[index_fn(i)] through a shared tile under 64 threads (TE, lowered for OpenCL)."""
    from minitvm import te

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[index_fn(i)], name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], bx)
    fetch, _ = s[AS].split(AS.op.axis[0], nparts=64)
    s[AS].bind(fetch, te.thread_axis("threadIdx.x"))
    return tvm.build(s, [A, B], target="opencl"), s, A, B


@requires_opencl
@pytest.mark.parametrize(
    "name,index_fn,barriers",
    [("own", lambda i: i, 0), ("reversed", lambda i: 63 - i, 1)],
)
def test_shared_tile_results_match_numpy_with_and_without_barrier(name, index_fn, barriers):
    f, _s, _A, _B = _build_shared(index_fn)
    assert f.imported_modules[0].get_source().count("barrier(") == barriers
    dev = tvm.opencl(0)
    a = np.random.default_rng(3).random(64, dtype="float32")
    b = tvm.nd.empty((64,), "float32", dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_array_equal(b.numpy(), a[[index_fn(i) for i in range(64)]])
