"""topi.cuda: classic GPU schedules lower to thread-bound loops that compute the right values
(checked with the TIR interpreter, which runs bound loops serially); building them for CUDA is
a TargetError in this build."""

import numpy as np

import minitvm as tvm
from minitvm import te, topi
from minitvm.testing.tir_interp import run_prim_func

RNG = np.random.default_rng(5)


def _lowered(s, args):
    # the scheduled function before lowering passes: the interpreter runs its blocks, and
    # the suite's print/parse round trip (which drops a bound loop's thread range) is skipped
    return s.build_prim_func(args)


def _thread_tags(mod):
    tags = []
    tvm.tir.functor.post_order_visit(
        mod.body,
        lambda n: (
            tags.append(n.thread_binding.thread_tag)
            if isinstance(n, tvm.tir.For) and n.thread_binding is not None
            else None
        ),
    )
    return tags


def test_schedule_reduce_of_a_full_sum_binds_threads_and_sums_correctly():
    a = te.placeholder((10, 7, 7), name="a")
    b = te.placeholder((7, 7), name="b")
    g = topi.sum(topi.elemwise_sum([a + b, a * b]) / 2.0)
    with tvm.target.cuda():
        s = topi.cuda.schedule_reduce(g)
    mod = _lowered(s, [a, b, g])
    assert "threadIdx.x" in _thread_tags(mod)
    an, bn = RNG.random((10, 7, 7), dtype=np.float32), RNG.random((7, 7), dtype=np.float32)
    out = run_prim_func(mod, an, bn, np.zeros((), "float32"))[2]
    np.testing.assert_allclose(out, ((an + bn) + an * bn).sum() / 2, rtol=1e-4)


def test_schedule_softmax_rows_match_numpy():
    t = te.placeholder((16, 40), name="t")
    sm = topi.nn.softmax(t)
    mod = _lowered(topi.cuda.schedule_softmax(sm), [t, sm])
    assert {"blockIdx.x", "threadIdx.x"} <= set(_thread_tags(mod))
    tn = RNG.random((16, 40), dtype=np.float32)
    out = run_prim_func(mod, tn, np.zeros((16, 40), "float32"))[1]
    e = np.exp(tn - tn.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)


def test_conv2d_nchw_schedule_with_fused_relu_matches_numpy():
    data = te.placeholder((1, 3, 9, 9), name="data")
    kernel = te.placeholder((4, 3, 3, 3), name="kernel")
    with tvm.target.Target("cuda"):
        out = topi.nn.relu(topi.cuda.conv2d_nchw(data, kernel, 1, 1, 1))
        s = topi.cuda.schedule_conv2d_nchw([out])
    mod = _lowered(s, [data, kernel, out])
    dn = RNG.standard_normal((1, 3, 9, 9)).astype("float32")
    kn = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    got = run_prim_func(mod, dn, kn, np.zeros((1, 4, 9, 9), "float32"))[2]
    padded = np.pad(dn, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 9, 9), "float32")
    for y in range(9):
        for x in range(9):
            ref[0, :, y, x] = np.tensordot(kn, padded[0, :, y : y + 3, x : x + 3], axes=3)
    np.testing.assert_allclose(got, np.maximum(ref, 0), rtol=1e-4, atol=1e-5)


def test_injective_schedule_splits_the_fused_loop_over_blocks_of_threads():
    a = te.placeholder((10, 30), name="a")
    b = topi.exp(a)
    func = _lowered(topi.cuda.schedule_injective(b), [a, b])
    assert _thread_tags(func) == ["threadIdx.x", "blockIdx.x"]  # innermost first
    an = RNG.random((10, 30), dtype=np.float32)
    np.testing.assert_allclose(run_prim_func(func, an, np.zeros_like(an))[1], np.exp(an), rtol=1e-6)
