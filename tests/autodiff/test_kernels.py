"""The dlsys kernel builders at the assignment's shapes, against numpy (as its test_tvm_op.py)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.autodiff import kernels as K
from minitvm.error import ShapeError

tgt = tgt_host = "llvm"
ctx = tvm.cpu(0)
dtype = "float32"


def nd(x):
    return tvm.nd.array(np.ascontiguousarray(x, dtype=dtype), ctx)


def run(f, *inputs, out_shape):
    out = nd(np.zeros(out_shape))
    f(*(nd(x) for x in inputs), out)
    return out.numpy()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(500, 200), (2000, 3000)])
def test_elementwise(shape, rng):
    x = rng.uniform(0, 10, shape).astype(dtype)
    y = rng.uniform(0, 10, shape).astype(dtype)
    c = float(rng.uniform(0, 10))
    cases = [
        (K.make_elemwise_add(shape, tgt, tgt_host, "elem_add"), (x, y), x + y),
        (K.make_elemwise_mul(shape, tgt, tgt_host, "elem_mul"), (x, y), x * y),
        (K.make_elemwise_add_by_const(shape, c, tgt, tgt_host, "add_c"), (x,), x + np.float32(c)),
        (K.make_elemwise_mul_by_const(shape, c, tgt, tgt_host, "mul_c"), (x,), x * np.float32(c)),
    ]
    for f, ins, want in cases:
        np.testing.assert_allclose(run(f, *ins, out_shape=shape), want, rtol=1e-5)


@pytest.mark.parametrize("shape", [(500, 200), (7, 13), (3, 1009)])
def test_relu_and_relu_gradient(shape, rng):
    x = rng.uniform(-1, 1, shape).astype(dtype)
    g = rng.uniform(-1, 1, shape).astype(dtype)
    relu = K.make_relu(shape, tgt, tgt_host, "relu")
    np.testing.assert_array_equal(run(relu, x, out_shape=shape), np.maximum(x, 0))
    relu_grad = K.make_relu_gradient(shape, tgt, tgt_host, "relu_grad")
    np.testing.assert_array_equal(run(relu_grad, x, g, out_shape=shape), np.where(x > 0, g, 0))


@pytest.mark.parametrize(
    "shapeA, transA, shapeB, transB",
    [
        ((500, 700), False, (700, 1000), False),
        ((700, 500), True, (700, 1000), False),
        ((500, 700), False, (1000, 700), True),
        ((700, 500), True, (1000, 700), True),
        ((37, 19), False, (10, 19), True),  # nothing divides: padded rows and columns
        ((19, 37), True, (19, 10), False),
    ],
)
def test_matrix_mul(shapeA, transA, shapeB, transB, rng):
    a = rng.uniform(0, 10, shapeA).astype(dtype)
    b = rng.uniform(0, 10, shapeB).astype(dtype)
    want = (a.T if transA else a) @ (b.T if transB else b)
    f = K.make_matrix_mul(shapeA, transA, shapeB, transB, tgt, tgt_host, "matmul")
    np.testing.assert_allclose(run(f, a, b, out_shape=want.shape), want, rtol=1e-5)


def test_matrix_mul_shape_mismatch_names_both_shapes():
    with pytest.raises(ShapeError, match=r"\(500, 700\).*\(500, 1000\).*700 and 500 differ"):
        K.make_matrix_mul((500, 700), False, (500, 1000), False, tgt, tgt_host, "mm")


def _conv2d_reference(x, f):
    windows = np.lib.stride_tricks.sliding_window_view(x, f.shape[2:], axis=(2, 3))
    return np.einsum("nchwrs,mcrs->nmhw", windows, f, optimize=True)


@pytest.mark.parametrize(
    "shapeX, shapeF", [((100, 3, 28, 28), (10, 3, 5, 5)), ((2, 2, 6, 7), (3, 2, 3, 2))]
)
def test_conv2d(shapeX, shapeF, rng):
    x = rng.uniform(0, 10, shapeX).astype(dtype)
    f = rng.uniform(0, 10, shapeF).astype(dtype)
    want = _conv2d_reference(x.astype(np.float64), f.astype(np.float64))
    conv = K.make_conv2d(shapeX, shapeF, tgt, tgt_host, "conv2d")
    np.testing.assert_allclose(run(conv, x, f, out_shape=want.shape), want, rtol=1e-5)


def test_conv2d_channel_mismatch():
    with pytest.raises(ShapeError, match=r"same C, got \(1, 3, 8, 8\) and \(2, 4, 3, 3\)"):
        K.make_conv2d((1, 3, 8, 8), (2, 4, 3, 3), tgt, tgt_host, "conv2d")


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("shape", [(400, 1000), (7, 10), (5, 1003)])
def test_softmax(shape, rng):
    x = rng.uniform(-5, 5, shape).astype(dtype)
    f = K.make_matrix_softmax(shape, tgt, tgt_host, "softmax")
    np.testing.assert_allclose(run(f, x, out_shape=shape), _softmax(x), rtol=1e-5, atol=1e-9)


def test_softmax_extreme_logits_do_not_overflow(rng):
    x = rng.uniform(-300, 300, (6, 40)).astype(dtype)
    f = K.make_matrix_softmax(x.shape, tgt, tgt_host, "softmax")
    got = run(f, x, out_shape=x.shape)
    np.testing.assert_allclose(got, _softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("shape", [(400, 1000), (1000, 10), (3, 1003)])
def test_softmax_cross_entropy(shape, rng):
    x = rng.uniform(-5, 5, shape).astype(dtype)
    y = np.eye(shape[1], dtype=dtype)[rng.integers(0, shape[1], shape[0])]
    want = np.mean(-np.sum(y * np.log(_softmax(x.astype(np.float64))), axis=1))
    f = K.make_matrix_softmax_cross_entropy(shape, tgt, tgt_host, "softmax_xent")
    got = run(f, x, y, out_shape=(1,))
    assert got.shape == (1,)
    np.testing.assert_allclose(got, [want], rtol=1e-5)


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    # softmax underflows to exactly 0 here, so log(softmax) would be -inf
    x = np.array([[1000.0, 0.0, -1000.0], [0.0, 500.0, 0.0]], dtype)
    y = np.array([[0, 0, 1], [0, 1, 0]], dtype)
    f = K.make_matrix_softmax_cross_entropy(x.shape, tgt, tgt_host, "xent")
    np.testing.assert_allclose(run(f, x, y, out_shape=(1,)), [1000.0], rtol=1e-5)


def test_reduce_sum_axis_zero(rng):
    for shape in [(500, 200, 100), (500, 200), (3, 5)]:
        x = rng.uniform(-10, 10, shape).astype(dtype)
        f = K.make_reduce_sum_axis_zero(shape, tgt, tgt_host, "reduce_sum_axis_zero")
        want = x.astype(np.float64).sum(axis=0)
        np.testing.assert_allclose(run(f, x, out_shape=shape[1:]), want, rtol=1e-5, atol=1e-3)


def test_reduce_sum_axis_zero_needs_two_dims():
    with pytest.raises(ShapeError, match=r"at least 2 dimensions, got \(7,\)"):
        K.make_reduce_sum_axis_zero((7,), tgt, tgt_host, "r")


@pytest.mark.parametrize(
    "shape, to_shape", [((200, 300), (130, 200, 300)), ((1, 300), (4, 5, 300)), ((10,), (33, 10))]
)
def test_broadcast_to(shape, to_shape, rng):
    x = rng.uniform(-1, 1, shape).astype(dtype)
    f = K.make_broadcast_to(shape, to_shape, tgt, tgt_host, "broadcast_to")
    np.testing.assert_array_equal(run(f, x, out_shape=to_shape), np.broadcast_to(x, to_shape))


def test_broadcast_to_incompatible():
    with pytest.raises(ShapeError, match=r"cannot broadcast \(3, 4\) to \(2, 5, 4\)"):
        K.make_broadcast_to((3, 4), (2, 5, 4), tgt, tgt_host, "b")


def test_sgd_update_in_place(rng):
    shape = (784, 256)
    p = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    f = K.make_sgd_update(shape, 0.1, tgt, tgt_host, "sgd_update")
    param, grad = nd(p), nd(g)
    f(param, grad, param)
    f(param, grad, param)
    np.testing.assert_allclose(param.numpy(), p - 2 * np.float32(0.1) * g, rtol=1e-5, atol=1e-6)


def test_float64_builders(rng):
    def nd64(x):
        return tvm.nd.array(np.ascontiguousarray(x, dtype="float64"), ctx)

    x = rng.uniform(-3, 3, (6, 20))
    w = rng.uniform(-3, 3, (20, 5))
    out = nd64(np.zeros((6, 5)))
    K.make_matrix_mul((6, 20), False, (20, 5), False, tgt, tgt_host, "mm", "float64")(
        nd64(x), nd64(w), out
    )
    np.testing.assert_allclose(out.numpy(), x @ w, rtol=1e-12)
    out = nd64(np.zeros((6, 20)))
    K.make_matrix_softmax((6, 20), tgt, tgt_host, "softmax", "float64")(nd64(x), out)
    np.testing.assert_allclose(out.numpy(), _softmax(x), rtol=1e-12)
    out = nd64(np.zeros((6, 20)))
    K.make_elemwise_mul_by_const((6, 20), 0.1, tgt, tgt_host, "mul_c", "float64")(nd64(x), out)
    np.testing.assert_allclose(out.numpy(), x * 0.1, rtol=1e-15)
