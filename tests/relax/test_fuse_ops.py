"""AnnotateTIROpPattern, FuseOps and FuseTIR: patterns of legalized ops, grouping rules, the
TVM pass-tutorial program (constant folding + CSE + fusion) and numerics before/after."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.error import MiniTVMError
from minitvm.ir.transform import PassContext, Sequential
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.op import OpPattern
from minitvm.relax.transform.fuse_ops import partition
from minitvm.tir.function import PrimFunc

T = relax.TensorStructInfo


def _module(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = body(bb, *params)
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


def _prim_funcs(mod):
    return {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, PrimFunc)}


def _relax_funcs(mod):
    return {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, relax.Function)}


def _fuse(mod):
    return Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
        ]
    )(mod)


# ----------------------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    "build, shapes, expected",
    [
        (lambda x: op.exp(x), [(4, 5)], OpPattern.ELEMWISE),
        (lambda x, y: op.add(x, y), [(4, 5), (4, 5)], OpPattern.ELEMWISE),
        (lambda x, y: op.add(x, y), [(4, 5), (5,)], OpPattern.BROADCAST),
        (lambda x: op.permute_dims(x), [(4, 5)], OpPattern.INJECTIVE),
        (lambda x: op.reshape(x, (5, 4)), [(4, 5)], OpPattern.INJECTIVE),
        (lambda x, w: op.matmul(x, w), [(4, 5), (5, 3)], OpPattern.OUT_EWISE_FUSABLE),
        (
            lambda x, w: op.nn.conv2d(x, w, padding=1),
            [(1, 2, 5, 5), (3, 2, 3, 3)],
            OpPattern.OUT_EWISE_FUSABLE,
        ),
        (lambda x: op.sum(x, axis=1), [(4, 5)], OpPattern.COMM_REDUCE),
        (lambda x: op.nn.softmax(x), [(4, 5)], OpPattern.COMM_REDUCE),
    ],
    ids=["exp", "add", "add_bcast", "transpose", "reshape", "matmul", "conv2d", "sum", "softmax"],
)
def test_annotate_op_pattern_classifies_legalized_ops(build, shapes, expected) -> None:
    params = [relax.Var(f"a{k}", T(s, "float32")) for k, s in enumerate(shapes)]
    mod = _module(params, lambda bb, *a: build(*a))
    mod = relax.transform.AnnotateTIROpPattern()(relax.transform.LegalizeOps()(mod))
    (func,) = _prim_funcs(mod).values()
    assert func.attrs["op_pattern"] == int(expected)


def test_annotate_op_pattern_marks_blockless_funcs_opaque_and_keeps_existing() -> None:
    from minitvm.ir.module import IRModule
    from minitvm.tir.buffer import decl_buffer
    from minitvm.tir.stmt import BufferStore, For, ForKind

    a = decl_buffer((4,), "float32", "A")
    i = tir.Var("i", "int32")
    body = For(i, 0, 4, ForKind.SERIAL, BufferStore(a, a[i] + 1.0, (i,)))
    p = tir.Var("A", "handle")
    loops = PrimFunc((p,), body, None, {p: a})
    mod = IRModule({"loops": loops, "marked": loops.with_attr("op_pattern", 0)})
    out = relax.transform.AnnotateTIROpPattern()(mod)
    assert out["loops"].attrs["op_pattern"] == int(OpPattern.OPAQUE)
    assert out["marked"].attrs["op_pattern"] == 0


# ----------------------------------------------------------------------------- grouping


def _mlp_layer(bb, x, w, b):
    return op.nn.relu(op.add(op.matmul(x, w), b))


def test_mlp_fuses_into_one_prim_func_per_layer() -> None:
    n = tir.Var("n", "int64")
    x = relax.Var("x", T((n, 8), "float32"))
    w1, b1 = relax.Var("w1", T((8, 16), "float32")), relax.Var("b1", T((16,), "float32"))
    w2, b2 = relax.Var("w2", T((16, 4), "float32")), relax.Var("b2", T((4,), "float32"))

    def body(bb, x, w1, b1, w2, b2):
        h = bb.emit(_mlp_layer(bb, x, w1, b1))
        return _mlp_layer(bb, h, w2, b2)

    mod = _module([x, w1, b1, w2, b2], body)
    fused = _fuse(mod)
    prims = _prim_funcs(fused)
    assert sorted(prims) == ["fused_matmul_add_nn_relu", "fused_matmul_add_nn_relu1"]
    assert list(_relax_funcs(fused)) == ["main"]  # the primitive functions are gone
    calls = [b.value for b in fused["main"].body.blocks[0].bindings]
    assert [c.args[0].name_hint for c in calls] == sorted(prims)
    merged = prims["fused_matmul_add_nn_relu"]
    assert len(merged.body.block.alloc_buffers) == 2  # T_matmul and T_add are intermediates
    rng = np.random.default_rng(0)
    for rows in (1, 5):
        args = [
            rng.standard_normal(s).astype("float32")
            for s in [(rows, 8), (8, 16), (16,), (16, 4), (4,)]
        ]
        h = np.maximum(args[0] @ args[1] + args[2], 0)
        expected = np.maximum(h @ args[3] + args[4], 0)
        np.testing.assert_allclose(evaluate(fused, *args), expected, rtol=1e-5, atol=1e-6)


def test_diamond_of_elementwise_ops_fuses_through_the_post_dominator() -> None:
    x = relax.Var("x", T((4, 6), "float32"))

    def body(bb, x):
        a = bb.emit(op.exp(x))
        b = bb.emit(op.add(a, relax.const(1.0, "float32")))
        return op.multiply(a, b)

    mod = _fuse(_module([x], body))
    assert list(_prim_funcs(mod)) == ["fused_exp_add_multiply"]
    data = np.random.default_rng(1).standard_normal((4, 6)).astype("float32")
    np.testing.assert_allclose(evaluate(mod, data), np.exp(data) * (np.exp(data) + 1), rtol=1e-5)


def test_two_reductions_never_share_a_group_and_escaping_values_end_groups() -> None:
    x = relax.Var("x", T((4, 8), "float32"))
    w = relax.Var("w", T((8, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            h = bb.emit(op.nn.relu(op.matmul(x, w)))
            kept = bb.emit_output(op.exp(h))  # visible after the block: a group output
            y = bb.emit(op.matmul(h, w))
            gv = bb.emit_output(op.nn.relu(y))
        bb.emit_func_output(relax.Tuple([kept, gv]))
    legal = relax.transform.AnnotateTIROpPattern()(relax.transform.LegalizeOps()(bb.get()))
    groups = partition(legal, legal["main"].body.blocks[0])
    names = [
        [legal["main"].body.blocks[0].bindings[i].value.args[0].name_hint for i in g]
        for g in groups
    ]
    assert names == [["matmul", "nn_relu"], ["matmul", "nn_relu"]]  # exp(h) stays alone
    fused = _fuse(bb.get())
    rng = np.random.default_rng(2)
    a, b = (
        rng.standard_normal((4, 8)).astype("float32"),
        rng.standard_normal((8, 8)).astype("float32"),
    )
    h = np.maximum(a @ b, 0)
    got = evaluate(fused, a, b)
    np.testing.assert_allclose(got[0], np.exp(h), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.maximum(h @ b, 0), rtol=1e-5)


def test_fuse_opt_level_zero_fuses_nothing() -> None:
    x = relax.Var("x", T((4,), "float32"))
    mod = _module([x], lambda bb, x: op.exp(op.exp(x)))
    legal = relax.transform.AnnotateTIROpPattern()(relax.transform.LegalizeOps()(mod))
    assert relax.transform.FuseOps(fuse_opt_level=0)(legal) is legal
    with PassContext(opt_level=0):
        assert relax.transform.FuseOps()(legal) is legal
    assert "fused_exp_exp" in relax.transform.FuseOps()(legal)


def test_same_prim_func_called_twice_is_copied_with_fresh_loops() -> None:
    x = relax.Var("x", T((3, 5), "float32"))
    mod = _fuse(_module([x], lambda bb, x: op.exp(op.exp(x))))
    (name,) = _prim_funcs(mod)
    func = mod[name]
    loops = []
    from minitvm.tir.functor import post_order_visit
    from minitvm.tir.stmt import For

    post_order_visit(func.body, lambda n: loops.append(n.loop_var) if isinstance(n, For) else None)
    assert len(loops) == 4 and len({id(v) for v in loops}) == 4
    data = np.random.default_rng(3).standard_normal((3, 5)).astype("float32")
    np.testing.assert_allclose(evaluate(mod, data), np.exp(np.exp(data)), rtol=1e-5)


def test_fuse_tir_rejects_a_primitive_function_of_high_level_ops() -> None:
    x = relax.Var("x", T((4,), "float32"))
    mod = _module([x], lambda bb, x: op.exp(x))
    mod["main"] = mod["main"].with_attr("Primitive", 1)
    with pytest.raises(MiniTVMError, match="not a chain of call_tir bindings.*LegalizeOps"):
        relax.transform.FuseTIR()(mod)


# ----------------------------------------------------------------------------- the pass tutorial


def _tutorial_program():
    """TVM's pass-infrastructure example: conv2d, a constant added to itself and multiplied by
    2, two identical adds, a final add (smaller shapes)."""
    rng = np.random.default_rng(4)
    c_data = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    x = relax.Var("x", T((1, 3, 8, 8), "float32"))
    weight = relax.Var("weight", T((4, 3, 3, 3), "float32"))

    def body(bb, x, weight):
        c = relax.const(c_data)
        conv = bb.emit(op.nn.conv2d(x, weight))
        y = bb.emit(op.add(c, c))
        y = bb.emit(op.multiply(y, relax.const(2.0, "float32")))
        y = bb.emit(op.add(conv, y))
        z = bb.emit(op.add(y, c))
        z1 = bb.emit(op.add(y, c))
        return op.add(z, z1)

    return _module([x, weight], body), c_data


def test_pass_tutorial_folds_constants_eliminates_common_subexpr_and_fuses() -> None:
    mod, c_data = _tutorial_program()
    optimized = Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.FoldConstant(),
            relax.transform.EliminateCommonSubexpr(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.DeadCodeElimination(),
        ]
    )(mod)
    text = optimized.script()
    prims = _prim_funcs(optimized)
    # constant folding: c + c and (c + c) * 2 are gone; CSE: z1 reuses z; fusion: one kernel
    assert list(prims) == ["fused_nn_conv2d_add_add_add"], text
    bindings = optimized["main"].body.blocks[0].bindings
    assert len(bindings) == 1 and "R.call_tir(cls.fused_nn_conv2d_add_add_add" in text
    consts = [a for a in bindings[0].value.args[1].fields if isinstance(a, relax.Constant)]
    np.testing.assert_allclose(
        sorted(c.data.numpy().ravel()[0] for c in consts),
        sorted([c_data.ravel()[0], 4 * c_data.ravel()[0]]),
        rtol=1e-6,
    )
    merged = prims["fused_nn_conv2d_add_add_add"]
    assert len(merged.body.block.alloc_buffers) == 3  # conv, y, z (z1 is z)
    rng = np.random.default_rng(5)
    args = [
        rng.standard_normal((1, 3, 8, 8)).astype("float32"),
        rng.standard_normal((4, 3, 3, 3)).astype("float32"),
    ]
    np.testing.assert_allclose(
        evaluate(optimized, *args), evaluate(mod, *args), rtol=1e-4, atol=1e-4
    )


def test_an_unused_chain_still_fuses_and_the_program_is_unchanged() -> None:
    x = relax.Var("x", T((4, 4), "float32"))

    def body(bb, x):
        dead = bb.emit(op.exp(x))
        bb.emit(op.exp(dead))
        return op.nn.relu(x)

    mod = _fuse(_module([x], body))
    assert "fused_exp_exp" in mod
    data = np.random.default_rng(6).standard_normal((4, 4)).astype("float32")
    np.testing.assert_allclose(evaluate(mod, data), np.maximum(data, 0))
