"""Graph-level passes: before/after compared structurally, and by evaluating both on random data."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir, topi
from minitvm.error import MiniTVMError, ShapeError
from minitvm.ir import assert_structural_equal, structural_equal
from minitvm.ir.transform import PassContext, Sequential
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.tir import PrimFunc

RNG = np.random.default_rng(0)


def _func(params, body_fn, name="main", dataflow=True):
    bb = relax.BlockBuilder()
    with bb.function(name, params):
        if dataflow:
            with bb.dataflow():
                out = body_fn(bb)
                out = (
                    bb.emit_output(out)
                    if not isinstance(out, relax.Var) or isinstance(out, relax.DataflowVar)
                    else out
                )
        else:
            out = body_fn(bb)
        bb.emit_func_output(out)
    return bb.get()


def _tensor(name, shape, dtype="float32"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


# ----------------------------------------------------------------------------- LegalizeOps


def test_legalize_ops_produces_call_tir_of_topi_primfuncs():
    x, y = _tensor("x", (2, 3)), _tensor("y", (3,))
    before = _func([x, y], lambda bb: bb.emit(op.nn.relu(op.add(x, y))))

    x2, y2 = _tensor("x", (2, 3)), _tensor("y", (3,))
    bb = relax.BlockBuilder()
    with bb.function("main", [x2, y2]):
        with bb.dataflow():
            lv = bb.emit(
                bb.call_te(topi.add, x2, y2, primfunc_name_hint="add", _canonical_names=True)
            )
            lv1 = bb.emit(
                bb.call_te(topi.nn.relu, lv, primfunc_name_hint="nn_relu", _canonical_names=True)
            )
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    expected = bb.get()

    after = relax.transform.LegalizeOps()(before)
    assert [g.name_hint for g in after.get_global_vars()] == ["main", "add", "nn_relu"]
    for name in ("add", "nn_relu"):
        assert_structural_equal(after[name], expected[name], map_free_vars=True)
    assert_structural_equal(after["main"], expected["main"], map_free_vars=True)
    xs, ys = RNG.standard_normal((2, 3)).astype("float32"), RNG.standard_normal(3).astype("float32")
    np.testing.assert_allclose(evaluate(after, xs, ys), np.maximum(xs + ys, 0), rtol=1e-6)
    np.testing.assert_allclose(evaluate(before, xs, ys), np.maximum(xs + ys, 0), rtol=1e-6)


def test_legalize_ops_is_pure_and_leaves_call_tir_alone():
    x = _tensor("x", (4,))
    before = _func([x], lambda bb: bb.emit_te(topi.exp, x))
    snapshot = before["main"]
    after = relax.transform.LegalizeOps()(before)
    assert after["main"] is snapshot
    assert before["main"] is snapshot and len(before) == 2


def test_legalize_ops_with_symbolic_batch():
    n = tir.Var("n", "int64")
    x, w = _tensor("x", (n, 8)), _tensor("w", (4, 8))
    mod = relax.transform.LegalizeOps()(
        _func([x, w], lambda bb: bb.emit(op.nn.softmax(op.linear(x, w))))
    )
    prim = mod["nn_linear"]
    assert isinstance(prim, PrimFunc)
    for batch in (1, 5):
        xs = RNG.standard_normal((batch, 8)).astype("float32")
        ws = RNG.standard_normal((4, 8)).astype("float32")
        logits = xs @ ws.T
        e = np.exp(logits - logits.max(-1, keepdims=True))
        np.testing.assert_allclose(
            evaluate(mod, xs, ws), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6
        )


def test_legalize_ops_error_names_the_op():
    x = relax.Var("x", relax.TensorStructInfo(None, "float32", ndim=2))
    mod = _func([x], lambda bb: bb.emit(op.exp(x)))
    with pytest.raises(
        MiniTVMError, match=r"LegalizeOps: cannot legalize relax\.exp: emit_te: argument 'x'"
    ):
        relax.transform.LegalizeOps()(mod)


# ----------------------------------------------------------------------------- BindParams


def test_bind_params_by_name_and_var_turns_params_into_constants():
    x, w, b = _tensor("x", (2, 4)), _tensor("w", (3, 4)), _tensor("b", (3,))
    mod = _func([x, w, b], lambda bb: bb.emit(op.linear(x, w, b)))
    wv, bv = RNG.standard_normal((3, 4)).astype("float32"), RNG.standard_normal(3).astype("float32")
    bound = relax.transform.BindParams("main", {"w": wv, b: bv})(mod)
    main = bound["main"]
    assert [p.name_hint for p in main.params] == ["x"]
    call = main.body.blocks[0].bindings[0].value
    assert isinstance(call.args[1], relax.Constant) and isinstance(call.args[2], relax.Constant)
    np.testing.assert_array_equal(call.args[1].data.numpy(), wv)
    xs = RNG.standard_normal((2, 4)).astype("float32")
    np.testing.assert_allclose(evaluate(bound, xs), evaluate(mod, xs, wv, bv), rtol=1e-6)
    assert len(mod["main"].params) == 3  # the input module is unchanged


def test_bind_params_substitutes_symbolic_dims_fixed_by_the_arrays():
    n = tir.Var("n", "int64")
    x, w = _tensor("x", (2, n)), _tensor("w", (5, n))
    mod = _func([x, w], lambda bb: bb.emit(op.linear(x, w)))
    bound = relax.transform.BindParams("main", {"w": np.ones((5, 7), "float32")})(mod)
    main = bound["main"]
    assert main.params[0].struct_info.static_shape() == (2, 7)
    assert main.ret_struct_info.static_shape() == (2, 5)


def test_bind_params_errors():
    x, w = _tensor("x", (2, 4)), _tensor("w", (3, 4))
    mod = _func([x, w], lambda bb: bb.emit(op.linear(x, w)))
    with pytest.raises(
        MiniTVMError,
        match=r"BindParams: the function has no parameter named 'v'; its params are \['x', 'w'\]",
    ):
        relax.transform.BindParams("main", {"v": np.ones((3, 4), "float32")})(mod)
    with pytest.raises(
        ShapeError, match=r"BindParams: parameter 'w' dim 0 is 3, the array has shape \(4, 4\)"
    ):
        relax.transform.BindParams("main", {"w": np.ones((4, 4), "float32")})(mod)
    with pytest.raises(
        ShapeError, match=r"BindParams: parameter 'w' has dtype float32, the array is float64"
    ):
        relax.transform.BindParams("main", {"w": np.ones((3, 4))})(mod)


# ----------------------------------------------------------------------------- FoldConstant


def _tutorial_module():
    """The pass tutorial: conv2d, a constant added to itself then doubled, two identical adds, a final add."""
    x, w = _tensor("x", (1, 3, 8, 8)), _tensor("w", (4, 3, 3, 3))
    c = relax.const(RNG.standard_normal((1, 4, 6, 6)).astype("float32"))

    def body(bb):
        conv = bb.emit(op.nn.conv2d(x, w))
        doubled = bb.emit(op.multiply(bb.emit(op.add(c, c)), relax.const(2.0, "float32")))
        a1 = bb.emit(op.add(conv, doubled))
        a2 = bb.emit(op.add(conv, doubled))
        return bb.emit(op.add(a1, a2))

    return _func([x, w], body), c


def test_pass_tutorial_folds_constants_eliminates_common_subexpr_and_keeps_values():
    mod, c = _tutorial_module()
    seq = Sequential(
        [
            relax.transform.FoldConstant(),
            relax.transform.EliminateCommonSubexpr(),
            relax.transform.DeadCodeElimination(),
        ]
    )
    with PassContext(opt_level=3):
        opt = seq(mod)
    bindings = opt["main"].body.blocks[0].bindings
    assert [b.value.op.name for b in bindings[:3]] == ["relax.nn.conv2d", "relax.add", "relax.add"]
    assert len(bindings) == 4  # conv, add const, add(a1, a1), the output binding
    folded = bindings[1].value.args[1]
    assert isinstance(folded, relax.Constant)
    np.testing.assert_allclose(folded.data.numpy(), (c.data.numpy() * 2) * 2, rtol=1e-6)
    assert bindings[2].value.args[0] is bindings[2].value.args[1]
    text = opt.script()
    assert "R.multiply" not in text and text.count("R.add(") == 2
    xs, ws = (
        RNG.standard_normal((1, 3, 8, 8)).astype("float32"),
        RNG.standard_normal((4, 3, 3, 3)).astype("float32"),
    )
    legal = relax.transform.LegalizeOps()(opt)
    np.testing.assert_allclose(evaluate(legal, xs, ws), evaluate(mod, xs, ws), rtol=1e-4, atol=1e-4)


def test_fold_constant_folds_call_tir_and_tuple_items():
    c = relax.const(np.arange(6, dtype="float32").reshape(2, 3))
    x = _tensor("x", (2, 3))
    mod = relax.transform.LegalizeOps()(
        _func([x], lambda bb: bb.emit(op.add(x, bb.emit(op.exp(c)))))
    )
    mod2 = _func([x], lambda bb: bb.emit(op.add(x, op.split(c, 3, axis=1)[1])))
    folded = relax.transform.FoldConstant()(mod)
    first = folded["main"].body.blocks[0].bindings[0].value
    assert isinstance(first, relax.Constant)
    np.testing.assert_allclose(first.data.numpy(), np.exp(c.data.numpy()), rtol=1e-6)
    add = relax.transform.FoldConstant()(mod2)["main"].body.blocks[0].bindings[-2].value
    np.testing.assert_array_equal(add.args[1].data.numpy(), [[1], [4]])


def test_fold_constant_leaves_non_constant_and_creation_calls():
    x = _tensor("x", (3,))
    mod = _func([x], lambda bb: bb.emit(op.add(x, op.zeros((3,), "float32"))))
    assert relax.transform.FoldConstant()(mod)["main"] is mod["main"]


# ----------------------------------------------------------------------------- CSE and DCE


def test_cse_keeps_calls_with_different_attrs_and_packed_calls():
    x = _tensor("x", (2, 3))

    def body(bb):
        a = bb.emit(op.sum(x, axis=0))
        b = bb.emit(op.sum(x, axis=1))
        p1 = bb.emit(relax.call_dps_packed("f", [x], relax.TensorStructInfo((2, 3), "float32")))
        p2 = bb.emit(relax.call_dps_packed("f", [x], relax.TensorStructInfo((2, 3), "float32")))
        return bb.emit(relax.Tuple([a, b, p1, p2]))

    mod = _func([x], body)
    assert relax.transform.EliminateCommonSubexpr()(mod)["main"] is mod["main"]


def test_cse_output_var_keeps_its_name():
    x = _tensor("x", (2,))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.exp(x))
            g = bb.emit_output(op.exp(x))
        bb.emit_func_output(relax.Tuple([g, a]) if False else g)
    mod = bb.get()
    out = relax.transform.EliminateCommonSubexpr()(mod)["main"]
    last = out.body.blocks[0].bindings[-1]
    assert last.var.name_hint == "gv" and last.value is out.body.blocks[0].bindings[0].var


def test_dce_removes_unused_bindings_and_unreachable_primfuncs():
    x = _tensor("x", (3,))

    def body(bb):
        bb.emit_te(topi.log, x)  # unused
        bb.emit(op.sqrt(x))  # unused
        return bb.emit_te(topi.exp, x)

    mod = _func([x], body)
    assert "log" in mod
    out = relax.transform.DeadCodeElimination()(mod)
    assert sorted(out) == ["exp", "main"]
    assert len(out["main"].body.blocks[0].bindings) == 2
    np.testing.assert_allclose(evaluate(out, np.ones(3, "float32")), np.exp(np.ones(3)), rtol=1e-6)


def test_passes_compose_and_pass_context_can_disable():
    mod, _ = _tutorial_module()
    with PassContext(disabled_pass=["FoldConstant"]):
        out = relax.transform.FoldConstant()(mod)
    assert out is mod
    structural_equal(mod["main"], mod["main"])


def test_cse_then_dce_structurally_equal_to_hand_written_result():
    x = _tensor("x", (4,))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.exp(x))
            b = bb.emit(op.exp(x))
            bb.emit(op.log(x))  # dead
            gv = bb.emit_output(op.add(a, b))
        bb.emit_func_output(gv)
    before = bb.get()

    x2 = _tensor("x", (4,))
    bb = relax.BlockBuilder()
    with bb.function("main", [x2]):
        with bb.dataflow():
            a2 = bb.emit(op.exp(x2))
            gv2 = bb.emit_output(op.add(a2, a2))
        bb.emit_func_output(gv2)
    expected = bb.get()

    after = Sequential(
        [relax.transform.EliminateCommonSubexpr(), relax.transform.DeadCodeElimination()]
    )(before)
    assert_structural_equal(after["main"], expected["main"])
    xs = RNG.uniform(0.5, 2.0, 4).astype("float32")
    np.testing.assert_allclose(evaluate(after, xs), evaluate(before, xs), rtol=1e-6)
