"""FoldBatchnormToConv2D, DecomposeOpsForInference, ConvertLayout and AlterOpLayout: each pass
compared structurally with the module it should produce, and run (relax.build + VM) against the
numpy evaluation of the module before the pass."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate

T = relax.TensorStructInfo


def _rng(seed=0):
    return np.random.default_rng(seed)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


def _module(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = body(bb, *params)
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


def _run(mod, *args):
    """`mod["main"](*args)` compiled by relax.build and run on the VM."""
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in args]).numpy()


def _same_numbers(before, after, *args, rtol=1e-4, atol=1e-4):
    """`after` compiled and run equals the numpy evaluation of `before`."""
    want = np.asarray(evaluate(before, *args))
    got = _run(after, *args)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _ops(mod, name="main"):
    """The op names called in `mod[name]`, in binding order."""
    return [
        b.value.op.name
        for block in mod[name].body.blocks
        for b in block.bindings
        if isinstance(b.value, relax.Call) and hasattr(b.value.op, "name")
    ]


class _BN:
    """Random batch-norm statistics for `c` channels (variance positive)."""

    def __init__(self, rng, c):
        self.gamma, self.beta, self.mean = (_f32(rng, c) for _ in range(3))
        self.var = (rng.random(c) + 0.5).astype("float32")

    def consts(self):
        return [relax.const(a) for a in (self.gamma, self.beta, self.mean, self.var)]

    def scale_shift(self, eps=1e-5):
        s = self.gamma.astype("float64") / np.sqrt(self.var.astype("float64") + eps)
        return s, self.beta - self.mean * s


# ----------------------------------------------------------------------------- FoldBatchnormToConv2D


def _conv_bn(x, w, bn, bias=None, groups=1, padding=1, strides=1):
    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(w), strides, padding, groups=groups))
        if bias is not None:
            y = bb.emit(op.add(y, relax.const(bias)))
        t = bb.emit(op.nn.batch_norm(y, *bn.consts()))
        return bb.emit(op.nn.relu(bb.emit(t[0])))

    return _module([x], body)


@pytest.mark.parametrize("with_bias", [False, True])
def test_fold_batchnorm_scales_weight_and_adds_bias(with_bias):
    rng = _rng()
    c, o = 5, 24
    w = _f32(rng, o, c, 3, 3)
    bn = _BN(rng, o)
    bias = _f32(rng, o, 1, 1) if with_bias else None
    before = _conv_bn(relax.Var("x", T((1, c, 9, 9), "float32")), w, bn, bias)
    after = relax.transform.FoldBatchnormToConv2D()(before)

    s, t = bn.scale_shift()
    if with_bias:
        t = t + bias.reshape(-1) * s
    new_w = (w * s.reshape(o, 1, 1, 1)).astype("float32")
    new_b = t.reshape(1, o, 1, 1).astype("float32")
    expected = _module(
        [relax.Var("x", T((1, c, 9, 9), "float32"))],
        lambda bb, x: bb.emit(
            op.nn.relu(
                bb.emit(
                    op.add(
                        bb.emit(op.nn.conv2d(x, relax.const(new_w), padding=1)),
                        relax.const(new_b),
                    )
                )
            )
        ),
    )
    assert_structural_equal(after, expected)
    _same_numbers(before, after, _f32(rng, 1, c, 9, 9))


def test_fold_batchnorm_depthwise_stride2_symbolic_batch():
    rng = _rng(1)
    c = 96
    w = _f32(rng, c, 1, 3, 3)
    bn = _BN(rng, c)
    n = tvm.tir.Var("n", "int64")
    before = _conv_bn(relax.Var("x", T((n, c, 7, 7), "float32")), w, bn, groups=c, strides=2)
    after = relax.transform.FoldBatchnormToConv2D()(before)
    assert _ops(after) == ["relax.nn.conv2d", "relax.add", "relax.nn.relu"]
    _same_numbers(before, after, _f32(rng, 3, c, 7, 7))


def test_fold_batchnorm_leaves_non_constant_or_shared_values():
    rng = _rng(2)
    bn = _BN(rng, 4)
    x = relax.Var("x", T((1, 3, 6, 6), "float32"))
    w = relax.Var("w", T((4, 3, 3, 3), "float32"))

    def param_weight(bb, x, w):
        t = bb.emit(op.nn.batch_norm(bb.emit(op.nn.conv2d(x, w)), *bn.consts()))
        return bb.emit(t[0])

    mod = _module([x, w], param_weight)
    assert_structural_equal(relax.transform.FoldBatchnormToConv2D()(mod), mod)

    wc = relax.const(_f32(rng, 4, 3, 3, 3))

    def conv_used_twice(bb, x):
        y = bb.emit(op.nn.conv2d(x, wc))
        t = bb.emit(op.nn.batch_norm(y, *bn.consts()))
        return bb.emit(op.add(bb.emit(t[0]), y))

    x2 = relax.Var("x", T((1, 3, 6, 6), "float32"))
    mod2 = _module([x2], conv_used_twice)
    assert_structural_equal(relax.transform.FoldBatchnormToConv2D()(mod2), mod2)


def test_fold_batchnorm_in_nhwc_and_blocked_kernel_layouts():
    """The scale follows the kernel layout's O axis, the bias the output layout's C axis."""
    from minitvm.relax.transform.fold_batchnorm import per_channel
    from minitvm.topi.layout import Layout

    v = np.arange(32.0)
    assert per_channel(v, Layout.parse("NHWC"), "C").shape == (1, 1, 1, 32)
    blocked = per_channel(v, Layout.parse("OIHW4i16o"), "O")
    assert blocked.shape == (2, 1, 1, 1, 1, 16)
    assert blocked[1, 0, 0, 0, 0, 3] == 19.0  # O = 1 * 16 + 3


# ----------------------------------------------------------------------------- DecomposeOpsForInference


def test_decompose_batchnorm_with_constants_is_multiply_add():
    rng = _rng(3)
    c = 5
    bn = _BN(rng, c)
    x = relax.Var("x", T((2, c, 4, 4), "float32"))
    before = _module([x], lambda bb, x: bb.emit(bb.emit(op.nn.batch_norm(x, *bn.consts()))[0]))
    after = relax.transform.DecomposeOpsForInference()(before)
    s, t = bn.scale_shift()
    x2 = relax.Var("x", T((2, c, 4, 4), "float32"))
    expected = _module(
        [x2],
        lambda bb, x: bb.emit(
            op.add(
                bb.emit(op.multiply(x, relax.const(s.reshape(1, c, 1, 1).astype("float32")))),
                relax.const(t.reshape(1, c, 1, 1).astype("float32")),
            )
        ),
    )
    assert_structural_equal(after, expected)
    _same_numbers(before, after, _f32(rng, 2, c, 4, 4))


@pytest.mark.parametrize("scale, center", [(True, True), (False, True), (True, False)])
def test_decompose_batchnorm_with_parameters_and_symbolic_batch(scale, center):
    rng = _rng(4)
    c = 3
    n = tvm.tir.Var("n", "int64")
    x = relax.Var("x", T((n, 6, c), "float32"))
    ps = [relax.Var(k, T((c,), "float32")) for k in ("gamma", "beta", "mean", "var")]

    def body(bb, x, g, b, m, v):
        t = bb.emit(op.nn.batch_norm(x, g, b, m, v, axis=-1, scale=scale, center=center))
        return bb.emit(op.add(bb.emit(t[0]), bb.emit(t[1])))

    before = _module([x, *ps], body)
    after = relax.transform.DecomposeOpsForInference()(before)
    assert "relax.nn.batch_norm" not in _ops(after)
    args = [_f32(rng, 2, 6, c), *(_f32(rng, c) for _ in range(3)), rng.random(c).astype("f4") + 1]
    _same_numbers(before, after, *args)


def test_decompose_keeps_batchnorm_whose_tuple_escapes():
    rng = _rng(5)
    bn = _BN(rng, 2)
    x = relax.Var("x", T((1, 2, 3, 3), "float32"))
    mod = _module([x], lambda bb, x: bb.emit(op.nn.batch_norm(x, *bn.consts())))
    assert_structural_equal(relax.transform.DecomposeOpsForInference()(mod), mod)
