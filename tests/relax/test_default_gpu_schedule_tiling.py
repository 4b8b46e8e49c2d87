"""DefaultGPUSchedule's shared-memory tiling of matmul/conv kernels: relax.build(target="opencl")
of dense, matmul (shapes that are not whole tiles), batch matmul, a fused bias+relu epilogue and
NCHW conv2d (1x1 and 3x3, stride, padding) match numpy; the lowered kernel stages its operands
in "shared" memory between barriers; kernels the tiler declines keep the simple binding and
still run; small zoo models match the CPU build.

OpenCL runs here through PoCL (each kernel compile costs a fraction of a second, so the cases
are few and small)."""

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import relax, te, topi
from minitvm.relax.transform.default_gpu_schedule import default_gpu_schedule_func
from minitvm.target import Target

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")
_LOGGER = "minitvm.dlight.gpu.default"
_SHARED, _BARRIER = "__local float", "barrier(CLK_LOCAL_MEM_FENCE)"


# ----------------------------------------------------------------------------- helpers
def _relax_main(params, body):
    """A relax module whose main takes float32 tensors `params` [(name, shape)] and returns
    body(bb, *vars) (body may emit intermediate bindings through bb)."""
    bb = relax.BlockBuilder()
    vs = [relax.Var(n, relax.TensorStructInfo(s, "float32")) for n, s in params]
    with bb.function("main", vs):
        with bb.dataflow():
            out = bb.emit_output(body(bb, *vs))
        bb.emit_func_output(out)
    return bb.get()


