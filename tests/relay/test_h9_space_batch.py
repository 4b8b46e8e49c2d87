"""relay.nn.space_to_batch_nd / batch_to_space_nd against numpy's definition, and
FlattenAtrousConv: the rewritten dilated conv2d computes what the s2b -> conv -> b2s chain did."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.error import ShapeError
from minitvm.relax.eval_ref import evaluate
from minitvm.relay._translate import to_relax
from minitvm.topi.testing import batch_to_space_nd_python, space_to_batch_nd_python


def _eval(out, params, *inputs):
    return np.asarray(
        evaluate(to_relax(tvm.IRModule.from_expr(relay.Function(params, out))), *inputs)
    )


CASES = [
    ((3, 3, 2, 1), [3], [[0, 0]]),
    ((2, 2, 4, 1), [2, 2], [[0, 0], [2, 0]]),
    ((2, 5, 3, 4, 2), [2, 3], [[1, 2], [0, 3]]),
]


@pytest.mark.parametrize("shape,blocks,pads", CASES)
def test_space_to_batch_nd_matches_numpy_and_inverts(shape, blocks, pads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    before, after = [p[0] for p in pads], [p[1] for p in pads]
    ref = space_to_batch_nd_python(x, blocks, before, after, 0.5)
    v = relay.var("x", shape=shape)
    got = _eval(relay.nn.space_to_batch_nd(v, blocks, pads, 0.5), [v], x)
    np.testing.assert_array_equal(got, ref)
    w = relay.var("y", shape=ref.shape)
    back = _eval(relay.nn.batch_to_space_nd(w, blocks, pads), [w], ref)
    np.testing.assert_array_equal(back, x)  # cropping the padding undoes space_to_batch_nd
    np.testing.assert_array_equal(back, batch_to_space_nd_python(ref, blocks, before, after))


def test_space_to_batch_nd_batch_order_is_offset_major():
    x = np.arange(8, dtype="float32").reshape(2, 4, 1)  # two images [0..3], [4..7]
    v = relay.var("x", shape=x.shape)
    got = _eval(relay.nn.space_to_batch_nd(v, [2], [[0, 0]]), [v], x)[..., 0]
    np.testing.assert_array_equal(got, [[0, 2], [4, 6], [1, 3], [5, 7]])


def test_space_batch_shape_errors():
    v = relay.var("x", shape=(1, 5, 5, 1))
    with pytest.raises(ShapeError, match="must divide by block_shape"):
        relay.transform.InferTypeLocal(relay.nn.space_to_batch_nd(v, [2, 2], [[0, 0], [0, 0]]))
    with pytest.raises(ShapeError, match="prod\\(block_shape\\) = 4"):
        relay.transform.InferTypeLocal(relay.nn.batch_to_space_nd(v, [2, 2], [[0, 0], [0, 0]]))


def _atrous(data, weight, blocks, pads, crops, **conv):
    s2b = relay.nn.space_to_batch_nd(data, blocks, pads)
    out = relay.nn.conv2d(s2b, weight, data_layout="NHWC", kernel_layout="HWIO", **conv)
    return relay.nn.batch_to_space_nd(out, blocks, crops)


@pytest.mark.parametrize(
    "blocks,pads,crops",
    [([2, 2], [[2, 3], [2, 3]], [[0, 1], [0, 1]]), ([2, 3], [[1, 2], [3, 2]], [[1, 0], [0, 2]])],
)
def test_flatten_atrous_conv_keeps_values(blocks, pads, crops):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 7, 7, 4)).astype("float32")
    w = rng.standard_normal((3, 3, 4, 3)).astype("float32")
    data = relay.var("data", shape=x.shape)
    expr = _atrous(data, relay.const(w), blocks, pads, crops, channels=3)
    mod = tvm.IRModule.from_expr(relay.Function([data], expr))
    flat = relay.transform.FlattenAtrousConv()(mod)
    body = flat["main"].body
    assert body.op.name == "nn.conv2d" and tuple(body.attrs.dilation) == tuple(blocks)
    before = [p[0] - c[0] for p, c in zip(pads, crops)]
    after = [p[1] - c[1] for p, c in zip(pads, crops)]
    assert tuple(body.attrs.padding) == (before[0], before[1], after[0], after[1])
    ref, got = np.asarray(evaluate(to_relax(mod), x)), np.asarray(evaluate(to_relax(flat), x))
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_flatten_atrous_conv_leaves_inexact_chains():
    data = relay.var("data", shape=(1, 6, 6, 4))
    w = relay.const(np.ones((3, 3, 4, 2), "float32"))
    strided = _atrous(data, w, [2, 2], [[2, 2], [2, 2]], [[0, 0], [0, 0]], strides=2)
    over_cropped = _atrous(data, w, [2, 2], [[0, 2], [0, 2]], [[1, 0], [1, 0]])
    for expr in (strided, over_cropped):
        mod = tvm.IRModule.from_expr(relay.Function([data], expr))
        out = relay.transform.FlattenAtrousConv()(mod)
        assert out["main"].body.op.name == "nn.batch_to_space_nd"
