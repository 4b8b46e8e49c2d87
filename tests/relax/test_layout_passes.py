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


def _same_numbers(before, after, *args, rtol=1e-4, atol=1e-4, build=True):
    """`after` evaluated with the ops' numpy references, and (`build`) compiled and run on the
    VM, equals the numpy evaluation of `before`."""
    want = np.asarray(evaluate(before, *args))
    np.testing.assert_allclose(np.asarray(evaluate(after, *args)), want, rtol=rtol, atol=atol)
    if build:
        np.testing.assert_allclose(_run(after, *args), want, rtol=rtol, atol=atol)


def _ops(mod, name="main"):
    """The op names called in `mod[name]`, in binding order."""
    return [
        b.value.op.name
        for block in mod[name].body.blocks
        for b in block.bindings
        if isinstance(b.value, relax.Call) and hasattr(b.value.op, "name")
    ]


def _calls(mod, op_name, name="main"):
    """The calls of op `op_name` in `mod[name]`, in binding order."""
    return [
        b.value
        for block in mod[name].body.blocks
        for b in block.bindings
        if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", None) == op_name
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


# ---------------------------------------------------------------- FoldBatchnormToConv2D


def _conv_bn(x, w, bn, bias=None, groups=1, padding=1, strides=1):
    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(w), strides, padding, groups=groups))
        if bias is not None:
            y = bb.emit(op.add(y, relax.const(bias)))
        t = bb.emit(op.nn.batch_norm(y, *bn.consts(), training=False))
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
    new_w = w * s.reshape(o, 1, 1, 1).astype("float32")
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
        t = bb.emit(op.nn.batch_norm(bb.emit(op.nn.conv2d(x, w)), *bn.consts(), training=False))
        return bb.emit(t[0])

    mod = _module([x, w], param_weight)
    assert_structural_equal(relax.transform.FoldBatchnormToConv2D()(mod), mod)

    wc = relax.const(_f32(rng, 4, 3, 3, 3))

    def conv_used_twice(bb, x):
        y = bb.emit(op.nn.conv2d(x, wc))
        t = bb.emit(op.nn.batch_norm(y, *bn.consts(), training=False))
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


# ---------------------------------------------------------------- DecomposeOpsForInference


def test_decompose_batchnorm_with_constants_is_multiply_add():
    rng = _rng(3)
    c = 5
    bn = _BN(rng, c)
    x = relax.Var("x", T((2, c, 4, 4), "float32"))
    before = _module(
        [x], lambda bb, x: bb.emit(bb.emit(op.nn.batch_norm(x, *bn.consts(), training=False))[0])
    )
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
        t = bb.emit(
            op.nn.batch_norm(x, g, b, m, v, axis=-1, scale=scale, center=center, training=False)
        )
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
    mod = _module([x], lambda bb, x: bb.emit(op.nn.batch_norm(x, *bn.consts(), training=False)))
    assert_structural_equal(relax.transform.DecomposeOpsForInference()(mod), mod)


# ----------------------------------------------------------------------------- AlterOpLayout


def _lt(x, src, dst):
    from minitvm.topi.layout import layout_index_map

    return op.layout_transform(x, layout_index_map(src, dst))


def _alter(mod, lanes=16):
    """AlterOpLayout for a target with `lanes` float32 lanes (16: AVX-512, 8: AVX2)."""
    target = "llvm -mcpu=skylake-avx512" if lanes == 16 else "llvm -mcpu=haswell"
    return relax.transform.AlterOpLayout(target)(mod)


def _fold(mod):
    seq = tvm.transform.Sequential(
        [relax.transform.FoldConstant(), relax.transform.DeadCodeElimination()]
    )
    return seq(mod)


def test_alter_op_layout_blocks_conv_and_packs_weight():
    rng = _rng(6)
    w = _f32(rng, 32, 3, 3, 3)
    x = relax.Var("x", T((1, 3, 8, 8), "float32"))
    before = _module([x], lambda bb, x: bb.emit(op.nn.conv2d(x, relax.const(w), padding=1)))
    after = _alter(before)

    def expected_body(bb, x):
        xb = bb.emit(_lt(x, "NCHW", "NCHW3c"))
        wb = relax.const(w.reshape(2, 16, 1, 3, 3, 3).transpose(0, 2, 4, 5, 3, 1))
        y = bb.emit(
            op.nn.conv2d(
                xb,
                wb,
                padding=1,
                data_layout="NCHW3c",
                kernel_layout="OIHW3i16o",
                out_layout="NCHW16c",
            )
        )
        return bb.emit(_lt(y, "NCHW16c", "NCHW"))

    expected = _module([relax.Var("x", T((1, 3, 8, 8), "float32"))], expected_body)
    assert_structural_equal(after, expected)
    _same_numbers(before, after, _f32(rng, 1, 3, 8, 8))


