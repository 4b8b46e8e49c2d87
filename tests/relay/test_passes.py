"""Relay passes: each checked on the IR it leaves and on the numbers the program computes."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relax.eval_ref import evaluate
from minitvm.relay import analysis
from minitvm.relay._translate import to_relax
from minitvm.relay.printer import astext

RNG = np.random.default_rng(13)


def _run(mod, *inputs):
    """The module's main on numpy inputs, through relax's reference evaluator."""
    return evaluate(to_relax(mod), *inputs)


def _tutorial(data_shape=(1, 4, 8, 8), channels=4):
    """The pass-infra tutorial's program, small: conv2d plus constant arithmetic and a repeat."""
    out_shape = (1, channels, data_shape[2] - 2, data_shape[3] - 2)
    c_data = RNG.standard_normal(out_shape).astype("float32")
    c = relay.const(c_data)
    weight = relay.var("weight", shape=(channels, data_shape[1], 3, 3))
    x = relay.var("x", relay.TensorType(data_shape, "float32"))
    conv = relay.nn.conv2d(x, weight)
    y = relay.add(c, c)
    y = relay.multiply(y, relay.const(2, "float32"))
    y = relay.add(conv, y)
    z = relay.add(y, c)
    z1 = relay.add(y, c)
    z2 = relay.add(z, z1)
    return tvm.IRModule.from_expr(relay.Function([x, weight], z2)), c_data


def _inputs(mod):
    return [
        RNG.standard_normal(p.type_annotation.shape).astype("float32") for p in mod["main"].params
    ]


def _calls(mod, name=None):
    return analysis.count_calls(mod["main"], name)


def _primitive_functions(mod):
    found = []
    analysis.post_order_visit(
        mod["main"].body,
        lambda e: (
            found.append(e) if isinstance(e, relay.Function) and e.attrs.get("Primitive") else None
        ),
    )
    return found


def test_fold_constant_computes_the_constant_branch():
    mod, c = _tutorial()
    folded = relay.transform.FoldConstant()(mod)
    assert _calls(folded, "multiply") == 0 and _calls(folded, "add") == 4
    first_add = folded["main"].body.args[0].args[0]  # add(conv, folded)
    np.testing.assert_allclose(first_add.args[1].data.numpy(), (c + c) * 2, rtol=1e-6)
    text = str(folded)
    assert "meta[relay.Constant][1]" in text and "multiply" not in text
    args = _inputs(mod)
    np.testing.assert_allclose(_run(folded, *args), _run(mod, *args), rtol=1e-5, atol=1e-5)


def test_fold_constant_keeps_a_scalar_zero_dimensional():
    f = relay.Function([], relay.add(relay.const(1.0), relay.const(2.0)))
    body = relay.transform.FoldConstant()(tvm.IRModule.from_expr(f))["main"].body
    assert isinstance(body, relay.Constant) and body.data.shape == ()
    assert float(body.data.numpy()) == 3.0


