"""The dlsys 2018 assignment 2 call sequences, re-written: 2018 flat names under `import minitvm as tvm`.

Kernel builders go through `tvm.placeholder / tvm.compute / tvm.create_schedule / tvm.build`
exactly as the assignment's `tvm_op.py` does, an executor allocates `tvm.nd.empty` buffers and
calls the kernels in place, and the MNIST script's data handling (`copyfrom` of float64 one-hot
labels into float32 arrays) runs as written. Every result is checked against numpy.
"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import topi

TGT = "llvm"
RNG = np.random.default_rng(7)


def _build(s, args, name):
    return tvm.build(s, args, TGT, target_host=TGT, name=name)


def _elemwise(shape, fn, name, n_in=2):
    ins = [tvm.placeholder(shape, dtype="float32", name=f"in{k}") for k in range(n_in)]
    out = tvm.compute(shape, lambda *i: fn(*[t(*i) for t in ins]))
    return _build(tvm.create_schedule(out.op), [*ins, out], name)


def _matmul(shape_a, trans_a, shape_b, trans_b, name):
    A = tvm.placeholder(shape_a, dtype="float32", name="A")
    B = tvm.placeholder(shape_b, dtype="float32", name="B")
    n = shape_a[1] if trans_a else shape_a[0]
    m = shape_b[0] if trans_b else shape_b[1]
    k = tvm.reduce_axis((0, shape_a[0] if trans_a else shape_a[1]), name="k")

    def body(i, j):
        a = A[k, i] if trans_a else A[i, k]
        b = B[j, k] if trans_b else B[k, j]
        return tvm.sum(a * b, axis=k)

    C = tvm.compute((n, m), body, name="C")
    s = tvm.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return _build(s, [A, B, C], name)


def _conv2d(shape_x, shape_f, name):
    n, c, h, w = shape_x
    m, _, r, q = shape_f
    X = tvm.placeholder(shape_x, dtype="float32", name="X")
    F = tvm.placeholder(shape_f, dtype="float32", name="F")
    rc, rr, rq = (tvm.reduce_axis((0, e), name=nm) for e, nm in ((c, "rc"), (r, "rr"), (q, "rq")))
    Y = tvm.compute(
        (n, m, h - r + 1, w - q + 1),
        lambda b, o, y, x: tvm.sum(X[b, rc, y + rr, x + rq] * F[o, rc, rr, rq], axis=[rc, rr, rq]),
    )
    return _build(tvm.create_schedule(Y.op), [X, F, Y], name)


def _softmax_xent(shape, name):
    n, m = shape
    A = tvm.placeholder(shape, dtype="float32", name="A")
    L = tvm.placeholder(shape, dtype="float32", name="L")
    j1, j2, j3 = (tvm.reduce_axis((0, m), name=f"j{k}") for k in (1, 2, 3))
    mx = tvm.compute((n,), lambda i: tvm.max(A[i, j1], axis=j1), name="mx")
    se = tvm.compute((n,), lambda i: tvm.sum(tvm.exp(A[i, j2] - mx[i]), axis=j2), name="se")
    row = tvm.compute(
        (n,), lambda i: tvm.sum(-L[i, j3] * (A[i, j3] - mx[i] - tvm.log(se[i])), axis=j3)
    )
    r = tvm.reduce_axis((0, n), name="r")
    total = tvm.compute((1,), lambda _: tvm.sum(row[r], axis=r), name="total")
    out = tvm.compute((1,), lambda i: total[i] / n, name="out")
    return _build(tvm.create_schedule(out.op), [A, L, out], name)


def _softmax_np(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _nd(x):
    return tvm.nd.array(x, ctx=tvm.context(TGT, 0))


def test_flat_2018_names_are_the_modern_objects():
    assert tvm.create_schedule is tvm.te.create_schedule
    assert tvm.placeholder is tvm.te.placeholder and tvm.compute is tvm.te.compute
    assert tvm.select is tvm.tir.select and tvm.const is tvm.tir.const


@pytest.mark.parametrize(
    "fn,ref",
    [(lambda a, b: a + b, np.add), (lambda a, b: a * b, np.multiply)],
    ids=["add", "mul"],
)
def test_elementwise_kernels(fn, ref):
    x, y = RNG.uniform(0, 10, (2, 50, 20)).astype("float32")
    z = _nd(np.zeros((50, 20), "float32"))
    _elemwise((50, 20), fn, "elem")(_nd(x), _nd(y), z)
    np.testing.assert_allclose(z.asnumpy(), ref(x, y), rtol=1e-5)


def test_by_const_relu_and_relu_gradient():
    x = RNG.uniform(-1, 1, (30, 40)).astype("float32")
    g = RNG.uniform(-5, 5, (30, 40)).astype("float32")
    k = float(RNG.uniform(0, 10))
    out = _nd(np.zeros_like(x))
    _elemwise(x.shape, lambda a: a + k, "add_const", n_in=1)(_nd(x), out)
    np.testing.assert_allclose(out.asnumpy(), x + k, rtol=1e-5)
    _elemwise(x.shape, lambda a: tvm.max(a, tvm.const(0, "float32")), "relu", 1)(_nd(x), out)
    np.testing.assert_array_equal(out.asnumpy(), np.maximum(x, 0))
    relu_grad = _elemwise(
        x.shape, lambda a, gr: tvm.select(a > 0, gr, tvm.const(0, "float32")), "relu_grad"
    )
    relu_grad(_nd(x), _nd(g), out)
    np.testing.assert_array_equal(out.asnumpy(), (x > 0) * g)


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (False, True), (True, False), (True, True)])
def test_matrix_multiply_four_transpose_cases(trans_a, trans_b):
    a = RNG.uniform(0, 1, (24, 40) if not trans_a else (40, 24)).astype("float32")
    b = RNG.uniform(0, 1, (40, 36) if not trans_b else (36, 40)).astype("float32")
    c = _nd(np.zeros((24, 36), "float32"))
    _matmul(a.shape, trans_a, b.shape, trans_b, "matrix_mul")(_nd(a), _nd(b), c)
    ref = (a.T if trans_a else a) @ (b.T if trans_b else b)
    np.testing.assert_allclose(c.asnumpy(), ref, rtol=1e-5)


def test_conv2d_stride_one_no_padding():
    x = RNG.uniform(0, 1, (2, 3, 10, 10)).astype("float32")
    f = RNG.uniform(0, 1, (4, 3, 3, 3)).astype("float32")
    y = _nd(np.zeros((2, 4, 8, 8), "float32"))
    _conv2d(x.shape, f.shape, "conv2d")(_nd(x), _nd(f), y)
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
    ref = np.einsum("ncyxrq,ocrq->noyx", windows, f)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-4)


def test_softmax_cross_entropy_is_a_1_element_mean():
    y = RNG.uniform(-5, 5, (16, 10)).astype("float32")
    lab = RNG.uniform(-5, 5, (16, 10)).astype("float32")
    out = _nd(np.zeros((1,), "float32"))
    _softmax_xent(y.shape, "xent")(_nd(y), _nd(lab), out)
    ref = np.mean(-np.sum(lab * np.log(_softmax_np(y)), axis=1), keepdims=True)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)


def test_topi_reduce_sum_and_broadcast_to_through_create_schedule():
    A = tvm.placeholder((5, 4, 3), dtype="float32", name="A")
    S = topi.sum(A, axis=0, keepdims=False)
    f_sum = _build(tvm.create_schedule(S.op), [A, S], "reduce_sum_axis_zero")
    B = tvm.placeholder((4, 3), dtype="float32", name="B")
    C = topi.broadcast_to(B, (6, 4, 3))
    f_bc = _build(tvm.create_schedule(C.op), [B, C], "broadcast_to")
    x = RNG.uniform(-5, 5, (5, 4, 3)).astype("float32")
    s = _nd(np.zeros((4, 3), "float32"))
    f_sum(_nd(x), s)
    np.testing.assert_allclose(s.asnumpy(), x.sum(axis=0), rtol=1e-5)
    c = _nd(np.zeros((6, 4, 3), "float32"))
    f_bc(s, c)
    np.testing.assert_array_equal(c.asnumpy(), np.broadcast_to(s.asnumpy(), (6, 4, 3)))


def test_sgd_update_in_place():
    shape = (8, 5)
    lr = 0.1
    X = tvm.placeholder(shape, dtype="float32", name="X")
    G = tvm.placeholder(shape, dtype="float32", name="G")
    Y = tvm.compute(shape, lambda *i: X(*i) - lr * G(*i))
    update = _build(tvm.create_schedule(Y.op), [X, G, Y], "sgd")
    w = RNG.standard_normal(shape).astype("float32")
    g = RNG.standard_normal(shape).astype("float32")
    w_nd = _nd(w)
    update(w_nd, _nd(g), w_nd)  # the MNIST script passes the weight as input and output
    np.testing.assert_allclose(w_nd.asnumpy(), w - np.float32(lr) * g, rtol=1e-6)


def test_mnist_data_handling_copyfrom_converts_float64():
    labels = RNG.integers(0, 10, 12)
    one_hot = np.zeros((labels.size, labels.max() + 1))  # float64, as the script builds it
    one_hot[np.arange(labels.size), labels] = 1
    y_val = tvm.nd.array(np.empty((12, one_hot.shape[1]), dtype=np.float32), ctx=tvm.cpu(0))
    assert y_val.copyfrom(one_hot) is y_val
    assert y_val.dtype == "float32"
    np.testing.assert_array_equal(y_val.asnumpy(), one_hot.astype(np.float32))
    assert isinstance(y_val, tvm.ndarray.NDArray) and tvm.context("llvm", 0) == tvm.cpu(0)


def test_executor_style_training_step_matches_numpy():
    """An assignment-style executor: shapes known up front, buffers from nd.empty, kernels in place."""
    batch, d_in, d_out = 16, 12, 4
    x = RNG.uniform(0, 1, (batch, d_in)).astype("float32")
    lab = RNG.integers(0, d_out, batch)
    y_ = np.eye(d_out, dtype="float64")[lab]
    w = np.zeros((d_in, d_out), "float32")
    mm = _matmul((batch, d_in), False, (d_in, d_out), False, "fwd")
    mm_grad = _matmul((batch, d_in), True, (batch, d_out), False, "grad_w")
    xent = _softmax_xent((batch, d_out), "loss")
    bufs = {k: tvm.nd.empty(shape, dtype="float32", ctx=tvm.cpu(0)) for k, shape in
            [("logits", (batch, d_out)), ("loss", (1,)), ("gw", (d_in, d_out)), ("y_", (batch, d_out))]}
    bufs["y_"].copyfrom(y_)
    x_nd, w_nd = _nd(x), _nd(w)
    mm(x_nd, w_nd, bufs["logits"])
    xent(bufs["logits"], bufs["y_"], bufs["loss"])
    np.testing.assert_allclose(bufs["loss"].asnumpy(), [np.log(d_out)], rtol=1e-5)
    dlogits = _nd((_softmax_np(bufs["logits"].asnumpy()) - y_).astype("float32"))
    mm_grad(x_nd, dlogits, bufs["gw"])
    np.testing.assert_allclose(bufs["gw"].asnumpy(), x.T @ dlogits.asnumpy(), rtol=1e-5)