def _conv_ref(x, w, stride, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    return np.einsum("ncijhw,ochw->noij", win[:, :, ::stride, ::stride], w)


_DEVICES = {"opencl": tvm.opencl(0), "cuda": tvm.cuda(0)}


def _device(kind):
    reason = _DEVICES[kind].unavailable_reason()
    if reason is not None:
        pytest.skip(f"no {kind} device: {reason}")
    return _DEVICES[kind]


def _run_relax(mod, arrays, kind="opencl"):
    """(executable, result) of relax.build(mod, kind) run on that device."""
    dev = _device(kind)
    ex = relax.build(mod, target=kind)
    out = relax.VirtualMachine(ex, dev)["main"](*[tvm.nd.array(a, dev) for a in arrays])
    return ex, out.numpy()


op = relax.op
# name: (params, relax body, numpy reference)
_CASES = {
    "matmul_ragged": (
        [("x", (100, 50)), ("w", (50, 70))],  # no dim a multiple of the 64x64x16 tile
        lambda bb, x, w: op.matmul(x, w),
        lambda x, w: x @ w,
    ),
    "dense": (
        [("x", (37, 24)), ("w", (40, 24))],
        lambda bb, x, w: op.linear(x, w),
        lambda x, w: x @ w.T,
    ),
    "batch_matmul": (
        [("x", (3, 33, 20)), ("w", (3, 20, 17))],
        lambda bb, x, w: op.matmul(x, w),
        lambda x, w: x @ w,
    ),
    "matmul_bias_relu": (
        [("x", (70, 24)), ("w", (24, 40)), ("b", (40,))],
        lambda bb, x, w, b: op.nn.relu(bb.emit(op.add(bb.emit(op.matmul(x, w)), b))),
        lambda x, w, b: np.maximum(x @ w + b, 0),
    ),
    "conv3x3_stride2_pad1": (
        [("x", (2, 5, 11, 11)), ("w", (6, 5, 3, 3))],
        lambda bb, x, w: op.nn.conv2d(x, w, 2, 1),
        lambda x, w: _conv_ref(x, w, 2, 1),
    ),
    "conv3x3_pad1_relu": (
        [("x", (2, 3, 10, 10)), ("w", (8, 3, 3, 3))],
        lambda bb, x, w: op.nn.relu(bb.emit(op.nn.conv2d(x, w, 1, 1))),
        lambda x, w: np.maximum(_conv_ref(x, w, 1, 1), 0),
    ),
    "conv1x1": (
        [("x", (2, 8, 7, 7)), ("w", (12, 8, 1, 1))],
        lambda bb, x, w: op.nn.conv2d(x, w, 1, 0),
        lambda x, w: _conv_ref(x, w, 1, 0),
    ),
}


# ----------------------------------------------------------------------------- relax.build
@pytest.mark.parametrize("kind", ["opencl", "cuda"])
@pytest.mark.parametrize("name", list(_CASES))
def test_tiled_kernels_match_numpy_on_gpu(name, kind):
    params, body, ref = _CASES[name]
    rng = np.random.default_rng(len(name))
    arrays = [rng.normal(size=s).astype("float32") for _, s in params]
    ex, got = _run_relax(_relax_main(params, body), arrays, kind)
    np.testing.assert_allclose(got, ref(*arrays), rtol=1e-4, atol=1e-4)
    if kind == "opencl":
        src = ex.mod.get_source()
        # one kernel: operands staged in shared memory, the epilogue (bias, relu) in it too
        assert src.count("__kernel") == 1, src
        assert _SHARED in src and _BARRIER in src


@pytest.mark.parametrize("name", list(_CASES))
def test_tiled_kernels_compile_to_ptx_without_a_gpu(name):
    params, body, _ = _CASES[name]
    ptx = relax.build(_relax_main(params, body), target="cuda").mod.get_source("ptx")
    assert ptx.count(".entry") == 1 and "bar.sync" in ptx and "ld.shared" in ptx


def _dense_te(m, n, k, batch=0, a_kmajor=False, b_kmajor=False, epilogue=False):
    """C = A @ B^T with optional batch, operands stored k-major or not, optional relu."""
    lead = (batch,) if batch else ()
    A = te.placeholder(lead + ((k, m) if a_kmajor else (m, k)), name="A")
    B = te.placeholder(lead + ((k, n) if b_kmajor else (n, k)), name="B")
    r = te.reduce_axis((0, k), name="r")

    def body(*idx):
        *b, i, j = idx
        a = A[(*b, r, i)] if a_kmajor else A[(*b, i, r)]
        w = B[(*b, r, j)] if b_kmajor else B[(*b, j, r)]
        return te.sum(a * w, axis=r)

    C = te.compute(lead + (m, n), body, name="C")
    out = topi.nn.relu(C) if epilogue else C
    return te.create_prim_func([A, B, out]), A, B


def _dense_np(a, b, a_kmajor, b_kmajor):
    a = np.swapaxes(a, -1, -2) if a_kmajor else a
    return a @ (b if b_kmajor else np.swapaxes(b, -1, -2))


# ----------------------------------------------------------------------------- lowered IR
def test_lowered_tiled_matmul_stages_tiles_in_shared_between_barriers():
    func, _, _ = _dense_te(100, 70, 50, b_kmajor=True)  # C = A @ B, B stored (k, n)
    text = tvm.lower(default_gpu_schedule_func(func)).script()
    for line in (
        # the 64-row tiles of each K step of 16, k-major: a warp reads neighbouring words
        'A_shared_pad = T.decl_buffer((16, 64), "float32", scope="shared")',
        'B_shared_pad = T.decl_buffer((16, 64), "float32", scope="shared")',
        'C_local_pad = T.decl_buffer((4, 4), "float32", scope="local")',  # 4x4 per thread
        'threadIdx_y = T.launch_thread("threadIdx.y", 16)',
        'blockIdx_x = T.launch_thread("blockIdx.x", 2)',  # ceil(70 / 64)
        "A_shared_pad[ax2_1, threadIdx_y * 4 + ax0_2] * B_shared_pad[ax2_1, threadIdx_x * 4 + ax1_2]",
        # coalesced fetches: threadIdx.x runs along each operand's contiguous last dimension
        "A[blockIdx_y * 64 + ax0_ax1_fused_0 * 16 + threadIdx_y, ax2_0 * 16 + threadIdx_x]",
        # (threadIdx_y * 16 + threadIdx_x) % 64, simplified: threadIdx_x < 16 stays the low part
        "blockIdx_x * 64 + threadIdx_y % 4 * 16 + threadIdx_x]",
    ):
        assert line in text, line
    # each K step: a barrier before the fetch (the previous step's reads), one after it
    assert text.count("tvm_storage_sync") == 2
    fetch = text.index("A_shared_pad[threadIdx_x")
    assert text.index("tvm_storage_sync") < fetch < text.rindex("tvm_storage_sync")
    assert "T.if_then_else(" in text  # the fetch pads the ragged edge with zeros


def test_tiles_respect_the_targets_thread_limit():
    func, _, _ = _dense_te(64, 64, 32)
    small = default_gpu_schedule_func(func, max_threads=64)
    text = tvm.lower(small).script()
    launched = [int(x.split(", ")[1].rstrip(")")) for x in text.splitlines()
                if "launch_thread(\"threadIdx" in x]  # fmt: skip
    assert 'scope="shared"' in text and np.prod(launched) == 64


def test_declined_kernels_keep_the_simple_binding_and_say_why(caplog):
    n = te.var("n")  # a symbolic batch: the tiler wants constant extents
    X, W = te.placeholder((n, 16), name="X"), te.placeholder((8, 16), name="W")
    k = te.reduce_axis((0, 16), name="k")
    Y = te.compute((n, 8), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    symbolic = te.create_prim_func([X, W, Y])
    shared_limited, _, _ = _dense_te(64, 64, 32)
    cases = (
        (symbolic, {}, "has symbolic extents"),
        (shared_limited, {"max_shared_bytes": 1024}, "exceed the target's limits"),
        (_depthwise()[0], {}, "not a matmul or conv"),
    )
    for func, limits, reason in cases:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger=_LOGGER):
            text = default_gpu_schedule_func(func, **limits).script()
        assert "T.thread_binding" in text and 'scope="shared"' not in text
        assert reason in caplog.text, caplog.text


def _depthwise():
    """A depthwise 3x3 conv (groups == channels): each channel reads one filter, so no spatial
    iterator is read by the filter alone and the tiler declines it."""
    D = te.placeholder((2, 4, 9, 9), name="D")
    W = te.placeholder((4, 1, 3, 3), name="W")
    return te.create_prim_func([D, W, topi.nn.conv2d_nchw(D, W, 1, 1, 1, groups=4)]), D, W


@requires_opencl
def test_declined_depthwise_conv_runs_with_the_simple_binding():
    func, _, _ = _depthwise()
    f = tvm.build(default_gpu_schedule_func(func), target="opencl")
    assert _SHARED not in f.get_source()
    dev = tvm.opencl(0)
    rng = np.random.default_rng(2)
    d = rng.normal(size=(2, 4, 9, 9)).astype("float32")
    w = rng.normal(size=(4, 1, 3, 3)).astype("float32")
    out = tvm.nd.array(np.zeros((2, 4, 9, 9), "float32"), dev)
    f(tvm.nd.array(d, dev), tvm.nd.array(w, dev), out)
    want = np.stack([_conv_ref(d[:, c : c + 1], w[c : c + 1], 1, 1)[:, 0] for c in range(4)], 1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


@requires_opencl
def test_small_thread_limit_tiles_still_match_numpy():
    func, _, _ = _dense_te(70, 45, 33, epilogue=True)
    target = Target("opencl -max_num_threads=64")
    f = tvm.build(default_gpu_schedule_func(func, max_threads=64), target=target)
    assert _SHARED in f.get_source()
    dev = tvm.opencl(0)
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(70, 33)).astype("float32"), rng.normal(size=(45, 33)).astype("float32")
    out = tvm.nd.array(np.zeros((70, 45), "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(a @ b.T, 0), rtol=1e-4, atol=1e-4)


@requires_opencl
@settings(max_examples=6, deadline=None, derandomize=True)
@given(
    m=st.integers(1, 90),
    n=st.integers(1, 90),
    k=st.integers(1, 70),
    batch=st.sampled_from([0, 1, 3]),
    a_kmajor=st.booleans(),
    b_kmajor=st.booleans(),
)
def test_random_matmul_shapes_match_numpy_on_opencl(m, n, k, batch, a_kmajor, b_kmajor):
    _check_random_matmul(batch, m, n, k, a_kmajor, b_kmajor)


@requires_opencl
@pytest.mark.parametrize(
    "shape",
    [(1, 1, 5, 1, False, False), (0, 1, 1, 1, False, False), (0, 200, 1, 17, True, False)],
    ids=["unit_batch_m_k", "one_element", "single_column"],
)
def test_degenerate_matmul_shapes_match_numpy_on_opencl(shape):
    # a unit batch with m = k = 1 staged 1-D tiles (the k-major relayout once indexed past them)
    _check_random_matmul(*shape)


def _check_random_matmul(batch, m, n, k, a_kmajor, b_kmajor):
    func, A, B = _dense_te(m, n, k, batch, a_kmajor, b_kmajor)
    f = tvm.build(default_gpu_schedule_func(func), target="opencl")
    assert _SHARED in f.get_source()
    dev = tvm.opencl(0)
    rng = np.random.default_rng(m * n * k)
    a = rng.normal(size=[int(d) for d in A.shape]).astype("float32")
    b = rng.normal(size=[int(d) for d in B.shape]).astype("float32")
    out = tvm.nd.array(np.zeros(((batch,) if batch else ()) + (m, n), "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), out)
    want = _dense_np(a, b, a_kmajor, b_kmajor)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- zoo models
@requires_opencl
@pytest.mark.parametrize(
    "name, kwargs", [("lenet", {}), ("bert_layer", {"seq_len": 8})], ids=["lenet", "bert_layer"]
)
def test_zoo_model_with_tiled_kernels_matches_the_cpu_build(name, kwargs):
    from minitvm.testing import zoo

    mod, params = zoo.get_model(name, batch_size=1, **kwargs)
    mod = relax.transform.BindParams("main", params)(mod)
    x = np.random.default_rng(0).normal(size=zoo.input_shape(name, 1, **kwargs)).astype("float32")
    want = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())["main"](x).numpy()
    ex, got = _run_relax(mod, [x])
    assert _SHARED in ex.mod.get_source()  # its convs / dense layers went through the tiler
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- relay
def _seed_relay_example(c_data):
    """The seed homework's Relay program (conv2d, then adds and a multiply with a constant),
    with the constant given values instead of np.empty."""
    from minitvm import relay

    c = relay.const(c_data)
    weight = relay.var("weight", shape=(64, 64, 3, 3))
    x = relay.var("x", relay.TensorType((1, 64, 56, 56), "float32"))
    conv = relay.nn.conv2d(x, weight)
    y = relay.add(c, c)
    y = relay.multiply(y, relay.const(2, "float32"))
    y = relay.add(conv, y)
    z = relay.add(y, c)
    z1 = relay.add(y, c)
    z2 = relay.add(z, z1)
    return tvm.IRModule.from_expr(relay.Function([x, weight], z2))


@requires_opencl
def test_seed_relay_program_runs_on_opencl_through_the_graph_executor():
    from minitvm import relay
    from minitvm.contrib import graph_executor

    rng = np.random.default_rng(9)
    c = rng.normal(size=(1, 64, 54, 54)).astype("float32")
    x = rng.normal(size=(1, 64, 56, 56)).astype("float32")
    w = rng.normal(size=(64, 64, 3, 3)).astype("float32") * 0.1
    dev = tvm.opencl(0)
    lib = relay.build(_seed_relay_example(c), target="opencl", params={"weight": w})
    assert _SHARED in lib.executable.mod.get_source()  # the conv kernel went through the tiler
    m = graph_executor.GraphModule(lib["default"](dev))
    m.set_input("x", x)
    m.run()
    want = 2 * _conv_ref(x, w, 1, 0) + 10 * c  # z2 = 2 (conv + 4c) + 2c
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-3)
