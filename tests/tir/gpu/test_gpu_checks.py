"""Issue 16 Deliver 1's checks beyond test_gpu_lowering.py: launch sizes that read device memory
(a bound extent of A[0], a host let of A[0]) are refused, where they were read from a device
pointer on the host; a vthread loop around the thread loops is a loop inside the kernel (it was
called unbound), and a vthread with no real thread loop is refused by what it is; nested loops
of one thread axis are one thread index (a cooperative fetch), so unequal extents or a body that
uses both indices (only the diagonal ran) are refused."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.driver import lower_gpu
from minitvm.error import BuildError
from minitvm.script import tir as T
from minitvm.target import Target

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def test_error_bound_extent_reads_device_memory():
    @T.prim_func
    def main(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "float32")):
        for b in T.thread_binding(2, thread="blockIdx.x"):
            for t in T.thread_binding(A[0], thread="threadIdx.x"):
                B[t] = T.float32(1)

    with pytest.raises(
        BuildError, match=r"extent A\[0\] of the loop bound to 'threadIdx.x' reads buffer 'A'"
    ):
        lower_gpu([main], Target("opencl"))
    with pytest.raises(BuildError, match="reads buffer 'A', which is in device memory"):
        tvm.build(main, target="cuda")


def test_error_host_value_reads_device_memory():
    @T.prim_func
    def main(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "float32")):
        n: T.int32 = A[0]
        for t in T.thread_binding(n, thread="threadIdx.x"):
            B[t] = T.float32(1)

    with pytest.raises(
        BuildError, match=r"the value of 'n' \(A\[0\]\) reads buffer 'A' outside every kernel"
    ):
        lower_gpu([main], Target("opencl"))


def _vthread_outside():
    @T.prim_func
    def main(a: T.handle):
        m = T.int32()
        A = T.match_buffer(a, (m, 64), "float32")
        for v in T.thread_binding(m, thread="vthread.x"):
            for t in T.thread_binding(64, thread="threadIdx.x"):
                A[v, t] = T.Cast("float32", v * 64 + t)

    return main


def test_vthread_around_the_thread_loops_is_a_loop_of_the_kernel():
    mod = lower_gpu([_vthread_outside()], Target("opencl"))
    host = mod["main"]
    assert not [s for s in _fors(host.body)], "nothing but the launch on the host"
    loops = _fors(mod["main_kernel"].body)
    assert [lp.kind for lp in loops] == [tvm.tir.ForKind.SERIAL]
    assert loops[0].loop_var.name == "v"


@requires_opencl
def test_vthread_around_the_thread_loops_matches_numpy_on_opencl():
    f = tvm.build(_vthread_outside(), target="opencl")
    out = tvm.nd.empty((3, 64), "float32", tvm.opencl(0))
    f(out)
    np.testing.assert_array_equal(out.numpy(), np.arange(192, dtype="float32").reshape(3, 64))


def test_error_vthread_without_thread_loops():
    @T.prim_func
    def main(A: T.Buffer((4,), "float32")):
        for v in T.thread_binding(4, thread="vthread"):
            A[v] = T.float32(1)

    with pytest.raises(
        BuildError, match=r"loop 'v' is bound to the virtual thread 'vthread' but no loop"
    ):
        lower_gpu([main], Target("opencl"))


def _fors(stmt):
    out = []
    tvm.tir.functor.post_order_visit(
        stmt, lambda n: out.append(n) if isinstance(n, tvm.tir.For) else None
    )
    return out


def test_error_nested_loops_of_one_thread_axis_with_unequal_extents():
    # TVM's test_wrong_bind: lowered, only A[t, t] for t < 15 was copied
    from minitvm import te

    A = te.placeholder((16, 15), name="A")
    B = te.compute((16, 15), lambda i, j: A[i, j], name="B")
    s = te.create_schedule([B.op])
    s[B].bind(s[B].op.axis[0], te.thread_axis("threadIdx.x"))
    s[B].bind(s[B].op.axis[1], te.thread_axis("threadIdx.x"))
    with pytest.raises(
        BuildError,
        match=r"loop 'j' \(extent 15\) is bound to 'threadIdx.x' inside loop 'i' \(extent 16\)",
    ):
        tvm.build(s, [A, B], "opencl")


def test_error_nested_loops_of_one_thread_axis_whose_body_uses_both():
    @T.prim_func
    def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
        for i in T.thread_binding(16, thread="threadIdx.x"):
            for j in T.thread_binding(16, thread="threadIdx.x"):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj]

    with pytest.raises(BuildError, match=r"its body uses both.*only the pairs with j == i"):
        lower_gpu([main], Target("opencl"))


@requires_opencl
def test_nested_loop_of_one_thread_axis_is_the_same_thread_in_a_cooperative_fetch():
    # the inner loop (a fetch into shared memory) does not use the outer thread index: allowed
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for b in T.thread_binding(2, thread="blockIdx.x"):
            for t in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("blk"):
                    S = T.alloc_buffer((32,), "float32", scope="shared")
                    for f in T.thread_binding(32, thread="threadIdx.x"):
                        S[f] = A[b * 32 + f]
                    B[b * 32 + t] = S[31 - t]

    f = tvm.build(main, target="opencl")
    a = np.arange(64, dtype="float32")
    dev = tvm.opencl(0)
    out = tvm.nd.empty((64,), "float32", dev)
    f(tvm.nd.array(a, dev), out)
    np.testing.assert_array_equal(out.numpy(), a.reshape(2, 32)[:, ::-1].ravel())


def _local_stage_bound_to_threads(reverse: bool):
    """A local cache of A whose loop is bound to threadIdx.x (each thread fills one element),
    read by B at the thread's own element or at another thread's."""
    from minitvm import te

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[63 - i if reverse else i] * 2, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    tx = te.thread_axis((0, 32), "threadIdx.x")
    bo, bi = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bi, tx)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[AA].compute_at(s[B], bo)
    _, ai = s[AA].split(AA.op.axis[0], factor=32)
    s[AA].bind(ai, tx)
    return s, [A, B]


def test_error_thread_reads_local_memory_another_thread_wrote():
    # it read A_local[31 - t], written only by thread 31 - t: garbage, silently
    s, args = _local_stage_bound_to_threads(reverse=True)
    with pytest.raises(
        BuildError,
        match=r"reads local buffer 'A_local' at `31 - threadIdx_x` \(element 31\), which that "
        r"thread never writes",
    ):
        tvm.build(s, args, "opencl")


@requires_opencl
def test_local_stage_bound_to_threads_reading_its_own_elements_matches_numpy():
    s, args = _local_stage_bound_to_threads(reverse=False)
    f = tvm.build(s, args, "opencl")
    a = np.random.default_rng(0).random(64, dtype="float32")
    dev = tvm.opencl(0)
    b = tvm.nd.empty((64,), "float32", dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_array_equal(b.numpy(), a * 2)


def test_error_local_ownership_not_provable():
    # the reader's element comes from memory (I[i]): which thread wrote it cannot be known
    from minitvm import te

    A = te.placeholder((32,), name="A")
    Idx = te.placeholder((32,), "int32", name="Idx")
    B = te.compute((32,), lambda i: A[Idx[i]] * 2, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    tx = te.thread_axis((0, 32), "threadIdx.x")
    bo, bi = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, tx)
    s[AA].compute_at(s[B], bo)
    s[AA].bind(AA.op.axis[0], tx)
    with pytest.raises(
        BuildError, match=r"local buffer 'A_local' .* cannot be proven .*it holds BufferLoad"
    ):
        tvm.build(s, [A, Idx, B], "opencl")


def test_error_local_buffer_between_kernels():
    from minitvm import te

    A = te.placeholder((32,), name="A")
    B = te.compute((32,), lambda i: A[31 - i] * 2, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    tx = te.thread_axis((0, 32), "threadIdx.x")
    s[B].bind(B.op.axis[0], tx)
    s[AA].bind(AA.op.axis[0], tx)  # a kernel of its own: A_local would outlive it
    with pytest.raises(
        BuildError, match=r"buffer 'A_local' in scope 'local' is allocated outside every kernel"
    ):
        tvm.build(s, [A, B], "opencl")


def test_error_shared_element_read_that_no_thread_of_the_block_writes():
    # half the tile is fetched, all of it is read: the other half would be garbage
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for b in T.thread_binding(2, thread="blockIdx.x"):
            for t in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("blk"):
                    S = T.alloc_buffer((32,), "float32", scope="shared")
                    if t < 16:
                        S[t] = A[b * 32 + t]
                    B[b * 32 + t] = S[31 - t]

    with pytest.raises(
        BuildError,
        match=r"shared buffer 'S' is read at `31 - threadIdx_x` \(element 31\), which "
        r"no thread of the block writes",
    ):
        lower_gpu([main], Target("opencl"))


def _rfactor_row_sum(one_thread: bool):
    """TVM's rfactor reduction: partial sums per thread in shared memory, then the final sum,
    either by every thread (racing on B) or by one thread (an extent-1 loop bound to tx)."""
    from minitvm import te

    A = te.placeholder((4, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(k, factor=16)
    BF = s.rfactor(B, ki)
    s[BF].set_scope("shared")
    tx = te.thread_axis("threadIdx.x")
    outer = s[B].op.axis[0]
    if one_thread:
        outer, inner = s[B].split(outer, factor=1)
        s[B].bind(inner, tx)
    s[B].bind(outer, te.thread_axis("blockIdx.x"))
    s[BF].compute_at(s[B], outer)
    s[BF].bind(s[BF].op.axis[0], tx)
    return s, [A, B]


def test_error_threads_accumulate_into_one_element():
    # every thread ran B[bx] = 0; B[bx] += ...: a later thread's reset undid the others' sums
    s, args = _rfactor_row_sum(one_thread=False)
    with pytest.raises(
        BuildError,
        match=r"every thread along 'threadIdx.x' stores to 'B' at the same index `blockIdx_x`, "
        r"reading it back \(an accumulation\)",
    ):
        tvm.build(s, args, "opencl")


def test_error_threads_store_different_values_to_one_element():
    @T.prim_func
    def main(A: T.Buffer((32,), "float32"), B: T.Buffer((1,), "float32")):
        for t in T.thread_binding(32, thread="threadIdx.x"):
            B[0] = A[t]

    with pytest.raises(BuildError, match=r"with a value that depends on 'threadIdx.x'"):
        lower_gpu([main], Target("opencl"))


@requires_opencl
def test_one_thread_stores_the_rfactor_sum_and_it_matches_numpy():
    s, args = _rfactor_row_sum(one_thread=True)
    f = tvm.build(s, args, "opencl")
    a = np.random.default_rng(3).random((4, 64), dtype="float32")
    dev = tvm.opencl(0)
    b = tvm.nd.empty((4,), "float32", dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a.sum(1), rtol=1e-5)


def test_error_store_predicate_on_a_thread_axis_not_around_the_stage():
    # the predicate named the loop variable of BF's thread loop, free at B's block
    from minitvm import te
    from minitvm.error import ScheduleError

    A = te.placeholder((4, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(k, factor=16)
    BF = s.rfactor(B, ki)
    s[BF].set_scope("shared")
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.axis[0], te.thread_axis("blockIdx.x"))
    s[BF].compute_at(s[B], s[B].op.axis[0])
    s[BF].bind(s[BF].op.axis[0], tx)
    s[B].set_store_predicate(tx.var.equal(0))
    with pytest.raises(ScheduleError, match=r"block 'B' is not inside a loop bound to it"):
        tvm.lower(s, [A, B])


def test_error_shared_buffer_of_symbolic_size():
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for t in T.thread_binding(n, thread="threadIdx.x"):
            with T.block("blk"):
                S = T.alloc_buffer((n,), "float32", scope="shared")
                S[t] = A[t]
                B[t] = S[n - 1 - t]

    with pytest.raises(BuildError, match=r"shared buffer 'S' has extent n, not a constant"):
        lower_gpu([main], Target("opencl"))


def test_error_unknown_thread_tag():
    @T.prim_func
    def main(A: T.Buffer((32,), "float32")):
        for t in T.thread_binding(32, thread="threadIdx.w"):
            A[t] = T.float32(1)

    with pytest.raises(BuildError, match=r"unknown thread tag 'threadIdx.w'"):
        lower_gpu([main], Target("opencl"))
