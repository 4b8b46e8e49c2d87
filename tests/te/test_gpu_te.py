"""Classic TE GPU schedules (issue 16): the seed homework's vector add and HWCN convolution
(shared/local caches, vthreads, cooperative fetching), cache_read("shared") under a bound
threadIdx loop, and a GPU-scheduled softmax: lowered structure, and numpy-matching runs on
OpenCL (PoCL) where a device exists."""

import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.driver import lower_gpu
from minitvm.error import BuildError
from minitvm.target import Target
from minitvm.testing.gpu import conv_hwcn, conv_hwcn_reference

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _vector_double():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, A, B


def _softmax(m=64, n=100, shared=False):
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    mx = te.compute((m,), lambda i: te.max(A[i, k], axis=k), name="mx")
    ex = te.compute((m, n), lambda i, j: te.exp(A[i, j] - mx[i]), name="ex")
    k2 = te.reduce_axis((0, n), name="k2")
    sm = te.compute((m,), lambda i: te.sum(ex[i, k2], axis=k2), name="sm")
    out = te.compute((m, n), lambda i, j: ex[i, j] / sm[i], name="out")
    s = te.create_schedule(out.op)
    AS = s.cache_read(A, "shared", [mx, ex]) if shared else None
    s[ex].compute_inline()
    bx, tx = s[out].split(out.op.axis[0], factor=16)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    for t in (mx, sm):  # one thread per row: its max and sum stay in registers
        s[t].set_scope("local")
        s[t].compute_at(s[out], tx)
    if shared:  # the block's 16 rows fetched cooperatively
        s[AS].compute_at(s[out], bx)
        fused = s[AS].fuse(*s[AS].op.axis)
        _, fi = s[AS].split(fused, factor=16)
        s[AS].bind(fi, te.thread_axis("threadIdx.x"))
    return s, A, out


# ----------------------------------------------------------------------------- printed IR
def test_seed_vector_add_lowers_to_launch_scopes():
    s, A, B = _vector_double()
    text = tvm.lower(s, [A, B], simple_mode=True).script()
    assert 'blockIdx_x = T.launch_thread("blockIdx.x", (n + 63) // 64)' in text
    assert 'threadIdx_x = T.launch_thread("threadIdx.x", 64)' in text
    assert "if T.likely(blockIdx_x * 64 + threadIdx_x < n):" in text


def test_cache_read_shared_under_bound_threads_spans_every_thread():
    # the case: 16 threads each read one row of A_shared; the fetch must load all 16
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 8), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    s[B].bind(s[B].op.axis[0], te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], s[B].op.axis[0])
    text = tvm.lower(s, [A, B], simple_mode=True).script()
    assert 'A_shared = T.decl_buffer((16, 8), "float32", scope="shared")' in text
    assert "< 1" not in text
    assert text.index("A_shared[ax0, ax1] = A[ax0, ax1]") < text.index("tvm_storage_sync")


def _cooperative_rows():
    A = te.placeholder((64, 8), name="A")
    B = te.compute((64, 8), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    bx, tx = s[B].split(s[B].op.axis[0], factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], tx)
    ao, _ = s[AS].split(s[AS].op.axis[0], nparts=16)
    s[AS].bind(ao, te.thread_axis("threadIdx.x"))
    return s, A, B


def test_cooperative_fetch_of_16_rows_by_16_threads_loads_them_all():
    # the issue's report: A_shared was [1, 8] with `if ax0_outer < 1`, only thread 0's row
    s, A, B = _cooperative_rows()
    text = tvm.lower(s, [A, B], simple_mode=True).script()
    assert 'A_shared = T.decl_buffer((16, 8), "float32", scope="shared")' in text
    assert "A_shared[threadIdx_x, ax1] = A[blockIdx_x * 16 + threadIdx_x, ax1]" in text
    assert "< 1" not in text


