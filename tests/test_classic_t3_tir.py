"""TIR node rules from TVM v0.19's documented behaviour (its tir-base tests and the checks of
src/tir/ir/expr.cc / stmt.cc): builtins as tir.<name> calls, lets without implicit casts,
typed constructors."""

from __future__ import annotations

import pytest

from minitvm import tir
from minitvm.error import ArgumentError, DTypeError


def test_builtins_are_tir_functions_with_the_table_dtype():
    h = tir.Var("h", "handle")
    get = tir.tvm_struct_get(h, 1, 2, dtype="int32")
    assert get.op.name == "tir.tvm_struct_get" and get.dtype == "int32"
    assume = tir.assume(cond=tir.Var("c", "bool"))  # TVM's keyword name
    assert assume.op.name == "tir.assume" and assume.dtype == "bool"
    vec = tir.Var("v", "int8x16")
    assert tir.vectorlow("int8x8", vec).dtype == "int8x8"
    with pytest.raises(DTypeError, match="T.tvm_struct_get needs its result dtype"):
        tir.tvm_struct_get(h, 1, 2)
    # reinterpret keeps its own size check (op.py's definition is not replaced)
    with pytest.raises(DTypeError, match="the sizes differ"):
        tir.reinterpret("float64", tir.Var("x", "int32"))


@pytest.mark.parametrize(
    "store,value", [("int32", "int64"), ("float16", "float32"), ("uint8", "int8")]
)
def test_let_refuses_a_value_of_another_dtype(store, value):
    var, val = tir.Var("store", store), tir.Var("value", value)
    with pytest.raises(DTypeError, match=f"variable 'store' is {store} but its value"):
        tir.Let(var, val, var)
    with pytest.raises(DTypeError, match="LetStmt: variable 'store'"):
        tir.LetStmt(var, val, tir.Evaluate(0))


def test_let_of_same_dtype_and_python_literals_still_build():
    x = tir.Var("x", "int64")
    assert tir.Let(x, 5, x + 1).value.dtype == "int64"  # a literal takes the variable's dtype
    assert tir.LetStmt(x, tir.Var("y", "int64"), tir.Evaluate(0)).var is x


def test_constructors_check_their_kinds():
    with pytest.raises(ArgumentError, match="the name must be a str"):
        tir.Var(name=1, dtype="int32")
    with pytest.raises(DTypeError, match="FloatImm: dtype int32 is not a float type"):
        tir.FloatImm("int32", 1.0)
    assert tir.FloatImm("bfloat16", 1.5).dtype == "bfloat16"


def test_ret_returns_its_value_from_the_built_function():
    # TVM's tir.ret(value) returns a value from a PrimFunc: the built function gives it back
    import minitvm as tvm

    ret = tir.ret(tir.const(5, "int32"))
    assert ret.op.name == "tir.ret" and ret.dtype == "int32"
    func = tir.PrimFunc([], tir.Evaluate(ret)).with_attr("global_symbol", "main")
    assert tvm.build(tvm.IRModule({"main": func}))["main"]() == 5