def test_alter_op_layout_packs_bound_parameters_into_constants():
    """A weight bound by BindParams is packed at compile time: the only transforms left are
    of the activation, in and out."""
    rng = _rng(7)
    w = _f32(rng, 16, 8, 3, 3)
    x = relax.Var("x", T((1, 8, 6, 6), "float32"))
    wv = relax.Var("w", T((16, 8, 3, 3), "float32"))
    unbound = _module([x, wv], lambda bb, x, wv: bb.emit(op.nn.conv2d(x, wv, padding=1)))
    before = relax.transform.BindParams("main", {"w": w})(unbound)
    after = _alter(before, lanes=8)
    transformed = [c.args[0] for c in _calls(after, "relax.layout_transform")]
    assert [a.name_hint for a in transformed] == ["x", "lv_NCHW8c"]
    (conv,) = _calls(after, "relax.nn.conv2d")
    packed = conv.args[1]
    assert isinstance(packed, relax.Constant) and packed.data.shape == (2, 1, 3, 3, 8, 8)
    # element [oo, io, kh, kw, ii, oi] is w[oo * 8 + oi, io * 8 + ii, kh, kw]
    np.testing.assert_array_equal(
        packed.data.numpy(), w.reshape(2, 8, 1, 8, 3, 3).transpose(0, 2, 4, 5, 3, 1)
    )
    # unbound, the weight is transformed by the graph (at run time)
    moved = _calls(_alter(unbound, lanes=8), "relax.layout_transform")
    assert "w" in [c.args[0].name_hint for c in moved]
    _same_numbers(before, after, _f32(rng, 1, 8, 6, 6))


def _resnet_block(c_in, c, stride, n=1, seed=8, hw=9):
    """conv-bias-relu, conv-bias, + shortcut (1x1 strided conv when the shape changes), relu,
    then global pooling and flatten — the edge back to NCHW."""
    rng = _rng(seed)
    x = relax.Var("x", T((n, c_in, hw, hw), "float32"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(_f32(rng, c, c_in, 3, 3)), stride, 1))
        y = bb.emit(op.nn.relu(bb.emit(op.add(y, relax.const(_f32(rng, 1, c, 1, 1))))))
        y = bb.emit(op.nn.conv2d(y, relax.const(_f32(rng, c, c, 3, 3)), 1, 1))
        y = bb.emit(op.add(y, relax.const(_f32(rng, c, 1, 1))))
        short = x
        if stride != 1 or c_in != c:
            short = bb.emit(op.nn.conv2d(x, relax.const(_f32(rng, c, c_in, 1, 1)), stride, 0))
        y = bb.emit(op.nn.relu(bb.emit(op.add(y, short))))
        return bb.emit(op.flatten(bb.emit(op.nn.adaptive_avg_pool2d(y, 1))))

    return _module([x], body), rng


@pytest.mark.parametrize(
    "c_in, c, stride, lanes", [(3, 5, 1, 16), (5, 24, 2, 16), (24, 24, 1, 8), (96, 96, 2, 16)]
)
def test_alter_op_layout_residual_block_matches(c_in, c, stride, lanes):
    before, rng = _resnet_block(c_in, c, stride)
    after = _fold(_alter(before, lanes))
    convs = _calls(after, "relax.nn.conv2d")
    assert len(convs) == 3 if stride != 1 or c_in != c else 2
    assert all(cv.attrs["data_layout"] != "NCHW" for cv in convs)
    # only the input and the pooled value before flatten are converted: the blocked conv
    # outputs feed the adds, relus, next convs and the pooling directly
    pooled = _calls(after, "relax.nn.adaptive_avg_pool2d")[0]
    assert pooled.attrs["layout"] != "NCHW"
    moved = [c.args[0].name_hint for c in _calls(after, "relax.layout_transform")]
    assert len(moved) == 2 and moved[0] == "x"
    _same_numbers(before, after, _f32(rng, 1, c_in, 9, 9), build=False)


