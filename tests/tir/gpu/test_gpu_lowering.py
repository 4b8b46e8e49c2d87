"""GPU lowering (issue 16): thread scopes, shared/local storage sized for a block or a thread,
barriers, the host/device split, the checks with their errors, and the MLC GPU chapter's
programs on OpenCL (PoCL) against numpy."""

import os
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm.driver import lower_gpu
from minitvm.error import BuildError
from minitvm.script import tir as T
from minitvm.target import Target
from minitvm.tir.expr import BufferLoad, Call, IntImm, IterVar, StringImm
from minitvm.tir.functor import post_order_visit, substitute
from minitvm.tir.stmt import Allocate, AttrStmt, BufferStore, Evaluate
from minitvm.tir.transform import pipeline

sys.path.insert(0, os.path.dirname(__file__))
from gpu_programs import shared_matmul, window_sum, window_sum_module

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _nodes(node, cls):
    out = []
    post_order_visit(node, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def _kernel_of(mod):
    return next(f for f in mod.functions.values() if f.attrs.get("calling_conv") == 2)


def _is_sync(s):
    return (
        isinstance(s, Evaluate)
        and isinstance(s.value, Call)
        and _op(s.value) == "tir.tvm_storage_sync"
    )


def _op(call):
    return getattr(call.op, "name", call.op)


# ----------------------------------------------------------------------------- bound inference
def test_block_reads_of_a_window_are_one_range():
    # A[vi], A[vi + 1], A[vi + 2] is A[vi:vi + 3], not the whole buffer
    sch = tvm.tir.Schedule(window_sum_module())
    (read,) = sch.get(sch.get_block("C")).reads
    assert str(read.region[0].extent) == "3"


def test_shared_cache_at_thread_loop_spans_the_block_not_the_grid():
    sch = tvm.tir.Schedule(window_sum_module())
    block_c = sch.get_block("C")
    (i,) = sch.get_loops(block_c)
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    cache = sch.cache_read(block_c, 0, "shared")
    sch.compute_at(cache, i1)
    # all 128 threads of a block need 130 elements; blockIdx stays fixed
    assert int(sch.get(sch.get_loops(cache)[-1]).extent) == 130


def test_lowered_shared_and_local_tiles_are_per_block_and_per_thread():
    text = tvm.lower(shared_matmul().mod).script()
    assert 'A_shared = T.decl_buffer((64, 8), "float32", scope="shared")' in text
    assert 'B_shared = T.decl_buffer((8, 64), "float32", scope="shared")' in text
    assert 'C_local = T.decl_buffer((8, 8), "float32", scope="local")' in text


# ----------------------------------------------------------------------------- printed form
def test_lower_prints_launch_scopes_shared_buffer_and_barriers():
    text = tvm.lower(window_sum().mod).script()
    assert 'blockIdx_x = T.launch_thread("blockIdx.x", 8)' in text
    assert 'threadIdx_x = T.launch_thread("threadIdx.x", 128)' in text
    assert 'A_shared = T.decl_buffer((256,), "float32", scope="shared")' in text
    assert text.count('T.tvm_storage_sync("shared")') >= 1
    assert "thread_binding" not in text
    # the barrier sits between the cooperative fetch and the window's reads
    fetch = text.index("A_shared[ax0_0 * 128 + threadIdx_x] =")
    sync = text.rindex("T.tvm_storage_sync")
    read = text.index("= A_shared[threadIdx_x]")
    assert fetch < sync < read


def test_matmul_barriers_guard_the_tile_reuse_like_tvm():
    kernel = _kernel_of(lower_gpu([shared_matmul().mod["main"]], Target("opencl")))
    (k0,) = [
        f for f in _nodes(kernel.body, tvm.tir.For) if f.loop_var.name == "k_0"
    ]  # fmt: skip
    body = list(k0.body.seq)
    # sync; fetch A; fetch B; sync; compute — the first orders the previous tile's reads
    assert _is_sync(body[0]) and _is_sync(body[3]) and len(body) == 5
    assert sum(1 for s in _nodes(kernel.body, Evaluate) if _is_sync(s)) == 2


def test_cross_thread_read_needs_the_barrier():
    """Reasoning over the lowered kernel: some element of A_shared that thread t reads is
    written by another thread, so without a barrier t could read it before it is written."""
    kernel = _kernel_of(lower_gpu([window_sum().mod["main"]], Target("opencl")))
    tx = next(
        a.node.var for a in _nodes(kernel.body, AttrStmt) if a.node.thread_tag == "threadIdx.x"
    )
    loads = [n for n in _nodes(kernel.body, BufferLoad) if n.buffer.name == "A_shared"]
    stores = [n for n in _nodes(kernel.body, BufferStore) if n.buffer.name == "A_shared"]
    loops = {f.loop_var.name: f for f in _nodes(kernel.body, tvm.tir.For)}
    ana = tvm.arith.Analyzer()

    def values(index, thread):
        out = set()
        free = [f for name, f in loops.items() if name in str(index)]
        grid = [range(int(f.extent)) for f in free] or [range(1)]
        for point in np.ndindex(*[len(g) for g in grid]):
            vmap = {tx: IntImm("int32", thread)}
            vmap.update({f.loop_var: IntImm("int32", p) for f, p in zip(free, point)})
            out.add(int(ana.simplify(substitute(index, vmap))))
        return out

    writer = {}
    for t in range(128):
        for st in stores:
            for e in values(st.indices[0], t):
                writer.setdefault(e, t)
    assert any(writer[e] != 5 for ld in loads for e in values(ld.indices[0], 5))


# ----------------------------------------------------------------------------- host/device split
def test_split_host_device_gives_the_contract_form():
    mod = lower_gpu([window_sum().mod["main"]], Target("opencl"))
    host, kernel = mod["main"], mod["main_kernel"]
    assert dict(kernel.attrs)["calling_conv"] == 2 and kernel.attrs["tir.is_global_func"]
    assert list(kernel.attrs["tir.kernel_launch_params"]) == ["blockIdx.x", "threadIdx.x"]
    assert kernel.attrs["global_symbol"] == "main_kernel"
    assert [p.name for p in kernel.params] == ["A", "B"]
    assert all(p.dtype.is_handle for p in kernel.params)
    (call,) = [e.value for e in _nodes(host.body, Evaluate)]
    assert _op(call) == "tir.tvm_call_packed"
    assert isinstance(call.args[0], StringImm) and call.args[0].value == "main_kernel"
    assert [int(x) for x in call.args[-2:]] == [8, 128]  # launch extents, in launch order
    (alloc,) = _nodes(kernel.body, Allocate)
    assert alloc.annotations["storage_scope"] == "shared"
    ivs = [a.node for a in _nodes(kernel.body, AttrStmt)]
    assert all(isinstance(iv, IterVar) for iv in ivs)


def test_vthreads_are_expanded_and_symbolic_launch_extent_stays_on_the_host():
    from minitvm import te

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    bx, rest = s[B].split(B.op.axis[0], factor=64)
    vx, tx = s[B].split(rest, nparts=2)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(vx, te.thread_axis((0, 2), "vthread", name="vx"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    mod = lower_gpu([s.build_prim_func([A, B], "vplus")], Target("opencl"))
    kernel = mod["vplus_kernel"]
    loops = _nodes(kernel.body, tvm.tir.For)
    assert [f.kind for f in loops] == [tvm.tir.ForKind.SERIAL] and int(loops[0].extent) == 2
    assert [p.name for p in kernel.params][-1] == "n"
    call = _nodes(mod["vplus"].body, Call)[-1]
    assert "n" in str(call.args[-2])  # blockIdx extent computed from n at launch


# ----------------------------------------------------------------------------- checks
def _bound_add(n_threads, n=1024):
    sch = tvm.tir.Schedule(window_sum_module(n))
    (i,) = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, n_threads])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch.mod["main"]


def test_error_threads_per_block_over_the_limit():
    with pytest.raises(BuildError, match=r"512 threads per block .*threadIdx.x=512.*limit 256"):
        lower_gpu([_bound_add(512)], Target("opencl"))
    lower_gpu([_bound_add(512)], Target("cuda"))  # 1024 allowed there


def test_error_shared_memory_over_the_limit():
    with pytest.raises(BuildError, match=r"1024 bytes of shared memory \('S' 1024 B\).*limit 512"):
        lower_gpu([_shared_256()], Target("opencl -max_shared_memory_per_block=512"))


def _shared_256():
    @T.prim_func
    def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        for t in T.thread_binding(256, thread="threadIdx.x"):
            with T.block("blk"):
                S = T.alloc_buffer((256,), "float32", scope="shared")
                S[t] = A[t]
                B[t] = S[255 - t]

    return main


def test_error_bound_extent_not_known_at_launch():
    @T.prim_func
    def main(A: T.Buffer((64, 64), "float32")):
        for b in T.thread_binding(64, thread="blockIdx.x"):
            for t in T.thread_binding(b + 1, thread="threadIdx.x"):
                A[b, t] = T.float32(1)

    with pytest.raises(
        BuildError, match=r"extent b \+ 1 of the loop bound to 'threadIdx.x' uses 'b'"
    ):
        lower_gpu([main], Target("opencl"))


def test_error_unbound_loop_left_outside_the_kernels():
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]

    with pytest.raises(BuildError, match=r"loop 'i' is not bound to GPU threads.*sch.bind"):
        lower_gpu([main], Target("opencl"))
    with pytest.raises(BuildError, match=r"loop 'i' is not bound to GPU threads"):
        tvm.build(main, target="opencl")


