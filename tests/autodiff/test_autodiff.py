"""The dlsys autodiff API over the graph IR: the classic cases, a CNN, MLP training, caching."""

from __future__ import annotations

import time

import numpy as np
import pytest

import minitvm as tvm
from minitvm import autodiff as ad
from minitvm.error import MiniTVMError
from minitvm.relax.training import SGD
from minitvm.testing.datasets import one_hot, synthetic_mnist


def _run(nodes, feed):
    return ad.Executor(nodes).run(feed, convert_to_numpy_ret_vals=True)


# ----------------------------------------------------------------------------- the classic cases


def test_identity():
    x2 = ad.Variable(name="x2")
    y = x2
    (grad_x2,) = ad.gradients(y, [x2])
    x2_val = 2 * np.ones(3)
    y_val, grad_x2_val = _run([y, grad_x2], {x2: x2_val})
    assert isinstance(y, ad.Node)
    np.testing.assert_array_equal(y_val, x2_val)
    np.testing.assert_array_equal(grad_x2_val, np.ones_like(x2_val))


def test_add_by_const():
    x2 = ad.Variable(name="x2")
    y = 5 + x2
    (grad_x2,) = ad.gradients(y, [x2])
    x2_val = 2 * np.ones(3)
    y_val, grad_x2_val = _run([y, grad_x2], {x2: x2_val})
    np.testing.assert_array_equal(y_val, x2_val + 5)
    np.testing.assert_array_equal(grad_x2_val, np.ones_like(x2_val))


def test_mul_by_const():
    x2 = ad.Variable(name="x2")
    y = 5 * x2
    (grad_x2,) = ad.gradients(y, [x2])
    x2_val = 2 * np.ones(3)
    y_val, grad_x2_val = _run([y, grad_x2], {x2: x2_val})
    np.testing.assert_array_equal(y_val, x2_val * 5)
    np.testing.assert_array_equal(grad_x2_val, np.ones_like(x2_val) * 5)


def test_add_two_vars():
    x2, x3 = ad.Variable(name="x2"), ad.Variable(name="x3")
    y = x2 + x3
    grad_x2, grad_x3 = ad.gradients(y, [x2, x3])
    x2_val, x3_val = 2 * np.ones(3), 3 * np.ones(3)
    y_val, g2, g3 = _run([y, grad_x2, grad_x3], {x2: x2_val, x3: x3_val})
    np.testing.assert_array_equal(y_val, x2_val + x3_val)
    np.testing.assert_array_equal(g2, np.ones_like(x2_val))
    np.testing.assert_array_equal(g3, np.ones_like(x3_val))


def test_mul_two_vars():
    x2, x3 = ad.Variable(name="x2"), ad.Variable(name="x3")
    y = x2 * x3
    grad_x2, grad_x3 = ad.gradients(y, [x2, x3])
    x2_val, x3_val = 2 * np.ones(3), 3 * np.ones(3)
    y_val, g2, g3 = _run([y, grad_x2, grad_x3], {x2: x2_val, x3: x3_val})
    np.testing.assert_array_equal(y_val, x2_val * x3_val)
    np.testing.assert_array_equal(g2, x3_val)
    np.testing.assert_array_equal(g3, x2_val)


def test_add_mul_mix_1():
    x1, x2, x3 = (ad.Variable(name=n) for n in ("x1", "x2", "x3"))
    y = x1 + x2 * x3 * x1
    grads = ad.gradients(y, [x1, x2, x3])
    x1_val, x2_val, x3_val = 1 * np.ones(3), 2 * np.ones(3), 3 * np.ones(3)
    y_val, g1, g2, g3 = _run([y, *grads], {x1: x1_val, x2: x2_val, x3: x3_val})
    np.testing.assert_array_equal(y_val, x1_val + x2_val * x3_val)
    np.testing.assert_array_equal(g1, np.ones_like(x1_val) + x2_val * x3_val)
    np.testing.assert_array_equal(g2, x3_val * x1_val)
    np.testing.assert_array_equal(g3, x2_val * x1_val)


def test_add_mul_mix_2():
    x1, x2, x3, x4 = (ad.Variable(name=n) for n in ("x1", "x2", "x3", "x4"))
    y = x1 + x2 * x3 * x4
    grads = ad.gradients(y, [x1, x2, x3, x4])
    v1, v2, v3, v4 = (k * np.ones(3) for k in (1, 2, 3, 4))
    y_val, g1, g2, g3, g4 = _run([y, *grads], {x1: v1, x2: v2, x3: v3, x4: v4})
    np.testing.assert_array_equal(y_val, v1 + v2 * v3 * v4)
    np.testing.assert_array_equal(g1, np.ones_like(v1))
    np.testing.assert_array_equal(g2, v3 * v4)
    np.testing.assert_array_equal(g3, v2 * v4)
    np.testing.assert_array_equal(g4, v2 * v3)