@pytest.mark.parametrize(
    "c_in, c, stride, lanes, desired",
    [
        (3, 5, 1, 16, None),
        (5, 24, 2, 16, None),
        (24, 24, 1, 8, None),
        (96, 96, 2, 16, None),
        (16, 16, 1, 0, ["NCHW8c", "default"]),
        (6, 8, 2, 0, ["NHWC", "OHWI"]),
    ],
)
def test_layout_passes_residual_block_builds_and_runs(c_in, c, stride, lanes, desired):
    """relax.build + VM of the converted block equals numpy on the original."""
    before, rng = _resnet_block(c_in, c, stride, seed=16)
    if desired is None:
        after = _alter(before, lanes)
    else:
        after = relax.transform.ConvertLayout({"relax.nn.conv2d": desired})(before)
    xs = _f32(rng, 1, c_in, 9, 9)
    np.testing.assert_allclose(_run(after, xs), evaluate(before, xs), rtol=1e-4, atol=1e-4)


def test_alter_op_layout_symbolic_batch():
    n = tvm.tir.Var("n", "int64")
    before, rng = _resnet_block(8, 16, 2, n=n)
    after = _fold(_alter(before, 16))
    assert "relax.layout_transform" in _ops(after)
    _same_numbers(before, after, _f32(rng, 3, 8, 9, 9))


def test_alter_op_layout_depthwise():
    rng = _rng(9)
    c = 24
    x = relax.Var("x", T((1, c, 7, 7), "float32"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(_f32(rng, c, 1, 3, 3)), 2, 1, groups=c))
        return bb.emit(op.nn.relu(y))

    before = _module([x], body)
    after = _alter(before, 16)
    (conv,) = _calls(after, "relax.nn.conv2d")
    assert (conv.attrs["data_layout"], conv.attrs["kernel_layout"]) == ("NCHW8c", "OIHW1i8o")
    _same_numbers(before, _fold(after), _f32(rng, 1, c, 7, 7))


def test_alter_op_layout_shares_one_transform_back_per_value():
    """Two NCHW-only consumers of a blocked value read one transform; a blocked consumer reads
    the value itself (no transform and inverse back to back)."""
    rng = _rng(10)
    x = relax.Var("x", T((1, 16, 4, 4), "float32"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(_f32(rng, 16, 16, 1, 1))))
        a = bb.emit(op.flatten(y))
        b = bb.emit(op.sum(y, axis=[2, 3]))
        z = bb.emit(op.nn.conv2d(y, relax.const(_f32(rng, 16, 16, 1, 1))))
        return bb.emit(relax.Tuple([a, b, z]))

    before = _module([x], body)
    after = _fold(_alter(before, 16))
    moved = [c.args[0].name_hint for c in _calls(after, "relax.layout_transform")]
    # x in, y back once (for flatten and sum), z back once (the output)
    assert moved == ["x", "lv_NCHW16c", "lv3_NCHW16c"]
    ex = relax.build(after, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    xs = _f32(rng, 1, 16, 4, 4)
    got = vm["main"](tvm.nd.array(xs))
    want = evaluate(before, xs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4)


def test_alter_op_layout_leaves_grouped_and_indivisible_convs():
    rng = _rng(11)
    x = relax.Var("x", T((1, 34, 5, 5), "float32"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(_f32(rng, 34, 17, 3, 3)), groups=2))
        return bb.emit(op.nn.conv2d(y, relax.const(_f32(rng, 4, 34, 1, 1))))

    before = _module([x], body)
    assert_structural_equal(_alter(before, 16), before)


def test_channel_block_prefers_whole_small_counts_and_wide_powers_of_two():
    from minitvm.relax.transform.convert_layout import channel_block

    cases = {3: 3, 5: 5, 16: 16, 24: 8, 96: 16, 64: 16, 34: None, 20: 4}
    assert {c: channel_block(c, 16) for c in cases} == cases
    assert channel_block(24, 8) == 8 and channel_block(12, 8) == 4


# ----------------------------------------------------------------------------- ConvertLayout


def test_convert_layout_nhwc_keeps_elementwise_in_nhwc():
    rng = _rng(12)
    w = _f32(rng, 5, 3, 3, 3)
    b = _f32(rng, 1, 5, 1, 1)
    x = relax.Var("x", T((2, 3, 6, 6), "float32"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(w), padding=1))
        return bb.emit(op.nn.relu(bb.emit(op.add(y, relax.const(b)))))

    before = _module([x], body)
    after = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "default"]})(before)

    def expected_body(bb, x):
        xt = bb.emit(_lt(x, "NCHW", "NHWC"))
        wt = relax.const(w.transpose(2, 3, 1, 0))
        y = bb.emit(op.nn.conv2d(xt, wt, padding=1, data_layout="NHWC", kernel_layout="HWIO"))
        bt = relax.const(b.transpose(0, 2, 3, 1))
        y = bb.emit(op.nn.relu(bb.emit(op.add(y, bt))))
        return bb.emit(_lt(y, "NHWC", "NCHW"))

    expected = _module([relax.Var("x", T((2, 3, 6, 6), "float32"))], expected_body)
    assert_structural_equal(after, expected)
    _same_numbers(before, after, _f32(rng, 2, 3, 6, 6))