def test_fold_constant_folds_tuples_projections_and_multi_output_ops():
    x = relay.var("x", shape=(2, 3))
    a = relay.const(np.ones((2, 3), "float32"))
    cat = relay.concatenate([a, relay.exp(a)], axis=0)  # a Tuple of constants as argument
    ones = relay.const(np.ones(3, "float32"))
    bn = relay.nn.batch_norm(a, ones, ones, ones, relay.const(np.full(3, 3.0, "float32")))
    picked = relay.TupleGetItem(relay.Tuple([bn[0], x]), 0)
    body = relay.Tuple([relay.add(x, picked), cat])
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    folded = relay.transform.FoldConstant()(mod)
    cat_value, bn_value = folded["main"].body.fields[1], folded["main"].body.fields[0].args[1]
    assert isinstance(cat_value, relay.Constant) and cat_value.data.shape == (4, 3)
    assert isinstance(bn_value, relay.Constant)
    np.testing.assert_allclose(bn_value.data.numpy(), np.ones((2, 3)), rtol=1e-5)  # (1-1)/2*1+1
    data = RNG.standard_normal((2, 3)).astype("float32")
    for got, want in zip(_run(folded, data), _run(mod, data)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_eliminate_common_subexpr_leaves_one_add_instead_of_two():
    mod, _ = _tutorial()
    folded = relay.transform.FoldConstant()(mod)
    cse = relay.transform.EliminateCommonSubexpr()(folded)
    assert _calls(folded, "add") == 4 and _calls(cse, "add") == 3
    last = cse["main"].body
    assert last.args[0] is last.args[1]
    assert str(cse).splitlines()[-2].startswith("  add(%2, %2)")
    args = _inputs(mod)
    np.testing.assert_allclose(_run(cse, *args), _run(mod, *args), rtol=1e-5, atol=1e-5)


def test_cse_merges_equal_scalar_constants_and_respects_fskip():
    x = relay.var("x", shape=(3,))
    a = relay.multiply(x, relay.const(2.0))
    b = relay.multiply(x, relay.const(2.0))  # another constant object with the same value
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.subtract(a, b)))
    out = relay.transform.EliminateCommonSubexpr()(mod)["main"].body
    assert out.args[0] is out.args[1]
    keep = relay.transform.EliminateCommonSubexpr(lambda call: call.op.name == "multiply")
    out = keep(mod)["main"].body
    assert out.args[0] is not out.args[1]


def test_fuse_ops_level_2_makes_one_primitive_function_for_conv_and_its_adds():
    mod, _ = _tutorial()
    seq = tvm.transform.Sequential(
        [
            relay.transform.FoldConstant(),
            relay.transform.EliminateCommonSubexpr(),
            relay.transform.FuseOps(fuse_opt_level=2),
        ]
    )
    with tvm.transform.PassContext(opt_level=3):
        fused = seq(mod)
    (prim,) = _primitive_functions(fused)
    assert [p.name_hint for p in prim.params] == ["p0", "p1", "p2", "p3"]
    assert analysis.count_calls(prim, "nn.conv2d") == 1 and analysis.count_calls(prim, "add") == 3
    text = str(fused)
    assert "  %3 = fn (%p0: Tensor[(1, 4, 8, 8), float32]" in text and "Primitive=1) ->" in text
    assert "    add(%2, %2) /* ty=Tensor[(1, 4, 6, 6), float32] */" in text
    assert (
        "  %3(%x, %weight, meta[relay.Constant][0] /* ty=Tensor[(1, 4, 6, 6), float32] */" in text
    )
    args = _inputs(mod)
    np.testing.assert_allclose(_run(fused, *args), _run(mod, *args), rtol=1e-5, atol=1e-5)


def test_fuse_ops_level_0_puts_every_op_in_its_own_function():
    mod, _ = _tutorial()
    fused = relay.transform.FuseOps(fuse_opt_level=0)(mod)
    prims = _primitive_functions(fused)
    assert len(prims) == _calls(mod) == 7
    assert all(analysis.count_calls(p) == 1 for p in prims)
    args = _inputs(mod)
    np.testing.assert_allclose(_run(fused, *args), _run(mod, *args), rtol=1e-5, atol=1e-5)


def test_fuse_ops_never_computes_a_conv_input_inside_the_conv_group():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.var("w", shape=(2, 2, 3, 3))
    pre = relay.exp(x)
    conv = relay.nn.conv2d(pre, w)
    out = relay.add(relay.nn.relu(conv), relay.const(1.0))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], out))
    fused = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    groups = sorted(
        sorted(n for n in ("exp", "nn.conv2d", "nn.relu", "add") if analysis.count_calls(p, n))
        for p in _primitive_functions(fused)
    )
    assert groups == [["add", "nn.conv2d", "nn.relu"], ["exp"]]
    args = _inputs(mod)
    np.testing.assert_allclose(_run(fused, *args), _run(mod, *args), rtol=1e-5)


