"""relax.analysis.computable_at_compile_time follows TVM's rule: parameters after `num_input`
and the bindings that read only them (and the symbolic sizes they define) are compile-time."""

import pytest

import minitvm as tvm
from minitvm.script import relax as R
from minitvm.script import tir as T


def _names(func):
    return [v.name_hint for v in tvm.relax.analysis.computable_at_compile_time(func)]


def test_without_num_input_nothing_is_compile_time():
    @R.function
    def f(x: R.Tensor((4,), "float32"), w: R.Tensor((4,), "float32")):
        y = R.add(x, w)
        return y

    assert _names(f) == []


def test_weights_and_values_built_only_from_them():
    @R.function
    def f(x: R.Tensor((4,), "float32"), w: R.Tensor((4,), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            w2 = R.multiply(w, w)
            y = R.add(x, w2)
            w3 = R.add(w2, w)
            z = R.add(y, w3)
            R.output(z)
        return z

    assert _names(f) == ["w", "w2", "w3"]


def test_a_size_known_only_from_a_runtime_input_is_not_compile_time():
    @R.function
    def f(x: R.Tensor(("n",), "float32"), w: R.Tensor(ndim=1, dtype="float32")):
        R.func_attr({"num_input": 1})
        n = T.int64()
        m = T.int64()
        w2 = R.match_cast(w, R.Tensor((m,), "float32"))  # noqa: F841 - defines m
        a = R.zeros(R.shape([m]), "float32")
        b = R.zeros(R.shape([n]), "float32")
        return (a, b)

    assert _names(f) == ["w", "w2", "a"]


def test_not_a_function_is_refused():
    with pytest.raises(tvm.error.MiniTVMError, match="expected a relax.Function"):
        tvm.relax.analysis.computable_at_compile_time(tvm.IRModule())