def test_convert_layout_blocked_with_default_kernel():
    before, rng = _resnet_block(16, 16, 1, seed=13)
    after = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NCHW8c", "default"]})(before)
    kernels = {c.attrs["kernel_layout"] for c in _calls(after, "relax.nn.conv2d")}
    assert kernels == {"OIHW8i8o"}
    _same_numbers(before, after, _f32(rng, 1, 16, 9, 9), build=False)


def test_convert_layout_errors_name_the_bad_entry():
    from minitvm.error import ArgumentError, ShapeError

    with pytest.raises(ArgumentError, match="no layout rule for \\['relax.nn.dense'\\]"):
        relax.transform.ConvertLayout({"relax.nn.dense": ["NC"]})
    with pytest.raises(ArgumentError, match="give \\[data_layout\\] or"):
        relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "HWIO", "NHWC"]})
    with pytest.raises(ShapeError, match="cannot read"):
        relax.transform.ConvertLayout({"relax.nn.conv2d": ["NC?HW", "default"]})


# ---------------------------------------------------------------- FoldConstant, pipeline


def test_fold_constant_packs_layout_transform_with_numpy_exactly():
    rng = _rng(14)
    w = _f32(rng, 32, 5, 3, 3)
    x = relax.Var("x", T((1,), "float32"))
    mod = _module([x], lambda bb, x: bb.emit(_lt(relax.const(w), "OIHW", "OIHW5i16o")))
    folded = relax.transform.FoldConstant()(mod)
    value = folded["main"].body.blocks[0].bindings[0].value
    assert isinstance(value, relax.Constant)
    np.testing.assert_array_equal(
        value.data.numpy(), w.reshape(2, 16, 1, 5, 3, 3).transpose(0, 2, 4, 5, 3, 1)
    )


def _pipeline_names(**ctx):
    from minitvm.relax import pipeline

    steps = pipeline.GRAPH_PIPELINE + pipeline.DEFAULT_PIPELINE
    with tvm.transform.PassContext(**ctx):
        return [p.name for p in pipeline.default_passes("llvm", steps=steps)]


def test_pipeline_runs_graph_passes_before_legalize_and_can_disable_them():
    names = _pipeline_names()
    graph = ["FoldBatchnormToConv2D", "DecomposeInferenceModeOps", "AlterOpLayout", "FoldConstant"]
    order = ["FoldConstant", *graph]
    assert [n for n in names if n in graph] == order
    assert names.index("AlterOpLayout") < names.index("LegalizeOps")
    assert "AlterOpLayout" not in _pipeline_names(disabled_pass=["AlterOpLayout"])
    assert "AlterOpLayout" not in _pipeline_names(opt_level=0)