def test_fuse_ops_keeps_a_value_used_by_two_groups_as_its_own_output():
    x = relay.var("x", shape=(4, 4))
    w = relay.var("w", shape=(4, 4))
    shared = relay.exp(x)
    a = relay.nn.dense(shared, w)
    b = relay.nn.dense(relay.sqrt(shared), w)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.add(a, b)))
    fused = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    prims = _primitive_functions(fused)
    exp_groups = [p for p in prims if analysis.count_calls(p, "exp")]
    assert len(exp_groups) == 1 and analysis.count_calls(exp_groups[0]) == 1
    args = _inputs(mod)
    np.testing.assert_allclose(_run(fused, *args), _run(mod, *args), rtol=1e-5)


def test_sequential_respects_opt_level_and_disabled_pass():
    mod, _ = _tutorial()
    seq = tvm.transform.Sequential(
        [
            relay.transform.FoldConstant(),
            relay.transform.EliminateCommonSubexpr(),
            relay.transform.FuseOps(fuse_opt_level=2),
        ]
    )
    default = seq(mod)  # opt_level 2: EliminateCommonSubexpr (level 3) is skipped
    (prim,) = _primitive_functions(default)
    assert analysis.count_calls(prim, "add") == 4
    with tvm.transform.PassContext(opt_level=3):
        assert analysis.count_calls(_primitive_functions(seq(mod))[0], "add") == 3
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["EliminateCommonSubexpr"]):
        assert analysis.count_calls(_primitive_functions(seq(mod))[0], "add") == 4
    with tvm.transform.PassContext(opt_level=1):
        only_fused = seq(mod)  # FoldConstant (level 2) skipped too
    assert sum(analysis.count_calls(p, "multiply") for p in _primitive_functions(only_fused)) == 1


def test_function_pass_class_form_rewrites_each_function_and_infers_types():
    @relay.transform.function_pass(opt_level=1)
    class ScaleConstants:
        def __init__(self, multiplier):
            self.multiplier = multiplier

        def transform_function(self, func, mod, ctx):
            multiplier = self.multiplier

            class Replace(relay.expr_functor.ExprMutator):
                def visit_constant(self, c):
                    return relay.multiply(multiplier, c)

            return Replace().visit(func)

    mod, _ = _tutorial()
    p = ScaleConstants(relay.const(3, "float32"))
    assert p.info.name == "ScaleConstants" and p.info.opt_level == 1
    out = p(mod)
    assert _calls(out, "multiply") == _calls(mod, "multiply") + 2  # c (shared) and 2f
    assert "/* ty=" in str(out)  # type inference ran after the pass
    x, w = _inputs(mod)
    conv = _run(tvm.IRModule.from_expr(relay.Function(*_conv_only())), x, w)
    c = mod["main"].body.args[0].args[1].data.numpy()
    want = 2 * (conv + (3 * c + 3 * c) * 6) + 2 * 3 * c
    np.testing.assert_allclose(_run(out, x, w), want, rtol=1e-4, atol=1e-4)


def _conv_only():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("weight", shape=(4, 4, 3, 3))
    return [x, w], relay.nn.conv2d(x, w)


def test_function_pass_function_form_and_errors():
    @relay.transform.function_pass(opt_level=0, name="Negate")
    def negate(func, mod, ctx):
        return relay.Function(func.params, relay.negative(func.body))

    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(x)))
    out = negate(mod)
    assert negate.info.name == "Negate"
    data = np.array([0.0, 1.0], "float32")
    np.testing.assert_allclose(_run(out, data), -np.exp(data), rtol=1e-6)
    with pytest.raises(tvm.error.ArgumentError, match="has no method transform_function"):
        relay.transform.function_pass(opt_level=0)(type("NoMethod", (), {}))


