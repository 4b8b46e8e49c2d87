"""Graph IR nodes and struct info: construction, immutability, struct-info derivation,
structural equality up to renaming (symbolic dims included), and printing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.error import MiniTVMError, ShapeError
from minitvm.ir import structural_equal, structural_hash
from minitvm.relax import op
from minitvm.relax.struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
)


def test_tensor_struct_info_normalises_dims_to_int64():
    n = tir.Var("n", "int64")
    s = TensorStructInfo((n, 4), "float32")
    assert s.ndim == 2 and s.shape[0] is n and str(s.shape[1].dtype) == "int64"
    assert not s.is_static and TensorStructInfo((2, 3)).static_shape() == (2, 3)
    assert TensorStructInfo(None, "float32", ndim=3).shape is None
    assert TensorStructInfo((2,), None).dtype is None


def test_struct_info_errors():
    with pytest.raises(
        MiniTVMError, match=r"shape dimension 'n' \(a str\) is not an int or a tir expression"
    ):
        TensorStructInfo(("n", 4))
    with pytest.raises(MiniTVMError, match="shape dimension -1 is negative"):
        TensorStructInfo((-1, 4))
    with pytest.raises(MiniTVMError, match="ndim=3 disagrees with shape of 2 dims"):
        TensorStructInfo((2, 4), "float32", ndim=3)
    with pytest.raises(MiniTVMError, match="struct_info must be a StructInfo"):
        relax.Var("x", "float32")


def test_nodes_are_frozen_and_replace_returns_self_when_unchanged():
    x = relax.Var("x", TensorStructInfo((2,), "float32"))
    call = op.exp(x)
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.args = ()
    assert call.replace(args=call.args) is call
    assert x.replace(name_hint="y").name_hint == "y"


def test_struct_info_of_leaves_tuples_and_items():
    c = relax.const(np.zeros((2, 3), "float16"))
    assert c.struct_info.static_shape() == (2, 3) and str(c.struct_info.dtype) == "float16"
    assert str(relax.const(1.5).struct_info.dtype) == "float32"
    assert str(relax.const(3).struct_info.dtype) == "int32"
    assert isinstance(relax.ShapeExpr([2, 3]).struct_info, ShapeStructInfo)
    assert isinstance(relax.PrimValue(tir.IntImm("int64", 3)).struct_info, PrimStructInfo)
    t = relax.Tuple([c, c])
    assert isinstance(t.struct_info, TupleStructInfo)
    assert t[1].struct_info.static_shape() == (2, 3)
    with pytest.raises(ShapeError, match="index 2 out of range for a tuple of 2 fields"):
        relax.TupleGetItem(t, 2).struct_info
    with pytest.raises(MiniTVMError, match="not a tuple"):
        c[0]


def test_constant_equality_is_by_value():
    a = relax.const(np.arange(4, dtype="float32"))
    b = relax.const(np.arange(4, dtype="float32"))
    c = relax.const(np.arange(4, dtype="int32"))
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)
    assert not structural_equal(a, c)
    assert not a.data.numpy().flags.writeable


def test_constant_owns_a_private_copy_and_shares_it_with_rebuilt_constants():
    # the caller's array may change after; a read-only array of the caller's may be made
    # writable again: both are copied. A constant rebuilt from another one's data shares it.
    src = np.arange(6, dtype="float32")
    a = relax.const(src)
    src[0] = 100.0
    assert a.data.numpy()[0] == 0.0
    frozen = np.arange(3, dtype="float32")
    frozen.flags.writeable = False
    assert relax.const(frozen).data.numpy() is not frozen
    b = relax.const(a.data.numpy())
    assert b.data.numpy() is a.data.numpy()
    np.testing.assert_array_equal(b.data.numpy(), np.array([0, 1, 2, 3, 4, 5], "float32"))


def test_call_rejects_non_expression_args():
    with pytest.raises(
        MiniTVMError,
        match=r"relax.add: argument 1 is a ndarray, not a relax expression; wrap arrays with relax.const",
    ):
        relax.Call(relax.Op.get("relax.add"), (relax.const(1.0), np.ones(2)))
    with pytest.raises(MiniTVMError, match="unknown relax op 'relax.nope'"):
        relax.Op.get("relax.nope")


def _build(tag):
    n = tir.Var("n", "int64")
    x = relax.Var("x" + tag, TensorStructInfo((n, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.nn.relu(op.add(x, relax.const(np.ones(4, "float32")))))
        bb.emit_func_output(gv)
    return bb.get()["main"]


def test_functions_built_twice_are_structurally_equal_up_to_renaming():
    f, g = _build("a"), _build("b")
    assert structural_equal(f, g)
    assert structural_hash(f) == structural_hash(g)


def test_param_struct_info_is_compared():
    f = _build("")
    x = relax.Var("x", TensorStructInfo((3, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.nn.relu(op.add(x, relax.const(np.ones(4, "float32")))))
        bb.emit_func_output(gv)
    assert not structural_equal(f, bb.get()["main"])


def test_printer_shows_tvmscript_like_text():
    text = _build("").script()
    assert "@R.function" in text
    assert (
        'def main(xa: R.Tensor(("n", 4), dtype="float32"))' in text
        or 'def main(x: R.Tensor(("n", 4), dtype="float32"))' in text
    )
    assert "n = T.int64()" in text and "with R.dataflow():" in text and "R.output(gv)" in text
    assert "R.nn.relu(lv)" in text
    assert str(TensorStructInfo((2, 3), "float32")) == 'R.Tensor((2, 3), dtype="float32")'
    assert str(ObjectStructInfo()) == "R.Object"


def test_nodes_are_not_picklable():
    import pickle

    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(relax.const(1.0))


def test_if_node_struct_info_evaluation_and_printing():
    from minitvm.relax.eval_ref import evaluate

    c = relax.Var("c", TensorStructInfo((), "bool"))
    x = relax.Var("x", TensorStructInfo((2,), "float32"))
    then_v = relax.Var("t", TensorStructInfo((2,), "float32"))
    then_seq = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(then_v, op.exp(x))])], then_v)
    cond = relax.If(c, then_seq, relax.SeqExpr([], x))
    out = relax.Var("out", cond.struct_info)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(out, cond)])], out)
    f = relax.Function([c, x], body)
    assert f.ret_struct_info.static_shape() == (2,)
    xs = np.array([0.0, 1.0], "float32")
    np.testing.assert_allclose(evaluate(f, np.array(True), xs), np.exp(xs), rtol=1e-6)
    np.testing.assert_allclose(evaluate(f, np.array(False), xs), xs)
    text = f.script()
    assert "if c:" in text and "else:" in text
    mixed = relax.If(
        c, relax.SeqExpr([], x), relax.SeqExpr([], relax.const(np.zeros(3, "float32")))
    )
    assert mixed.struct_info.shape is None and mixed.struct_info.ndim == 1


def test_if_struct_info_keeps_symbolic_dims_apart():
    # TVM gives an If the least common ancestor of its branches. (n,) and (m,) are different
    # sizes: claiming the true branch's (n,) would let later ops trust a wrong shape.
    from minitvm.relax.eval_ref import evaluate

    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    c = relax.Var("c", TensorStructInfo((), "bool"))
    x = relax.Var("x", TensorStructInfo((n,), "float32"))
    y = relax.Var("y", TensorStructInfo((m,), "float32"))
    cond = relax.If(c, relax.SeqExpr([], x), relax.SeqExpr([], y))
    assert cond.struct_info.shape is None and cond.struct_info.ndim == 1
    same = relax.If(c, relax.SeqExpr([], x), relax.SeqExpr([], op.exp(x)))
    assert structural_equal(same.struct_info.shape, (n,))
    out = relax.Var("out", cond.struct_info)
    f = relax.Function(
        [c, x, y], relax.SeqExpr([relax.BindingBlock([relax.VarBinding(out, cond)])], out)
    )
    assert f.ret_struct_info.shape is None
    ys = np.arange(5, dtype="float32")
    assert evaluate(f, np.array(False), np.ones(3, "float32"), ys).shape == (5,)