def test_pipeline_folds_batchnorm_behind_a_bias_computed_from_constants():
    rng = _rng(22)
    bn = _BN(rng, 8)
    x = relax.Var("x", T((1, 4, 5, 5), "float32"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(_f32(rng, 8, 4, 3, 3))))
        bias = bb.emit(op.reshape(relax.const(_f32(rng, 8)), (1, 8, 1, 1)))
        t = bb.emit(op.nn.batch_norm(bb.emit(op.add(y, bias)), *bn.consts(), training=False))
        return bb.emit(t[0])

    from minitvm.relax import pipeline

    before = _module([x], body)
    after = before
    for p in pipeline.default_passes("llvm", steps=pipeline.GRAPH_PIPELINE):
        after = p(after)
    assert _ops(after) == [
        "relax.layout_transform",
        "relax.nn.conv2d",
        "relax.add",
        "relax.layout_transform",
    ]
    _same_numbers(before, after, _f32(rng, 1, 4, 5, 5), build=False)


def test_build_packs_bound_weights_at_compile_time():
    """relax.build of a conv with bound weights: the conv kernel reads a packed constant, no
    layout_transform kernel of a parameter runs; disabling AlterOpLayout keeps NCHW."""
    before, rng = _resnet_block(8, 16, 1, seed=15)
    from minitvm.relax import pipeline

    with tvm.transform.PassContext(opt_level=2):
        graph = before
        for p in pipeline.default_passes("llvm", steps=pipeline.GRAPH_PIPELINE):
            graph = p(graph)
    calls = [
        b.value for b in graph["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)
    ]
    for call in calls:
        if call.op.name == "relax.layout_transform":
            assert isinstance(call.args[0], relax.Var)  # activations only
        if call.op.name == "relax.nn.conv2d":
            assert isinstance(call.args[1], relax.Constant) and len(call.args[1].data.shape) == 6
    with tvm.transform.PassContext(disabled_pass=["AlterOpLayout"]):
        plain = before
        for p in pipeline.default_passes("llvm", steps=pipeline.GRAPH_PIPELINE):
            plain = p(plain)
    assert "relax.layout_transform" not in _ops(plain)
    xs = _f32(rng, 1, 8, 9, 9)
    np.testing.assert_allclose(
        _run(before, xs), np.asarray(evaluate(before, xs)), rtol=1e-4, atol=1e-4
    )


def test_existing_inverse_transform_pairs_cancel_and_alter_is_idempotent():
    n = tvm.tir.Var("n", "int64")
    x = relax.Var("x", T((n, 32, 5, 5), "float32"))

    def body(bb, x):
        a = bb.emit(_lt(x, "NCHW", "NCHW16c"))
        b = bb.emit(_lt(a, "NCHW16c", "NCHW"))  # undoes a
        c = bb.emit(_lt(b, "NCHW", "NCHW8c"))
        d = bb.emit(_lt(c, "NCHW8c", "NCHW16c"))  # not an inverse of c: stays
        return bb.emit(op.nn.relu(d))

    before = _module([x], body)
    after = relax.transform.AlterOpLayout()(before)

    def expected_body(bb, x):
        c = bb.emit(_lt(bb.emit(x), "NCHW", "NCHW8c"))
        return bb.emit(op.nn.relu(bb.emit(_lt(c, "NCHW8c", "NCHW16c"))))

    expected = _module([relax.Var("x", T((n, 32, 5, 5), "float32"))], expected_body)
    assert_structural_equal(after, expected)
    _same_numbers(before, after, _f32(_rng(17), 2, 32, 5, 5), build=False)

    block, _ = _resnet_block(8, 16, 2, seed=18)
    once = _alter(block, 16)
    assert_structural_equal(_alter(once, 16), once)


def test_fuse_ops_keeps_blocked_epilogues_in_the_conv_kernel():
    """After the graph passes, FuseOps gives one kernel per conv with its bias, residual add
    and relu; the input's transform (read by a conv and the residual add) is its own kernel,
    and the transform back feeds the flatten in one injective kernel."""
    from minitvm.relax import pipeline

    mod, _ = _resnet_block(16, 16, 1)
    for p in pipeline.default_passes("llvm", steps=pipeline.GRAPH_PIPELINE):
        mod = p(mod)
    fused = tvm.transform.Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(fuse_opt_level=2),
        ]
    )(mod)
    calls = [b.value for b in fused["main"].body.blocks[0].bindings]
    callees = [
        c.op.name_hint if isinstance(c.op, tvm.ir.GlobalVar) else c.args[0].name_hint
        for c in calls
        if isinstance(c, relax.Call)
    ]
    assert callees == [
        "layout_transform",
        "fused_nn_conv2d_add_nn_relu",
        "fused_nn_conv2d_add_add_nn_relu",
        "nn_adaptive_avg_pool2d",
        "fused_layout_transform_flatten",
    ]