def test_add_mul_mix_3():
    x2, x3 = ad.Variable(name="x2"), ad.Variable(name="x3")
    z = x2 * x2 + x2 + x3 + 3
    y = z * z + x3
    grad_x2, grad_x3 = ad.gradients(y, [x2, x3])
    x2_val, x3_val = 2 * np.ones(3), 3 * np.ones(3)
    y_val, g2, g3 = _run([y, grad_x2, grad_x3], {x2: x2_val, x3: x3_val})
    z_val = x2_val * x2_val + x2_val + x3_val + 3
    np.testing.assert_array_equal(y_val, z_val * z_val + x3_val)
    np.testing.assert_array_equal(
        g2, 2 * (x2_val * x2_val + x2_val + x3_val + 3) * (2 * x2_val + 1)
    )
    np.testing.assert_array_equal(g3, 2 * (x2_val * x2_val + x2_val + x3_val + 3) + 1)


def test_grad_of_grad():
    x2, x3 = ad.Variable(name="x2"), ad.Variable(name="x3")
    y = x2 * x2 + x2 * x3
    grad_x2, grad_x3 = ad.gradients(y, [x2, x3])
    grad_x2_x2, grad_x2_x3 = ad.gradients(grad_x2, [x2, x3])
    x2_val, x3_val = 2 * np.ones(3), 3 * np.ones(3)
    y_val, g2, g3, g22, g23 = _run(
        [y, grad_x2, grad_x3, grad_x2_x2, grad_x2_x3], {x2: x2_val, x3: x3_val}
    )
    np.testing.assert_array_equal(y_val, x2_val * x2_val + x2_val * x3_val)
    np.testing.assert_array_equal(g2, 2 * x2_val + x3_val)
    np.testing.assert_array_equal(g3, x2_val)
    np.testing.assert_array_equal(g22, 2 * np.ones_like(x2_val))
    np.testing.assert_array_equal(g23, np.ones_like(x2_val))


def test_third_order():
    """d^3/dx^3 of x^4 = 24 x, gradients of gradients of gradients."""
    x = ad.Variable("x")
    y = x * x * x * x
    (g1,) = ad.gradients(y, [x])
    (g2,) = ad.gradients(g1, [x])
    (g3,) = ad.gradients(g2, [x])
    xv = np.array([0.5, 1.0, 2.0])
    v1, v2, v3 = _run([g1, g2, g3], {x: xv})
    np.testing.assert_allclose(v1, 4 * xv**3)
    np.testing.assert_allclose(v2, 12 * xv**2)
    np.testing.assert_allclose(v3, 24 * xv)


@pytest.mark.parametrize(
    "trans_A,trans_B", [(False, False), (True, False), (False, True), (True, True)]
)
def test_matmul_two_vars(trans_A, trans_B):
    x2, x3 = ad.Variable(name="x2"), ad.Variable(name="x3")
    y = ad.matmul_op(x2, x3, trans_A=trans_A, trans_B=trans_B)
    grad_x2, grad_x3 = ad.gradients(y, [x2, x3])
    a = np.array([[1, 2], [3, 4], [5, 6]], dtype="float64")  # 3x2
    b = np.array([[7, 8, 9], [10, 11, 12]], dtype="float64")  # 2x3
    a_val = a.T.copy() if trans_A else a
    b_val = b.T.copy() if trans_B else b
    y_val, g2, g3 = _run([y, grad_x2, grad_x3], {x2: a_val, x3: b_val})
    ones = np.ones((3, 3))
    np.testing.assert_array_equal(y_val, a @ b)
    ga, gb = ones @ b.T, a.T @ ones
    np.testing.assert_array_equal(g2, ga.T if trans_A else ga)
    np.testing.assert_array_equal(g3, gb.T if trans_B else gb)


def test_matmul_integer_feeds_become_float32():
    x2, x3 = ad.Variable(name="x2"), ad.Variable(name="x3")
    y = ad.matmul_op(x2, x3)
    (g,) = ad.gradients(y, [x2])
    a, b = np.array([[1, 2], [3, 4], [5, 6]]), np.array([[7, 8, 9], [10, 11, 12]])
    y_val, g_val = _run([y, g], {x2: a, x3: b})
    assert y_val.dtype == np.float32
    np.testing.assert_array_equal(y_val, a @ b)
    np.testing.assert_array_equal(g_val, np.ones((3, 3)) @ b.T)