def test_simplify_inference_turns_batch_norm_and_dropout_into_arithmetic():
    x = relay.var("x", shape=(2, 3, 4, 4))
    g, b, m, v = (relay.var(n, shape=(3,)) for n in "gbmv")
    bn = relay.nn.batch_norm(x, g, b, m, v, epsilon=1e-3)
    out = relay.nn.dropout(relay.nn.relu(bn[0]), rate=0.3)
    mod = tvm.IRModule.from_expr(relay.Function([x, g, b, m, v], out))
    simple = relay.transform.SimplifyInference()(mod)
    text = str(simple)
    assert "batch_norm" not in text and "dropout" not in text and "rsqrt" in text
    data = RNG.standard_normal((2, 3, 4, 4)).astype("float32")
    gamma, beta, mean = (RNG.standard_normal(3).astype("float32") for _ in range(3))
    var = RNG.uniform(0.5, 2, 3).astype("float32")
    shape = (1, 3, 1, 1)
    want = (data - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
    want = np.maximum(want * gamma.reshape(shape) + beta.reshape(shape), 0)
    got = _run(simple, data, gamma, beta, mean, var)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_run(mod, data, gamma, beta, mean, var), want, rtol=1e-4, atol=1e-5)


def test_dead_code_elimination_drops_unused_lets_and_can_inline_single_uses():
    x = relay.var("x", shape=(3,))
    dead, once, twice = relay.var("dead"), relay.var("once"), relay.var("twice")
    body = relay.add(once, relay.multiply(twice, twice))
    expr = relay.Let(
        dead,
        relay.exp(x),
        relay.Let(once, relay.negative(x), relay.Let(twice, relay.sqrt(x), body)),
    )
    mod = tvm.IRModule.from_expr(relay.Function([x], expr))
    out = relay.transform.DeadCodeElimination()(mod)
    assert "let %dead" not in str(out) and "let %once" in str(out)
    inlined = relay.transform.DeadCodeElimination(inline_once=True)(mod)
    assert "let %once" not in str(inlined) and "let %twice" in str(inlined)
    data = np.array([1.0, 4.0, 9.0], "float32")
    want = -data + data
    for m in (out, inlined):
        np.testing.assert_allclose(_run(m, data), want, rtol=1e-6)


def test_to_graph_normal_form_replaces_lets_by_shared_nodes():
    x = relay.var("x", shape=(3,))
    v = relay.var("v")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Let(v, relay.exp(x), relay.add(v, v))))
    out = relay.transform.ToGraphNormalForm()(mod)
    body = out["main"].body
    assert isinstance(body, relay.Call) and body.args[0] is body.args[1]
    assert body.args[0].op.name == "exp"
    data = np.array([0.0, 1.0, 2.0], "float32")
    np.testing.assert_allclose(_run(out, data), 2 * np.exp(data), rtol=1e-6)


def test_instruments_see_each_relay_pass_and_the_required_infer_type():
    log = []

    @tvm.instrument.pass_instrument
    class Record:
        def run_before_pass(self, mod, info):
            log.append(info.name)

    mod, _ = _tutorial()
    seq = tvm.transform.Sequential(
        [relay.transform.FoldConstant(), relay.transform.FuseOps(fuse_opt_level=2)]
    )
    with tvm.transform.PassContext(opt_level=3, instruments=[Record()]):
        seq(mod)
    assert log == ["sequential", "FoldConstant", "InferType", "FuseOps"]


def test_print_ir_shows_relay_text(capsys):
    mod, _ = _tutorial()
    tvm.transform.PrintIR()(mod)
    assert "def @main(%x: Tensor[(1, 4, 8, 8), float32]" in capsys.readouterr().out


def test_optimized_tutorial_program_builds_to_the_same_numbers():
    mod, _ = _tutorial()
    seq = tvm.transform.Sequential(
        [
            relay.transform.FoldConstant(),
            relay.transform.EliminateCommonSubexpr(),
            relay.transform.FuseOps(fuse_opt_level=2),
        ]
    )
    with tvm.transform.PassContext(opt_level=3):
        opt = seq(mod)
    x, w = _inputs(mod)
    run = relay.create_executor("graph", mod=opt, device=tvm.cpu(0), target="llvm").evaluate()
    got = run(x, w).numpy()
    np.testing.assert_allclose(got, _run(mod, x, w), rtol=1e-4, atol=1e-4)
    assert astext(opt) == str(opt)