@pytest.mark.parametrize("with_bias", [False, True])
def test_alter_op_layout_pretransposes_constant_linear_weights(with_bias):
    rng = _rng(19)
    w, b = _f32(rng, 24, 40), _f32(rng, 24)
    n = tvm.tir.Var("n", "int64")
    x = relax.Var("x", T((n, 3, 40), "float32"))
    args = (relax.const(w), relax.const(b)) if with_bias else (relax.const(w),)
    before = _module([x], lambda bb, x: bb.emit(op.linear(x, *args)))
    after = _alter(before)

    def expected_body(bb, x):
        y = bb.emit(op.matmul(x, relax.const(np.ascontiguousarray(w.T))))
        return bb.emit(op.add(y, relax.const(b))) if with_bias else y

    expected = _module([relax.Var("x", T((n, 3, 40), "float32"))], expected_body)
    assert_structural_equal(after, expected)
    _same_numbers(before, after, _f32(rng, 2, 3, 40))
    # a weight that is a parameter is left to the kernel; ConvertLayout leaves linear alone
    wv = relax.Var("w", T((24, 40), "float32"))
    unbound = _module([x, wv], lambda bb, x, wv: bb.emit(op.linear(x, wv)))
    assert_structural_equal(_alter(unbound), unbound)
    convert = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "default"]})
    assert_structural_equal(convert(before), before)


@pytest.mark.parametrize("rows", [1, 31, 32, 64])
def test_alter_op_layout_keeps_the_given_weight_under_few_static_rows(rows):
    """Under MATMUL_PACK_MIN_ROWS_TRANSPOSED rows (a batch-1 classifier) the dot-product rule
    streams W [N, K] along its rows, so the linear stays; from there on W.T is stored."""
    from minitvm.relax.transform.default_schedule import MATMUL_PACK_MIN_ROWS_TRANSPOSED

    rng = _rng(23)
    w = _f32(rng, 24, 40)
    x = relax.Var("x", T((rows, 40), "float32"))
    before = _module([x], lambda bb, x: bb.emit(op.linear(x, relax.const(w))))
    after = _alter(before)
    if rows < MATMUL_PACK_MIN_ROWS_TRANSPOSED:
        assert_structural_equal(after, before)
    else:
        expected = _module(
            [relax.Var("x", T((rows, 40), "float32"))],
            lambda bb, x: bb.emit(op.matmul(x, relax.const(np.ascontiguousarray(w.T)))),
        )
        assert_structural_equal(after, expected)
    _same_numbers(before, after, _f32(rng, rows, 40))


