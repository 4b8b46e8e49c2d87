"""UnifyThreadBinding: loops bound to one thread tag in a kernel share one loop, nested and
sibling ones alike; launch_thread scopes become bound loops; unequal extents are an error. The
unified function still computes the same values on OpenCL (PoCL)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import ShapeError
from minitvm.script import tir as T
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind
from minitvm.tir.transform import UnifyThreadBinding

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


@T.prim_func
def two_stages(
    A: T.Buffer((8, 64), "float32"),
    B: T.Buffer((8, 64), "float32"),
    C: T.Buffer((8, 64), "float32"),
):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in T.thread_binding(8, "blockIdx.x"):
        for t0 in T.thread_binding(16, "threadIdx.x"):
            for j in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    vj = T.axis.spatial(64, t0 * 4 + j)
                    B[vi, vj] = A[vi, vj] * T.float32(2)
        for t1 in T.thread_binding(16, "threadIdx.x"):
            for j in range(4):
                with T.block("C"):
                    vi = T.axis.spatial(8, i)
                    vj = T.axis.spatial(64, t1 * 4 + j)
                    C[vi, vj] = B[vi, vj] + T.float32(1)


def _bound_loops(func):
    found = []
    post_order_visit(
        func.body,
        lambda n: (
            found.append(n.thread_binding.thread_tag)
            if isinstance(n, For) and n.kind == ForKind.THREAD_BINDING
            else None
        ),
    )
    return sorted(found)


def test_sibling_loops_of_one_tag_share_one_loop():
    assert _bound_loops(two_stages) == ["blockIdx.x", "threadIdx.x", "threadIdx.x"]
    out = UnifyThreadBinding()(tvm.IRModule({"main": two_stages}))["main"]
    assert _bound_loops(out) == ["blockIdx.x", "threadIdx.x"]


def test_launch_thread_scopes_become_bound_loops():
    @T.prim_func
    def func(A: T.Buffer((64,), "float32")):
        tx = T.env_thread("threadIdx.x")
        T.launch_thread(tx, 64)
        A[tx] = T.float32(1)

    out = UnifyThreadBinding()(tvm.IRModule({"main": func}))["main"]
    assert _bound_loops(out) == ["threadIdx.x"]


def test_unequal_extents_of_one_tag_are_an_error():
    @T.prim_func
    def func(A: T.Buffer((64,), "float32")):
        for b in T.thread_binding(1, "blockIdx.x"):  # one kernel: its threads launch once
            for t0 in T.thread_binding(64, "threadIdx.x"):
                A[t0] = T.float32(1)
            for t1 in T.thread_binding(32, "threadIdx.x"):
                A[t1] = T.float32(2)

    with pytest.raises(ShapeError, match=r"loops bound to 'threadIdx.x' have extents 64 and 32"):
        UnifyThreadBinding()(tvm.IRModule({"main": func}))


def test_separate_kernels_may_launch_different_extents():
    @T.prim_func
    def func(A: T.Buffer((64,), "float32")):
        for t0 in T.thread_binding(64, "threadIdx.x"):
            A[t0] = T.float32(1)
        for t1 in T.thread_binding(32, "threadIdx.x"):
            A[t1] = T.float32(2)

    out = UnifyThreadBinding()(tvm.IRModule({"main": func}))["main"]
    assert _bound_loops(out) == ["threadIdx.x", "threadIdx.x"]


def test_legacy_te_functions_are_left_alone():
    func = two_stages.with_attr("from_legacy_te_schedule", True)
    out = UnifyThreadBinding()(tvm.IRModule({"main": func}))["main"]
    assert out.same_as(func) or out is func


@requires_opencl
def test_unified_function_matches_numpy_on_opencl():
    mod = UnifyThreadBinding()(tvm.IRModule({"main": two_stages}))
    f = tvm.build(mod, target="opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(0).random((8, 64), dtype="float32")
    b, c = (tvm.nd.empty((8, 64), "float32", dev) for _ in range(2))
    f(tvm.nd.array(a, dev), b, c)
    np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)