def test_error_global_buffer_inside_a_kernel():
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for t in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("blk"):
                G = T.alloc_buffer((64,), "float32")
                G[t] = A[t]
                B[t] = G[t]

    with pytest.raises(
        BuildError, match=r"buffer 'G' \(scope global\) is allocated inside a GPU kernel"
    ):
        lower_gpu([main], Target("opencl"))


def test_error_one_thread_axis_with_two_symbolic_extents():
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        n = T.int32()
        m = T.int32()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (m,), "float32")
        for bx in T.thread_binding(1, thread="blockIdx.x"):
            for t in T.thread_binding(n, thread="threadIdx.x"):
                A[t] = T.float32(0)
            for t in T.thread_binding(m, thread="threadIdx.x"):
                B[t] = T.float32(0)

    with pytest.raises(BuildError, match=r"loops bound to 'threadIdx.x' have extents"):
        tvm.lower(main)


def test_cpu_build_of_a_bound_loop_still_refused():
    with pytest.raises(BuildError, match="GPU"):
        tvm.build(_bound_add(64), target="llvm")


# ----------------------------------------------------------------------------- runs on OpenCL
@requires_opencl
def test_window_sum_matches_numpy_on_opencl():
    f = tvm.build(window_sum().mod, target="opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(0).random(1027, dtype="float32")
    b = tvm.nd.array(np.zeros(1024, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a[:1024] + a[1:1025] + a[2:1026], rtol=1e-6)


@requires_opencl
def test_window_sum_without_barrier_is_wrong_on_opencl(monkeypatch):
    """The barrier is what makes the result right: the same kernel without it reads shared
    memory before the neighbouring threads have written it."""
    steps = tuple(s for s in pipeline.GPU_PIPELINE if s.fn.__name__ != "thread_sync")
    monkeypatch.setattr(pipeline, "GPU_PIPELINE", steps)
    f = tvm.build(window_sum().mod, target="opencl")
    assert "barrier" not in f.get_source()
    dev = tvm.opencl(0)
    a = np.random.default_rng(0).random(1027, dtype="float32") + 1
    b = tvm.nd.array(np.zeros(1024, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    assert not np.allclose(b.numpy(), a[:1024] + a[1:1025] + a[2:1026])


@requires_opencl
def test_shared_matmul_matches_numpy_on_opencl():
    n = 256
    f = tvm.build(shared_matmul(n).mod, target="opencl")
    src = f.get_source()
    assert "__local float A_shared[512];" in src and src.count("barrier(") == 2
    dev = tvm.opencl(0)
    rng = np.random.default_rng(1)
    a, b = rng.random((n, n), dtype="float32"), rng.random((n, n), dtype="float32")
    c = tvm.nd.array(np.zeros((n, n), "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


_CUDA_REASON = tvm.cuda(0).unavailable_reason()


@pytest.mark.skipif(_CUDA_REASON is not None, reason=f"no CUDA: {_CUDA_REASON}")
def test_mlc_programs_match_numpy_on_cuda():
    dev = tvm.cuda(0)
    f = tvm.build(window_sum().mod, target="cuda")
    a = np.random.default_rng(0).random(1027, dtype="float32")
    b = tvm.nd.array(np.zeros(1024, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a[:1024] + a[1:1025] + a[2:1026], rtol=1e-6)
    n = 1024
    f = tvm.build(shared_matmul(n).mod, target="cuda")
    rng = np.random.default_rng(1)
    x, y = rng.random((n, n), dtype="float32"), rng.random((n, n), dtype="float32")
    c = tvm.nd.array(np.zeros((n, n), "float32"), dev)
    f(tvm.nd.array(x, dev), tvm.nd.array(y, dev), c)
    np.testing.assert_allclose(c.numpy(), x @ y, rtol=1e-4)


def _tree_sum():
    @T.prim_func
    def main(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8,), "float32")):
        for b in T.thread_binding(8, thread="blockIdx.x"):
            for t in T.thread_binding(64, thread="threadIdx.x"):
                S = T.decl_buffer((64,), "float32", scope="shared")
                S[t] = A[b, t]
                for s in T.unroll(6):
                    if t < T.shift_right(32, s):
                        S[t] = S[t] + S[t + T.shift_right(32, s)]
                if t == 0:
                    B[b] = S[0]

    return main


def test_tree_reduction_gets_a_barrier_per_step():
    text = tvm.lower(_tree_sum()).script()
    # at the top of each step (orders the first store and the previous step), and before the
    # final read; never inside the thread-dependent `if`
    assert text.count("tvm_storage_sync") == 2
    loop = text[text.index("for s in") :]
    assert loop.index("tvm_storage_sync") < loop.index("if threadIdx_x < ")


@requires_opencl
def test_tree_reduction_matches_numpy_on_opencl():
    f = tvm.build(_tree_sum(), target="opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(2).random((8, 64), dtype="float32")
    b = tvm.nd.array(np.zeros(8, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a.sum(1), rtol=1e-5)


def test_error_exchange_inside_thread_dependent_branch():
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for t in T.thread_binding(64, thread="threadIdx.x"):
            S = T.decl_buffer((64,), "float32", scope="shared")
            if t < 32:
                S[t] = A[t]
                B[t] = S[31 - t]

    with pytest.raises(
        BuildError, match=r"shared buffer 'S' is written and then read at another index"
    ):
        tvm.lower(main)
