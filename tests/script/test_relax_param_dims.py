"""Symbolic dims in relax function signatures follow TVM's parser: every parameter's plain dim
names are defined before any annotation is read (so a dim expression may name a dim a later
parameter introduces), and the body may use them by name. Also `R.tuple` and TVM's struct-info
proxy classes. Oracle: numpy on the values the dims stand for."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.error import ShapeError
from minitvm.relax.eval_ref import evaluate
from minitvm.script import relax as R
from minitvm.script import tir as T


def test_dim_expression_may_name_a_dim_of_a_later_parameter():
    @R.function
    def func(a: R.Tensor(["n - 2"], "float32"), b: R.Tensor(["n"], "float32")):
        return a

    n_a = func.params[0].struct_info.shape[0]
    n_b = func.params[1].struct_info.shape[0]
    assert minitvm.ir.structural_equal(n_a, n_b - 2)  # one n, shared by both parameters
    x = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(evaluate(func, x, np.zeros(5, "float32")), x)


def test_body_may_use_a_parameter_dim_by_name():
    @R.function
    def func(a: R.Tensor(["m"], "float32")):
        b = R.reshape(a, R.shape([1, m]))  # noqa: F821  (m is the parameter's dim)
        return b

    out = evaluate(func, np.arange(4, dtype="float32"))
    np.testing.assert_array_equal(out, np.arange(4, dtype="float32").reshape(1, 4))
    dim = func.params[0].struct_info.shape[0]
    assert func.ret_struct_info.shape[1] is dim


def test_r_tuple_builds_a_relax_tuple():
    empty = R.tuple()
    assert isinstance(empty, relax.Tuple) and len(empty.fields) == 0

    @R.function
    def func(a: R.Tensor((2,), "float32")):
        return R.tuple(a, a)

    x = np.array([1.0, 2.0], "float32")
    out = evaluate(func, x)
    assert len(out) == 2 and all(np.array_equal(np.asarray(o), x) for o in out)


def test_struct_info_proxy_classes_mean_the_bare_annotations():
    entry = minitvm.script.parser.relax.entry
    assert entry.TensorProxy() == R.Tensor(None) or minitvm.ir.structural_equal(
        entry.TensorProxy(), relax.TensorStructInfo(None, None)
    )
    assert minitvm.ir.structural_equal(entry.ShapeProxy(), relax.ShapeStructInfo(ndim=-1))
    assert isinstance(entry.ObjectProxy(), relax.ObjectStructInfo)

    @R.function
    def func(a: R.Object):
        b = R.match_cast(a, entry.TensorProxy)
        return b

    assert isinstance(func.body.blocks[0].bindings[0].struct_info, relax.TensorStructInfo)
    assert T is not None


def test_dim_expression_over_a_later_dim_is_still_checked():
    @R.function
    def func(a: R.Tensor(["n - 2"], "float32"), b: R.Tensor(["n"], "float32")):
        return a

    with pytest.raises(ShapeError, match="expected 3"):
        evaluate(func, np.zeros(4, "float32"), np.zeros(5, "float32"))