@pytest.mark.parametrize(
    ("workload", "lone_convs"),
    [
        # a residual add of two convs (the projection shortcut of stages 2-4) takes one of them
        (lambda: relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32)), 3),
        (lambda: relay.testing.mobilenet.get_workload(image_shape=(3, 32, 32)), 0),
        (lambda: relay.testing.vgg.get_workload(num_layers=11, image_shape=(3, 32, 32)), 0),
    ],
    ids=["resnet18", "mobilenet", "vgg11"],
)
def test_model_zoo_programs_keep_their_numbers_through_the_pipeline(workload, lone_convs):
    mod, params = workload()
    seq = tvm.transform.Sequential(
        [
            relay.transform.SimplifyInference(),
            relay.transform.FoldConstant(),
            relay.transform.EliminateCommonSubexpr(),
            relay.transform.FuseOps(fuse_opt_level=2),
        ]
    )
    with tvm.transform.PassContext(opt_level=3):
        opt = seq(mod)
    assert "batch_norm" not in str(opt) and _primitive_functions(opt)
    # one conv per group, each with its epilogue (bias/bn scale, relu or residual add)
    conv_groups = [p for p in _primitive_functions(opt) if analysis.count_calls(p, "nn.conv2d")]
    assert len(conv_groups) == _calls(mod, "nn.conv2d")
    assert sum(analysis.count_calls(p) == 1 for p in conv_groups) == lone_convs
    names = [p.name_hint for p in mod["main"].params]
    data = RNG.standard_normal(mod["main"].params[0].type_annotation.shape).astype("float32")
    args = [data] + [params[n].numpy() for n in names[1:]]
    np.testing.assert_allclose(_run(opt, *args), _run(mod, *args), rtol=1e-4, atol=1e-6)


