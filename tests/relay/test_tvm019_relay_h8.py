"""Relay names TVM v0.19's relay tests use (issue 27, helper h8): each checked against numpy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import minitvm as tvm
import minitvm.topi.testing as ref
from minitvm import relay


def _run(build, *arrays):
    """build(*vars) on numpy inputs through relay.create_executor('graph', llvm)."""
    params = [relay.var(f"v{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    func = relay.Function(params, build(*params))
    out = relay.create_executor("graph", target="llvm").evaluate(func)(*arrays)
    return [o.numpy() for o in out] if isinstance(out, list | tuple) else out.numpy()


_RESIZE_CASES = [
    *itertools.product(
        ["nearest_neighbor", "linear"], ["asymmetric", "align_corners", "half_pixel"]
    )
]


@pytest.mark.parametrize(
    "method, mode, layout",
    [(m, c, "NCHW") for m, c in _RESIZE_CASES] + [("nearest_neighbor", "half_pixel", "NHWC")],
)
def test_resize2d_default_rounding_matches_reference(method, mode, layout):
    # rounding_method "" floors except under align_corners (it used to round: wrong pixels)
    x = np.random.default_rng(0).uniform(size=(1, 2, 5, 6)).astype("float32")
    size = (15, 18) if layout == "NCHW" else (6, 15)
    expected = ref.resize2d_python(x, (3, 3), layout, method, mode)
    got = _run(
        lambda v: relay.image.resize2d(
            v, size, None, layout, method, coordinate_transformation_mode=mode
        ),
        x,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["asymmetric", "half_pixel", "align_corners"])
def test_resize1d_nearest_default_rounding_matches_reference(mode):
    x = np.random.default_rng(1).uniform(size=(2, 3, 7)).astype("float32")
    expected = ref.resize1d_python(x, (3,), "NCW", "nearest_neighbor", mode)
    got = _run(
        lambda v: relay.image.resize1d(
            v, (21,), None, "NCW", "nearest_neighbor", coordinate_transformation_mode=mode
        ),
        x,
    )
    np.testing.assert_array_equal(got, expected)


def test_comparison_operators_build_relay_comparisons():
    a = relay.var("a", shape=(3,))
    b = relay.const(1.0)
    for built, name in [(a < b, "less"), (a > b, "greater"), (a <= b, "less_equal"),
                        (a >= b, "greater_equal")]:  # fmt: skip
        assert built.op.name == name
        assert built.astext() == getattr(relay, name)(a, b).astext()
    with pytest.raises(TypeError, match="relay.const"):
        a < 1.0  # noqa: B015 (TVM's rule: convert numbers with const first)


def test_more_elementwise_ops_match_numpy():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)).astype("float32")
    y = rng.standard_normal((3, 4)).astype("float32")
    for name, np_fn in [("less", np.less), ("greater_equal", np.greater_equal),
                        ("not_equal", np.not_equal), ("floor_mod", np.mod)]:  # fmt: skip
        np.testing.assert_allclose(_run(getattr(relay, name), x, y), np_fn(x, y), rtol=1e-5)
    for name, np_fn in [("floor", np.floor), ("ceil", np.ceil), ("sign", np.sign),
                        ("cos", np.cos), ("isnan", np.isnan)]:  # fmt: skip
        np.testing.assert_allclose(_run(getattr(relay, name), x), np_fn(x), rtol=1e-5, atol=1e-6)
    i = np.array([-7, -5, 5, 7], "int32")
    j = np.array([2, 3, -3, 2], "int32")
    np.testing.assert_array_equal(_run(relay.mod, i, j), np.fmod(i, j))  # truncated, as C
    np.testing.assert_array_equal(_run(relay.floor_mod, i, j), np.mod(i, j))


def test_transform_ops_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4)).astype("float32")
    assert _run(lambda v: relay.broadcast_to(v, (2, 3, 4)), x).shape == (2, 3, 4)
    np.testing.assert_array_equal(_run(lambda v: relay.tile(v, (2, 1)), x), np.tile(x, (2, 1)))
    np.testing.assert_array_equal(_run(lambda v: relay.repeat(v, 2, 1), x), np.repeat(x, 2, 1))
    np.testing.assert_array_equal(_run(lambda v: relay.reverse(v, 1), x), x[:, ::-1])
    np.testing.assert_array_equal(_run(relay.shape_of, x), np.array([3, 4], "int32"))
    np.testing.assert_array_equal(_run(lambda v: relay.argmax(v, axis=1), x), x.argmax(1))
    np.testing.assert_array_equal(_run(relay.argmin, x), x.argmin())
    np.testing.assert_array_equal(_run(lambda v: relay.argsort(v, axis=1), x), x.argsort(1))
    np.testing.assert_array_equal(
        _run(lambda v: relay.sort(v, axis=1, is_ascend=False), x), -np.sort(-x, 1)
    )
    values, indices = _run(lambda v: relay.topk(v, 2, axis=1).astuple(), x)
    np.testing.assert_array_equal(values, -np.sort(-x, 1)[:, :2])
    np.testing.assert_array_equal(indices, np.argsort(-x, 1)[:, :2])
    np.testing.assert_allclose(
        _run(lambda v: relay.collapse_sum_to(v, (1, 4)), x), x.sum(0, keepdims=True), rtol=1e-5
    )
    np.testing.assert_array_equal(
        _run(lambda a, b: relay.where(a < b, a, b), x, x[::-1].copy()), np.minimum(x, x[::-1])
    )
    hot = _run(
        lambda v: relay.one_hot(v, relay.const(5.0), relay.const(-1.0), 3, -1, "float32"),
        np.array([0, 2, 1], "int32"),
    )
    np.testing.assert_array_equal(hot, np.where(np.eye(3)[[0, 2, 1]] > 0, 5.0, -1.0))


def test_layout_transform_blocks_channels():
    x = np.random.default_rng(4).standard_normal((1, 32, 2, 3)).astype("float32")
    got = _run(lambda v: relay.layout_transform(v, "NCHW", "NCHW16c"), x)
    np.testing.assert_array_equal(got, x.reshape(1, 2, 16, 2, 3).transpose(0, 1, 3, 4, 2))
    back = _run(
        lambda v: relay.layout_transform(relay.layout_transform(v, "NCHW", "NHWC"), "NHWC", "NCHW"),
        x,
    )
    np.testing.assert_array_equal(back, x)


def test_shape_of_needs_a_static_shape():
    x = relay.var("x", shape=(relay.Any(), 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.shape_of(x)))
    with pytest.raises(tvm.error.MiniTVMError, match="shape_of"):
        relay.transform.InferType()(mod)


def test_statistical_and_boolean_reductions_match_numpy():
    x = np.random.default_rng(5).standard_normal((3, 4, 5)).astype("float32")
    close = {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(
        _run(lambda v: relay.variance(v, axis=(0, 2)), x), x.var((0, 2)), **close
    )
    np.testing.assert_allclose(
        _run(lambda v: relay.std(v, axis=1, keepdims=True, unbiased=True), x),
        x.std(1, keepdims=True, ddof=1),
        **close,
    )
    np.testing.assert_allclose(
        _run(lambda v: relay.variance(v, axis=1, exclude=True), x), x.var((0, 2)), **close
    )
    np.testing.assert_allclose(
        _run(lambda v: relay.logsumexp(v, axis=2), x), np.log(np.exp(x).sum(2)), **close
    )
    b = x > 0
    np.testing.assert_array_equal(_run(lambda v: relay.all(v, axis=1), b), b.all(1))
    np.testing.assert_array_equal(_run(relay.any, b), b.any())
    # argmax over two axes indexes their flattened product, as int32
    got = _run(lambda v: relay.argmax(v, axis=(0, 2), keepdims=True), x)
    expected = x.transpose(1, 0, 2).reshape(4, 15).argmax(1).reshape(1, 4, 1)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


def test_float16_mean_and_variance_accumulate_in_float32():
    # a float16 running sum stops at 2048: the mean of 16384 values near 0.5 came out 0.125
    x = np.random.default_rng(6).uniform(size=(128, 2, 128)).astype("float16")
    mean, var = _run(lambda v: relay.mean_variance(v, axis=(0, 2)), x)
    assert mean.dtype == np.float16
    np.testing.assert_allclose(mean, x.astype("float64").mean((0, 2)), rtol=1e-2)
    np.testing.assert_allclose(var, x.astype("float64").var((0, 2)), rtol=1e-2)
