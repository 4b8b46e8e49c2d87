"""A float R.prim_value prints as TVM writes it (`R.prim_value(T.float64(0.1))`), not as a quoted
string, and parses back to the same value, bit for bit."""

import math

import pytest

import minitvm as tvm
from minitvm import relax, tir


@pytest.mark.parametrize(
    "dtype,value",
    [
        ("float64", 0.1),
        ("float32", 2.0),
        ("float32", math.inf),
        ("float16", -1e-3),
        ("float64", -0.0),
    ],
)
def test_float_prim_value_prints_as_tvm_and_round_trips(dtype, value):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    with bb.function("main", [x]):
        arg = relax.PrimValue(tir.FloatImm(dtype, value))
        out = bb.emit(relax.call_dps_packed("f", [x, arg], relax.TensorStructInfo((2,), "float32")))
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    assert f"R.prim_value(T.{dtype}(" in text and '"T.' not in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)