def test_bound_parameters_fold_batch_norm_into_constants():
    mod, params = relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    bound = tvm.IRModule.from_expr(
        relay.bind(mod["main"], {k: v.numpy() for k, v in params.items()})
    )
    simple = relay.transform.SimplifyInference()(bound)
    folded = relay.transform.FoldConstant()(simple)
    assert _calls(simple, "rsqrt") > 0 and _calls(folded, "rsqrt") == 0
    data = RNG.standard_normal((1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(_run(folded, data), _run(bound, data), rtol=1e-4, atol=1e-6)


def test_fuse_ops_max_depth_from_the_pass_context_config():
    x = relay.var("x", shape=(3,))
    y = x
    for _ in range(5):
        y = relay.negative(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(config={"relay.FuseOps.max_depth": 2}):
        fused = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    assert sorted(analysis.count_calls(p) for p in _primitive_functions(fused)) == [1, 2, 2]
    assert len(_primitive_functions(relay.transform.FuseOps(fuse_opt_level=2)(mod))) == 1
    data = np.array([0.0, 0.1, -0.2], "float32")
    np.testing.assert_allclose(_run(fused, data), _run(mod, data), rtol=1e-5)


def _conv_scale(scale_shape, data_layout="NCHW"):
    x = relay.var("x", shape=(1, 3, 6, 6))
    w = relay.const(RNG.standard_normal((4, 3, 3, 3)).astype("float32"))
    scale = relay.const(RNG.uniform(0.5, 2, scale_shape).astype("float32"))
    out = relay.nn.relu(relay.multiply(relay.nn.conv2d(x, w, padding=(1, 1)), scale))
    return tvm.IRModule.from_expr(relay.Function([x], out))


def test_fold_scale_axis_moves_a_channel_scale_into_the_conv_weight():
    mod = _conv_scale((4, 1, 1))
    with tvm.transform.PassContext(opt_level=3):
        out = tvm.transform.Sequential(
            [relay.transform.FoldScaleAxis(), relay.transform.FoldConstant()]
        )(mod)
    conv = out["main"].body.args[0]
    assert conv.op.name == "nn.conv2d" and isinstance(conv.args[1], relay.Constant)
    assert _calls(out, "multiply") == 0
    data = RNG.standard_normal((1, 3, 6, 6)).astype("float32")
    np.testing.assert_allclose(_run(out, data), _run(mod, data), rtol=1e-5, atol=1e-5)


def test_fold_scale_axis_leaves_scales_along_other_axes():
    mod = _conv_scale((1, 6, 1))  # varies along H: not a channel scale
    out = relay.transform.FoldScaleAxis()(mod)
    assert _calls(out, "multiply") == 1


def test_convert_layout_runs_conv_in_nhwc_and_keeps_numbers():
    x = relay.var("x", shape=(1, 3, 6, 6))
    w = relay.var("w", shape=(4, 3, 3, 3))
    w2 = relay.var("w2", shape=(4, 4, 3, 3))
    y = relay.nn.conv2d(relay.nn.conv2d(x, w, padding=(1, 1)), w2, strides=(2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x, w, w2], relay.nn.relu(y)))
    out = relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(mod)
    text = str(out)
    assert text.count('data_layout="NHWC", kernel_layout="HWIO"') == 2
    # the back-and-forth transposes between the two convs cancel: x, w, w2 and the result
    assert _calls(out, "transpose") == 4
    args = _inputs(mod)
    np.testing.assert_allclose(_run(out, *args), _run(mod, *args), rtol=1e-4, atol=1e-5)
    with pytest.raises(tvm.error.ArgumentError, match="no layout rule for"):
        relay.transform.ConvertLayout({"nn.dense": ["NC"]})(mod)


def test_tutorial_program_after_fold_cse_fuse_prints_as_tvm_does():
    mod, _ = _tutorial()
    mod = relay.transform.FoldConstant()(mod)
    mod = relay.transform.EliminateCommonSubexpr()(mod)
    mod = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    t = "Tensor[(1, 4, 6, 6), float32]"
    ty = f"/* ty={t} */"
    assert str(mod).splitlines() == [
        "def @main(%x: Tensor[(1, 4, 8, 8), float32], %weight: Tensor[(4, 4, 3, 3), float32])"
        f" -> {t} {{",
        "  %3 = fn (%p0: Tensor[(1, 4, 8, 8), float32], %p1: Tensor[(4, 4, 3, 3), float32], "
        f"%p2: {t}, %p3: {t}, Primitive=1) -> {t} {{",
        f"    %0 = nn.conv2d(%p0, %p1, padding=[0, 0, 0, 0]) {ty};",
        f"    %1 = add(%0, %p2) {ty};",
        f"    %2 = add(%1, %p3) {ty};",
        f"    add(%2, %2) {ty}",
        "  };",
        f"  %3(%x, %weight, meta[relay.Constant][0] {ty}, meta[relay.Constant][1] {ty}) {ty}",
        "}",
    ]


def test_to_a_normal_form_binds_each_value_once_and_graph_form_undoes_it():
    mod, _ = _tutorial()
    anf = relay.transform.ToANormalForm()(mod)
    text = str(anf)
    assert text.count("let %x") == _calls(mod) == 7
    t = "Tensor[(1, 4, 6, 6), float32]"
    assert f"  let %x1: {t} = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]) /* ty={t} */;" in text
    assert f"  let %x7: {t} = add(%x5, %x6) /* ty={t} */;" in text
    back = relay.transform.ToGraphNormalForm()(anf)
    tvm.ir.assert_structural_equal(back["main"].body, mod["main"].body)
    args = _inputs(mod)
    np.testing.assert_allclose(_run(anf, *args), _run(mod, *args), rtol=1e-6)


def test_defuse_ops_inlines_primitive_functions_back():
    mod, _ = _tutorial()
    for level in (0, 2):
        fused = relay.transform.FuseOps(fuse_opt_level=level)(mod)
        back = relay.transform.DefuseOps()(fused)
        assert not _primitive_functions(back)
        tvm.ir.assert_structural_equal(back["main"].body, mod["main"].body)
    x = relay.var("x", shape=(2, 3))
    assert relay.transform.InferTypeLocal(relay.sum(x, axis=1)) == relay.TensorType((2,))
