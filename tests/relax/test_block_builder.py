"""BlockBuilder: the MLC course's two-layer MLP with emit_te, normalisation, scopes and errors."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, te, tir, topi
from minitvm.error import MiniTVMError
from minitvm.ir import IRModule
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.tir import PrimFunc


def te_matmul(A: te.Tensor, B: te.Tensor) -> te.Tensor:
    assert A.shape[1] is B.shape[0] or int(A.shape[1].value) == int(B.shape[0].value)
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute(
        (A.shape[0], B.shape[1]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul"
    )


def te_relu(A: te.Tensor) -> te.Tensor:
    return te.compute(A.shape, lambda *i: te.max(A(*i), 0), name="relu")


def _mlp(batch):
    x = relax.Var("x", relax.TensorStructInfo((batch, 784), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((784, 128), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((128, 10), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, w1]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_matmul, x, w0)
            lv1 = bb.emit_te(te_relu, lv0)
            gv = bb.emit_output(bb.emit_te(te_matmul, lv1, w1))
        bb.emit_func_output(gv)
    return bb.get()


def _mlp_inputs(batch=2):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype("float32") for s in ((batch, 784), (784, 128), (128, 10))]


def test_mlc_two_layer_mlp_with_emit_te_matches_numpy():
    mod = _mlp(2)
    names = [gv.name_hint for gv in mod.get_global_vars()]
    assert names == ["te_matmul", "te_relu", "te_matmul1", "main"]
    assert all(isinstance(mod[n], PrimFunc) for n in names[:3])
    x, w0, w1 = _mlp_inputs()
    out = evaluate(mod, x, w0, w1)
    np.testing.assert_allclose(out, np.maximum(x @ w0, 0) @ w1, rtol=1e-4, atol=1e-4)


def test_mlp_with_symbolic_batch_runs_for_several_sizes():
    n = tir.Var("n", "int64")
    mod = _mlp(n)
    main = mod["main"]
    assert main.ret_struct_info.shape[0] is n
    for batch in (1, 3):
        x, w0, w1 = _mlp_inputs(batch)
        np.testing.assert_allclose(
            evaluate(mod, x, w0, w1), np.maximum(x @ w0, 0) @ w1, rtol=1e-4, atol=1e-4
        )


def test_legalize_shares_one_primfunc_for_identical_kernels():
    legal = relax.transform.LegalizeOps()(_exp_twice_highlevel())
    prims = [gv for gv, f in legal.functions_items() if isinstance(f, PrimFunc)]
    assert [g.name_hint for g in prims] == ["exp"]


def test_add_func_dedupes_structurally_equal_primfuncs_and_renames_clashes():
    A = te.placeholder((4,), "float32", name="A")
    f1 = te.create_prim_func([A, topi.exp(A)])
    B = te.placeholder((4,), "float32", name="A")
    f2 = te.create_prim_func([B, topi.exp(B)])
    f3 = te.create_prim_func([B, topi.log(B)])
    bb = relax.BlockBuilder()
    g1 = bb.add_func(f1, "k")
    assert bb.add_func(f2, "k") is g1
    assert bb.add_func(f3, "k").name_hint == "k1"


def _exp_twice_highlevel() -> IRModule:
    x = relax.Var("x", relax.TensorStructInfo((4, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.exp(op.exp(x)))
        bb.emit_func_output(gv)
    return bb.get()


def test_emit_normalises_nested_calls_into_bindings():
    mod = _exp_twice_highlevel()
    bindings = mod["main"].body.blocks[0].bindings
    assert len(bindings) == 2
    assert isinstance(bindings[0].var, relax.DataflowVar)
    assert bindings[1].value.args[0] is bindings[0].var
    assert type(bindings[1].var) is relax.Var


def test_emit_output_and_func_output_of_tuple():
    x = relax.Var("x", relax.TensorStructInfo((2, 6), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            parts = bb.emit(op.split(x, 2, axis=1))
            a = bb.emit_output(relax.TupleGetItem(parts, 0))
            b = bb.emit_output(parts[1])
        bb.emit_func_output([a, b])
    mod = bb.get()
    xs = np.arange(12, dtype="float32").reshape(2, 6)
    got = evaluate(mod, xs)
    np.testing.assert_array_equal(got[0], xs[:, :3])
    np.testing.assert_array_equal(got[1], xs[:, 3:])


def test_params_given_at_emit_func_output_and_bindings_outside_dataflow():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f"):
        y = bb.emit(op.nn.relu(x))
        bb.emit_func_output(op.add(y, y), params=[x])
    mod = bb.get()
    f = mod["f"]
    assert isinstance(f.body.blocks[0], relax.BindingBlock) and not isinstance(
        f.body.blocks[0], relax.DataflowBlock
    )
    np.testing.assert_allclose(
        evaluate(mod, np.array([-1, 2, 3], "float32"), func_name="f"), [0, 4, 6]
    )


def test_match_cast_defines_new_symbolic_dim():
    x = relax.Var("x", relax.TensorStructInfo(None, "float32", ndim=2))
    m = tir.Var("m", "int64")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.match_cast(x, relax.TensorStructInfo((m, 4), "float32"))
        z = bb.emit(op.sum(y, axis=1))
        bb.emit_func_output(z)
    mod = bb.get()
    assert mod["main"].ret_struct_info.shape[0] is m
    np.testing.assert_allclose(evaluate(mod, np.ones((3, 4), "float32")), [4, 4, 4])
    with pytest.raises(MiniTVMError, match=r"match_cast to 'gv': dim 1 is 5, expected 4"):
        evaluate(mod, np.ones((3, 5), "float32"))


def test_call_dps_packed_through_registered_function():
    from minitvm.runtime import register_func

    @register_func("test.relax.scale2", override=True)
    def scale2(x, out):
        out.copyfrom(x.numpy() * 2) if hasattr(out, "copyfrom") else None

    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(
                relax.call_dps_packed(
                    "test.relax.scale2", [x], relax.TensorStructInfo((3,), "float32")
                )
            )
        bb.emit_func_output(gv)
    np.testing.assert_allclose(evaluate(bb.get(), np.array([1, 2, 3], "float32")), [2, 4, 6])


# ----------------------------------------------------------------------------- errors


def test_emit_outside_function_is_an_error():
    with pytest.raises(MiniTVMError, match=r"bb\.emit must be called inside `with bb\.function"):
        relax.BlockBuilder().emit(op.exp(relax.Var("x", relax.TensorStructInfo((2,), "float32"))))


def test_dataflow_var_as_function_output_is_an_error():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(MiniTVMError, match=r"output 'lv' is a dataflow variable.*bb\.emit_output"):
        with bb.function("main", [x]):
            with bb.dataflow():
                lv = bb.emit(op.exp(x))
            bb.emit_func_output(lv)


def test_function_without_output_is_an_error():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(MiniTVMError, match=r"ended without bb\.emit_func_output"):
        with bb.function("main", [x]):
            bb.emit(op.exp(x))


def test_emit_output_outside_dataflow_and_nested_dataflow_are_errors():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(MiniTVMError, match="emit_output is only for dataflow blocks"):
        with bb.function("main", [x]):
            bb.emit_output(x)
    bb = relax.BlockBuilder()
    with pytest.raises(MiniTVMError, match="dataflow blocks cannot be nested"):
        with bb.function("main", [x]):
            with bb.dataflow():
                with bb.dataflow():
                    pass


def test_emit_te_needs_known_shapes():
    x = relax.Var("x", relax.TensorStructInfo(None, "float32", ndim=2))
    bb = relax.BlockBuilder()
    with pytest.raises(MiniTVMError, match=r"emit_te: argument 'x' has struct info .* known shape"):
        with bb.function("main", [x]):
            bb.emit_te(topi.exp, x)


def test_emit_te_output_dim_not_from_inputs_becomes_a_tir_var():
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    k = tir.Var("k", "int64")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit_te(lambda a: te.compute((k * 2,), lambda i: a[0], name="rep"), x)
        bb.emit_func_output(y)
    call = bb.get()["main"].body.blocks[0].bindings[0].value
    assert [v for v in call.args[2].values] == [k]  # the caller passes k; the kernel takes it
    # main never binds k (no parameter has it): the build refuses instead of guessing it
    with pytest.raises(MiniTVMError, match=r"symbolic dim 'k' is not bound"):
        relax.build(bb.get(), "llvm")