def test_alter_op_layout_values_crossing_dataflow_blocks_start_from_their_base_form():
    rng = _rng(20)
    w1, w2 = _f32(rng, 16, 4, 3, 3), _f32(rng, 16, 16, 1, 1)
    x = relax.Var("x", T((1, 4, 6, 6), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(op.nn.relu(bb.emit(op.nn.conv2d(x, relax.const(w1), padding=1))))
            gv1 = bb.emit_output(y)
        with bb.dataflow():
            z = bb.emit(op.nn.conv2d(bb.emit(op.nn.relu(gv1)), relax.const(w2)))
            gv2 = bb.emit_output(z)
        bb.emit_func_output(gv2)
    before = bb.get()
    after = _alter(before, 16)
    assert [c.args[0].name_hint for c in _calls(after, "relax.layout_transform")] == [
        "x",
        "lv1_NCHW16c",  # gv1 leaves the first block in NCHW
        "lv2",  # the second block starts from it: relu in NCHW, the conv's input blocked
        "lv3_NCHW16c",
    ]
    _same_numbers(before, after, _f32(rng, 1, 4, 6, 6))


def test_alter_op_layout_lower_rank_operands_broadcast_in_the_blocked_layout():
    """A (C, 1, 1) constant bias is packed to (1, C/c, 1, 1, c); a (C, 1, 1) parameter is
    reshaped and transformed in the graph; a scalar is used as it is."""
    rng = _rng(21)
    c = 32
    bias, w = _f32(rng, c, 1, 1), _f32(rng, c, 8, 1, 1)
    x = relax.Var("x", T((2, 8, 3, 3), "float32"))
    p = relax.Var("p", T((c, 1, 1), "float32"))

    def body(bb, x, p):
        y = bb.emit(op.nn.conv2d(x, relax.const(w)))
        y = bb.emit(op.add(y, relax.const(bias)))
        y = bb.emit(op.multiply(y, p))
        return bb.emit(op.multiply(y, relax.const(np.float32(0.5))))

    before = _module([x, p], body)
    after = _alter(before, 16)
    adds = _calls(after, "relax.add")
    assert adds[0].args[1].data.shape == (1, 2, 1, 1, 16)
    np.testing.assert_array_equal(adds[0].args[1].data.numpy()[0, 1, 0, 0], bias[16:, 0, 0])
    assert [c.args[0].name_hint for c in _calls(after, "relax.reshape")] == ["p"]
    scaled = _calls(after, "relax.multiply")[-1]
    assert scaled.args[1].data.shape == () and len(scaled.struct_info.shape) == 5
    _same_numbers(before, after, _f32(rng, 2, 8, 3, 3), _f32(rng, c, 1, 1))


def test_alter_op_layout_keeps_strides_dilation_and_asymmetric_padding():
    rng = _rng(23)
    w = _f32(rng, 32, 16, 3, 3)
    x = relax.Var("x", T((1, 16, 11, 11), "float32"))
    attrs = {"strides": (2, 1), "padding": (1, 2, 0, 1), "dilation": (2, 1)}
    before = _module([x], lambda bb, x: bb.emit(op.nn.conv2d(x, relax.const(w), **attrs)))
    after = _alter(before, 16)
    (conv,) = _calls(after, "relax.nn.conv2d")
    assert conv.attrs["data_layout"] == "NCHW16c"
    assert (conv.attrs["strides"], conv.attrs["padding"], conv.attrs["dilation"]) == (
        (2, 1),
        (1, 2, 0, 1),
        (2, 1),
    )
    _same_numbers(before, after, _f32(rng, 1, 16, 11, 11))


@pytest.mark.parametrize(
    "desired, want",
    [
        (["NHWC", "default"], [("NHWC", "HWIO"), ("NHWC", "HWIO")]),
        (["NHWC", "OHWI"], [("NHWC", "OHWI"), ("NHWC", "OHWI")]),
        (["NCHW8c", "default"], [("NCHW8c", "OIHW1i8o"), ("NCHW", "OIHW")]),
    ],
)
def test_convert_layout_depthwise_and_grouped_convs(desired, want):
    """Depthwise convs take the blocked depthwise kernel; a grouped conv the blocked form
    does not cover stays NCHW (its input converted back)."""
    rng = _rng(24)
    x = relax.Var("x", T((1, 24, 7, 7), "float32"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(_f32(rng, 24, 1, 3, 3)), 1, 1, groups=24))
        return bb.emit(op.nn.conv2d(y, relax.const(_f32(rng, 24, 12, 3, 3)), 1, 1, groups=2))

    before = _module([x], body)
    after = relax.transform.ConvertLayout({"relax.nn.conv2d": desired})(before)
    got = [
        (c.attrs["data_layout"], c.attrs["kernel_layout"]) for c in _calls(after, "relax.nn.conv2d")
    ]
    assert got == want
    _same_numbers(before, after, _f32(rng, 1, 24, 7, 7))


def test_fold_batchnorm_leaves_an_integer_weight_with_float_output():
    """An int8 weight cannot hold the scaled values: the batch_norm is not folded into it."""
    rng = _rng(25)
    bn = _BN(rng, 4)
    w = rng.integers(-3, 3, (4, 3, 1, 1)).astype("int8")
    x = relax.Var("x", T((1, 3, 4, 4), "int8"))

    def body(bb, x):
        y = bb.emit(op.nn.conv2d(x, relax.const(w), out_dtype="float32"))
        return bb.emit(bb.emit(op.nn.batch_norm(y, *bn.consts(), training=False))[0])

    mod = _module([x], body)
    assert_structural_equal(relax.transform.FoldBatchnormToConv2D()(mod), mod)