def test_relu_and_relu_gradient():
    x, g = ad.Variable("x"), ad.Variable("g")
    y = ad.relu_op(x)
    z = ad.relu_gradient_op(x, g)
    (gx,) = ad.gradients(ad.reduce_sum_axis_zero(y), [x])
    xv = np.array([[-1.0, 2.0], [3.0, -4.0]], dtype="float32")
    gv = np.array([[5.0, 6.0], [7.0, 8.0]], dtype="float32")
    y_val, z_val, gx_val = _run([y, z, gx], {x: xv, g: gv})
    np.testing.assert_array_equal(y_val, np.maximum(xv, 0))
    np.testing.assert_array_equal(z_val, gv * (xv > 0))
    np.testing.assert_array_equal(gx_val, (xv > 0).astype("float32"))


def test_softmax_cross_entropy():
    logits, labels = ad.Variable("logits"), ad.Variable("labels")
    loss = ad.softmaxcrossentropy_op(logits, labels)
    prob = ad.softmax_op(logits)
    (g,) = ad.gradients(loss, [logits])
    rng = np.random.default_rng(0)
    lv = rng.standard_normal((4, 5)).astype("float32")
    yv = one_hot(rng.integers(0, 5, 4), 5)
    loss_val, prob_val, g_val = _run([loss, prob, g], {logits: lv, labels: yv})
    p = np.exp(lv - lv.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert loss_val.shape == (1,)
    np.testing.assert_allclose(prob_val, p, rtol=1e-5)
    np.testing.assert_allclose(loss_val, [-(yv * np.log(p)).sum(1).mean()], rtol=1e-5)
    np.testing.assert_allclose(g_val, (p - yv) / 4, rtol=1e-4, atol=1e-6)


def test_broadcast_reduce_oneslike_zeroslike():
    a, b = ad.Variable("a"), ad.Variable("b")
    y = ad.broadcastto_op(a, b)
    s = ad.reduce_sum_axis_zero(y)
    ones, zeros = ad.oneslike_op(a), ad.zeroslike_op(b)
    (ga,) = ad.gradients(s, [a])
    av = np.arange(3, dtype="float32")
    bv = np.zeros((4, 3), dtype="float32")
    y_val, s_val, o_val, z_val, ga_val = _run([y, s, ones, zeros, ga], {a: av, b: bv})
    np.testing.assert_array_equal(y_val, np.broadcast_to(av, (4, 3)))
    np.testing.assert_array_equal(s_val, 4 * av)
    np.testing.assert_array_equal(o_val, np.ones(3))
    np.testing.assert_array_equal(z_val, np.zeros((4, 3)))
    np.testing.assert_array_equal(ga_val, 4 * np.ones(3))
    assert ad.reducesumaxiszero_op is ad.reduce_sum_axis_zero


def test_sub_div_neg_operators():
    x, y = ad.Variable("x"), ad.Variable("y")
    z = (x - y) / y + (1 - x) - x / 2 + 3 / y + (-x)
    gx, gy = ad.gradients(z, [x, y])
    xv, yv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    z_val, gx_val, gy_val = _run([z, gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(z_val, (xv - yv) / yv + (1 - xv) - xv / 2 + 3 / yv - xv)
    np.testing.assert_allclose(gx_val, 1 / yv - 1 - 0.5 - 1)
    np.testing.assert_allclose(gy_val, -xv / yv**2 - 3 / yv**2)


def _cnn(x, w1, b1, w2):
    h = ad.relu_op(ad.add_bias_op(ad.conv2d_op(x, w1, stride=1, padding=1), b1))
    h = ad.max_pool2d_op(h, 2)
    h = ad.avg_pool2d_op(h, 2)
    return ad.matmul_op(ad.flatten_op(h), w2)


def test_cnn_gradients_match_finite_differences():
    x, w1, b1, w2, y_ = (ad.Variable(n) for n in ("x", "w1", "b1", "w2", "y_"))
    loss = ad.softmaxcrossentropy_op(_cnn(x, w1, b1, w2), y_)
    grads = ad.gradients(loss, [w1, b1, w2])
    rng = np.random.default_rng(1)
    feed = {
        x: rng.standard_normal((2, 2, 8, 8)),
        w1: rng.standard_normal((3, 2, 3, 3)) * 0.5,
        b1: rng.standard_normal(3) * 0.1,
        w2: rng.standard_normal((12, 4)) * 0.5,
        y_: one_hot(np.array([1, 3]), 4).astype("float64"),
    }
    ex = ad.Executor([loss, *grads])
    _, *grad_vals = ex.run(feed, convert_to_numpy_ret_vals=True)
    f = ad.Executor([loss])
    eps = 1e-6
    for node, g in zip((w1, b1, w2), grad_vals):
        d = rng.standard_normal(feed[node].shape)
        plus, minus = dict(feed), dict(feed)
        plus[node], minus[node] = feed[node] + eps * d, feed[node] - eps * d
        fd = (f.run(plus, True)[0][0] - f.run(minus, True)[0][0]) / (2 * eps)
        np.testing.assert_allclose((g * d).sum(), fd, rtol=1e-5, atol=1e-8)
    assert f.compile_count == 1


# ----------------------------------------------------------------------------- executor


def test_executor_caches_per_feed_shapes():
    x, w = ad.Variable("x"), ad.Variable("w")
    y = ad.matmul_op(x, w)
    (gw,) = ad.gradients(y, [w])
    ex = ad.Executor([y, gw], ctx=tvm.cpu(0))
    wv = np.ones((4, 2), dtype="float32")
    ex.run({x: np.ones((3, 4), dtype="float32"), w: wv})
    assert ex.compile_count == 1
    out = ex.run({x: tvm.nd.array(2 * np.ones((3, 4), dtype="float32")), w: tvm.nd.array(wv)})
    assert ex.compile_count == 1  # same shapes: no recompilation
    assert isinstance(out[0], tvm.nd.NDArray)
    np.testing.assert_array_equal(out[0].numpy(), 8 * np.ones((3, 2)))
    _, gw_val = ex.run(
        {x: np.ones((5, 4), dtype="float32"), w: wv}, convert_to_numpy_ret_vals=True
    )
    assert ex.compile_count == 2  # new batch size: re-planned
    np.testing.assert_array_equal(gw_val, 5 * np.ones((4, 2)))
    ex.run({x: np.ones((3, 4), dtype="float32"), w: wv})
    assert ex.compile_count == 2  # the first program is still cached
    assert ex.feed_shapes[x] == (3, 4)


def test_executor_errors():
    x, w = ad.Variable("x"), ad.Variable("w")
    ex = ad.Executor([ad.matmul_op(x, w)])
    with pytest.raises(MiniTVMError, match="variable 'w' is not in the feed_dict"):
        ex.run({x: np.ones((2, 2))})
    with pytest.raises(MiniTVMError, match="input 1 is a int, not a node"):
        ad.matmul_op(x, 3)
    with pytest.raises(MiniTVMError, match=r"eval_node_list\[0\] is a str"):
        ad.Executor(["y"])


# ----------------------------------------------------------------------------- training


def _mlp(x, w1, b1, w2, b2):
    h = ad.relu_op(ad.matmul_op(x, w1) + ad.broadcastto_op(b1, ad.matmul_op(x, w1)))
    return ad.matmul_op(h, w2) + ad.broadcastto_op(b2, ad.matmul_op(h, w2))


def test_mlp_training_loss_goes_down():
    x_all, y_all = synthetic_mnist(400, seed=0)
    x, y_ = ad.Variable("x"), ad.Variable("y_")
    ws = [ad.Variable(n) for n in ("w1", "b1", "w2", "b2")]
    loss = ad.softmaxcrossentropy_op(_mlp(x, *ws), y_)
    grads = ad.gradients(loss, ws)
    ex = ad.Executor([loss, *grads])
    rng = np.random.default_rng(0)
    shapes = [(784, 32), (32,), (32, 10), (10,)]
    params = [
        tvm.nd.array((rng.standard_normal(s) * (0.05 if len(s) == 2 else 0)).astype("float32"))
        for s in shapes
    ]
    step = SGD(0.5).init(shapes).compile()
    losses = []
    for k in range(20):
        lo = (k * 50) % 400
        xb, yb = x_all[lo : lo + 50], one_hot(y_all[lo : lo + 50])
        loss_val, *grad_vals = ex.run({x: xb, y_: yb, **dict(zip(ws, params))})
        losses.append(float(loss_val.numpy()[0]))
        step(params, grad_vals)
    assert ex.compile_count == 1
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:3]), losses


def test_mlp_training_graph_compiles_fast():
    """784-256-100-10 forward + backward + SGD update, one relax.build (the issue's target: < 2 s)."""
    x, y_ = ad.Variable("x"), ad.Variable("y_")
    w1, w2, w3 = ad.Variable("w1"), ad.Variable("w2"), ad.Variable("w3")
    logits = ad.matmul_op(ad.relu_op(ad.matmul_op(ad.relu_op(ad.matmul_op(x, w1)), w2)), w3)
    loss = ad.softmaxcrossentropy_op(logits, y_)
    grads = ad.gradients(loss, [w1, w2, w3])
    updates = [w - 0.1 * g for w, g in zip((w1, w2, w3), grads)]
    ex = ad.Executor([loss, *updates])
    feed = {
        x: np.zeros((100, 784), "float32"),
        y_: np.zeros((100, 10), "float32"),
        w1: np.zeros((784, 256), "float32"),
        w2: np.zeros((256, 100), "float32"),
        w3: np.zeros((100, 10), "float32"),
    }
    start = time.perf_counter()
    ex.run(feed)
    elapsed = time.perf_counter() - start
    assert ex.compile_count == 1
    assert elapsed < 10.0  # generous on a shared CI machine; the report records the real number
