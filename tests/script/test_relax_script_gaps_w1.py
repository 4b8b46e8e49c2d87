"""TVMScript relax gaps that TVM's own tests trip on: return-type narrowing, binding a
non-leaf `return`, R names TVM has (R.TupleGetItem, R.ShapeExpr, R.Object(), bare R.Tuple,
R.linear), and int64 PrimValues."""

from __future__ import annotations

import numpy as np

from minitvm import relax, tir
from minitvm.ir import assert_structural_equal
from minitvm.relax.eval_ref import evaluate
from minitvm.script import relax as R


def _rng_inputs(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype("float32") for s in shapes]


def test_parsed_function_narrows_declared_return_to_body():
    @R.function
    def f(x: R.Tensor((2, 3), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        y = R.exp(x)
        return y

    assert_structural_equal(f.ret_struct_info, R.Tensor((2, 3), "float32"))
    (x,) = _rng_inputs((2, 3))
    np.testing.assert_allclose(evaluate(f, x), np.exp(x), rtol=1e-6, atol=1e-6)


def test_narrowed_return_erases_dims_the_params_do_not_define():
    @R.function
    def f(x: R.Tensor(dtype="float32")) -> R.Tensor(ndim=1, dtype="float32"):
        y = R.match_cast(x, R.Tensor(("k",), "float32"))
        z = R.exp(y)
        return z

    # `k` is bound inside the body: the signature may not name it (TVM erases it too)
    assert_structural_equal(f.ret_struct_info, R.Tensor(ndim=1, dtype="float32"))


def test_narrowing_keeps_object_return_more_specific_body():
    @R.function
    def f(x: R.Tensor(("n", 4), "float32")) -> R.Object:
        y = R.add(x, x)
        return y

    assert isinstance(f.ret_struct_info, relax.TensorStructInfo)
    assert f.ret_struct_info.shape is not None


def test_plain_function_constructor_does_not_narrow():
    x = relax.Var("x", R.Tensor((2, 3), "float32"))
    body = relax.SeqExpr((), x)
    func = relax.Function((x,), body, R.Tensor(ndim=2, dtype="float32"))
    assert_structural_equal(func.ret_struct_info, R.Tensor(ndim=2, dtype="float32"))


def test_non_leaf_return_is_bound_to_a_fresh_var():
    @R.function
    def f(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        return R.add(R.exp(x), y)

    assert isinstance(f.body.body, relax.Var)
    values = [b.value for block in f.body.blocks for b in block.bindings]
    assert [v.op.name for v in values] == ["relax.exp", "relax.add"]
    x, y = _rng_inputs((2, 3), (2, 3))
    np.testing.assert_allclose(evaluate(f, x, y), np.exp(x) + y, rtol=1e-6, atol=1e-6)


def test_returned_tuple_fields_are_bound_but_tuple_stays():
    @R.function
    def f(x: R.Tensor((3,), "float32")):
        return (x, R.multiply(x, x))

    assert isinstance(f.body.body, relax.Tuple)
    assert all(isinstance(e, relax.Var) for e in f.body.body.fields)
    (x,) = _rng_inputs((3,))
    out = evaluate(f, x)
    np.testing.assert_allclose(out[1], x * x, rtol=1e-6, atol=1e-6)


def test_tuple_get_item_and_shape_expr_names():
    @R.function
    def f(x: R.Tensor((2, 3), "float32")):
        t = (x, R.negative(x))
        b = R.TupleGetItem(t, 1)
        s = R.ShapeExpr([3, 2])
        c = R.reshape(b, s)
        return c

    (x,) = _rng_inputs((2, 3))
    np.testing.assert_allclose(evaluate(f, x), (-x).reshape(3, 2), rtol=0, atol=0)
    assert R.TupleGetItem is relax.TupleGetItem and R.ShapeExpr is relax.ShapeExpr


def test_object_is_callable_and_bare_tuple_is_empty_tuple():
    assert_structural_equal(R.Object(), relax.ObjectStructInfo())
    assert_structural_equal(R.as_struct_info(R.Object), relax.ObjectStructInfo())
    assert_structural_equal(R.as_struct_info(R.Tuple), relax.TupleStructInfo(()))
    v = relax.Var("v", R.Object())
    assert isinstance(v.struct_info, relax.ObjectStructInfo)

    @R.function(pure=False)
    def f(x: R.Tensor((2,), "float32"), o: R.Object) -> R.Tuple:
        _: R.Tuple = R.call_packed("side_effect", x, sinfo_args=(R.Tuple,))
        return R.tuple()

    assert isinstance(f.params[1].struct_info, relax.ObjectStructInfo)
    assert_structural_equal(f.ret_struct_info, relax.TupleStructInfo(()))


def test_r_linear_matches_numpy():
    @R.function
    def f(
        x: R.Tensor((2, 4), "float32"), w: R.Tensor((3, 4), "float32"), b: R.Tensor((3,), "float32")
    ):
        y = R.linear(x, w, b)
        return y

    x, w, b = _rng_inputs((2, 4), (3, 4), (3,))
    np.testing.assert_allclose(evaluate(f, x, w, b), x @ w.T + b, rtol=1e-5, atol=1e-5)


def test_prim_value_of_python_int_is_int64():
    assert relax.PrimValue(3).value.dtype == "int64"
    assert R.prim_value(0).value.dtype == "int64"
    assert relax.PrimValue(True).value.dtype == "bool"  # R.assert_op's condition stays bool
    assert relax.PrimValue(tir.IntImm("int32", 1)).value.dtype == "int32"