@requires_opencl
def test_cooperative_fetch_matches_numpy_on_opencl():
    s, A, B = _cooperative_rows()
    f = tvm.build(s, [A, B], "opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(5).random((64, 8), dtype="float32")
    b = tvm.nd.array(np.zeros((64, 8), "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2)


def test_cache_read_local_under_bound_threads_is_per_thread():
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 8), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    AL = s.cache_read(A, "local", [B])
    s[B].bind(s[B].op.axis[0], te.thread_axis("threadIdx.x"))
    s[AL].compute_at(s[B], s[B].op.axis[0])
    text = tvm.lower(s, [A, B], simple_mode=True).script()
    assert 'A_local = T.decl_buffer((1, 8), "float32", scope="local")' in text
    assert "tvm_storage_sync" not in text


def test_seed_conv_tiles_scopes_vthreads_and_barriers_print_like_tvm():
    s, (A, W, B), _ = conv_hwcn(batch=64)
    text = tvm.lower(s, [A, W, B], simple_mode=True).script()
    for line in (
        'Apad_shared = T.decl_buffer((1, 1, 8, 64), "float32", scope="shared")',
        'W_shared = T.decl_buffer((1, 1, 8, 64), "float32", scope="shared")',
        'Apad_shared_local = T.decl_buffer((1, 1, 1, 4), "float32", scope="local")',
        'W_shared_local = T.decl_buffer((1, 1, 1, 4), "float32", scope="local")',
        'B_local = T.decl_buffer((1, 1, 4, 4), "float32", scope="local")',
        'blockIdx_z = T.launch_thread("blockIdx.z", 196)',
        'threadIdx_y = T.launch_thread("threadIdx.y", 8)',
    ):
        assert line in text, line
    assert "vthread" not in text and "thread_binding" not in text
    # one barrier before each tile fetch (the previous tile's reads), one after it
    assert text.count("tvm_storage_sync") == 2


def test_seed_conv_kernel_fits_the_opencl_limits():
    s, (A, W, B), _ = conv_hwcn(batch=64)
    mod = lower_gpu([s.build_prim_func([A, W, B], "conv")], Target("opencl"))
    kernel = mod["conv_kernel"]
    assert list(kernel.attrs["tir.kernel_launch_params"]) == [
        "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
    ]  # fmt: skip


def test_unscheduled_te_compute_on_gpu_says_to_bind():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(BuildError, match=r"loop 'i' is not bound to GPU threads"):
        tvm.build(s, [A, B], "opencl")


def _storage_aligned_reversal():
    # B reads the element another thread fetched (15 - j), so the fetch needs a barrier; a
    # thread that read back only its own element would need none (ThreadSync omits it)
    A = te.placeholder((16, 16), name="A")
    B = te.compute((16, 16), lambda i, j: A[i, 15 - j] + 1, name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    bx = s[B].op.axis[0]
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(s[B].op.axis[1], te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], bx)
    s[AS].storage_align(s[AS].op.axis[0], 16, 1)
    s[AS].bind(s[AS].op.axis[1], te.thread_axis("threadIdx.x"))
    return s, A, B


def test_storage_align_under_shared_cache_still_lowers():
    s, A, B = _storage_aligned_reversal()
    text = tvm.lower(s, [A, B], simple_mode=True).script()
    assert 'scope="shared"' in text
    fetch = text.index("A_shared[0, threadIdx_x] = A[blockIdx_x, threadIdx_x]")
    assert fetch < text.index("tvm_storage_sync") < text.index("A_shared[0, 15 - threadIdx_x]")


@requires_opencl
def test_storage_align_under_shared_cache_matches_numpy_on_opencl():
    s, A, B = _storage_aligned_reversal()
    f = tvm.build(s, [A, B], "opencl")
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in f.get_source()
    dev = tvm.opencl(0)
    a = np.random.default_rng(6).random((16, 16), dtype="float32")
    b = tvm.nd.array(np.zeros((16, 16), "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a[:, ::-1] + 1)


# ----------------------------------------------------------------------------- runs on OpenCL
@requires_opencl
@pytest.mark.parametrize("n", [1, 64, 1000])
def test_seed_vector_add_matches_numpy_on_opencl(n):
    s, A, B = _vector_double()
    f = tvm.build(s, [A, B], "opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(n).random(n, dtype="float32")
    b = tvm.nd.array(np.zeros(n, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2)
    assert "get_local_id(0)" in f.get_source()


def test_seed_conv_at_a_batch_below_the_tile_lowers_with_guards():
    # batch 4 under the 64-wide tile: the splits leave unit loops and guards `... < 4`
    s, (A, W, B), _ = conv_hwcn(batch=4)
    text = tvm.lower(s, [A, W, B], simple_mode=True).script()
    assert "< 4" in text and text.count("tvm_storage_sync") == 2


@requires_opencl
def test_seed_conv_batch_below_the_tile_matches_numpy_on_opencl():
    # batch 4 under the 64-wide tile (guarded tails); channels reduced for PoCL's speed (the
    # full 256 -> 512 layer takes half a minute there)
    s, (A, W, B), _ = conv_hwcn(batch=4, in_channel=32, out_channel=64)
    func = tvm.build(s, [A, W, B], "opencl")
    dev = tvm.opencl(0)
    rng = np.random.default_rng(1)
    a = rng.uniform(size=(14, 14, 32, 4)).astype("float32")
    w = rng.uniform(size=(3, 3, 32, 64)).astype("float32")
    b = tvm.nd.array(np.zeros((14, 14, 64, 4), "float32"), dev)
    func(tvm.nd.array(a, dev), tvm.nd.array(w, dev), b)
    np.testing.assert_allclose(b.numpy(), conv_hwcn_reference(a, w), rtol=1e-4)


@requires_opencl
def test_seed_conv_matches_numpy_on_opencl():
    # the full schedule; batch 64 (one block of the 64-wide tile), channels reduced for PoCL
    s, (A, W, B), _ = conv_hwcn(batch=64, in_channel=32, out_channel=64)
    func = tvm.build(s, [A, W, B], "opencl")
    dev = tvm.opencl(0)
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(14, 14, 32, 64)).astype("float32")
    w = rng.uniform(size=(3, 3, 32, 64)).astype("float32")
    b = tvm.nd.array(np.zeros((14, 14, 64, 64), "float32"), dev)
    func(tvm.nd.array(a, dev), tvm.nd.array(w, dev), b)
    np.testing.assert_allclose(b.numpy(), conv_hwcn_reference(a, w), rtol=1e-4)


@requires_opencl
@pytest.mark.parametrize("shared", [False, True])
def test_gpu_scheduled_softmax_matches_numpy_on_opencl(shared):
    s, A, out = _softmax(shared=shared)
    f = tvm.build(s, [A, out], "opencl")
    assert ("__local float A_shared" in f.get_source()) == shared
    dev = tvm.opencl(0)
    a = np.random.default_rng(3).normal(size=(64, 100)).astype("float32")
    o = tvm.nd.array(np.zeros((64, 100), "float32"), dev)
    f(tvm.nd.array(a, dev), o)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(o.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- CUDA
_CUDA_REASON = tvm.cuda(0).unavailable_reason()
requires_cuda = pytest.mark.skipif(_CUDA_REASON is not None, reason=f"no CUDA: {_CUDA_REASON}")


def test_seed_conv_lowers_to_ptx_without_a_gpu():
    s, (A, W, B), _ = conv_hwcn(batch=64, in_channel=32, out_channel=64)
    ptx = tvm.build(s, [A, W, B], "cuda").get_source("ptx")
    assert ".visible .entry main_kernel(" in ptx
    assert "bar.sync" in ptx and ".shared" in ptx and "%tid.y" in ptx


@requires_cuda
def test_seed_programs_match_numpy_on_cuda():
    dev = tvm.cuda(0)
    s, A, B = _vector_double()
    f = tvm.build(s, [A, B], "cuda")
    a = np.random.default_rng(0).random(1000, dtype="float32")
    b = tvm.nd.array(np.zeros(1000, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2)
    s, (A, W, B), _ = conv_hwcn(batch=64, in_channel=32, out_channel=64)
    func = tvm.build(s, [A, W, B], "cuda")
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(14, 14, 32, 64)).astype("float32")
    w = rng.uniform(size=(3, 3, 32, 64)).astype("float32")
    out = tvm.nd.array(np.zeros((14, 14, 64, 64), "float32"), dev)
    func(tvm.nd.array(a, dev), tvm.nd.array(w, dev), out)
    np.testing.assert_allclose(out.numpy(), conv_hwcn_reference(a, w), rtol=1e-4)
    for shared in (False, True):
        s, A, o = _softmax(shared=shared)
        f = tvm.build(s, [A, o], "cuda")
        x = np.random.default_rng(3).normal(size=(64, 100)).astype("float32")
        y = tvm.nd.array(np.zeros((64, 100), "float32"), dev)
        f(tvm.nd.array(x, dev), y)
        e = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(y.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- benchmarks/gpu.py
_BENCH_GPU = pathlib.Path(__file__).parents[2] / "benchmarks" / "gpu.py"


def _bench_gpu():
    spec = importlib.util.spec_from_file_location("bench_gpu", _BENCH_GPU)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(_CUDA_REASON is None, reason="a CUDA device is present: it would measure")
def test_gpu_benchmark_without_cuda_says_so_and_exits_0():
    done = subprocess.run(
        [sys.executable, str(_BENCH_GPU)], check=False, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "no cuda device here" in done.stdout and "nothing was measured" in done.stdout


@requires_opencl
def test_gpu_benchmark_matmuls_are_checked_and_timed_on_opencl():
    rows = _bench_gpu()._matmul_rows("opencl", tvm.opencl(0), None, 64, number=1)
    assert [r[0] for r in rows] == [
        "matmul 64^3 fp32, hand TE schedule",
        "matmul 64^3 fp32, DefaultGPUSchedule",
    ]
    assert all(
        flops == 2 * 64**3 and ours > 0 and theirs is None for _, flops, ours, theirs in rows
    )


@requires_opencl
def test_gpu_benchmark_convs_are_checked_and_timed_on_opencl():
    # the seed's layer at a reduced size, both schedules, each checked against numpy inside
    rows = _bench_gpu()._conv_rows("opencl", tvm.opencl(0), None, 4, 1, (16, 32), 6)
    assert [r[0] for r in rows] == [
        "conv b=4 16->32 6x6, HWCN, the seed's schedule",
        "conv b=4 16->32 6x6, NCHW, DefaultGPUSchedule",
    ]
    assert all(flops == 2 * 36 * 32 * 4 * 16 * 9 and ours > 0 for _, flops, ours, _ in rows)


@requires_opencl
def test_default_gpu_matmul_workload_matches_numpy_on_opencl():
    from minitvm.testing.gpu import matmul_default_gpu

    func, args, _ = matmul_default_gpu(96, "opencl")
    f = tvm.build(func, args, "opencl")
    assert "__local float A_shared" in f.get_source()
    dev = tvm.opencl(0)
    rng = np.random.default_rng(8)
    x, y = rng.random((96, 96), dtype="float32"), rng.random((96, 96), dtype="float32")
    z = tvm.nd.array(np.zeros((96, 96), "float32"), dev)
    f(tvm.nd.array(x, dev), tvm.nd.array(y, dev), z)
    np.testing.assert_allclose(z.numpy(), x @ y, rtol=1e-4)
