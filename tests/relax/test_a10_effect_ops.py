"""R.print and R.assert_op (TVM's effect ops): what they print or raise when the VM runs them,
print/parse round trips, and the VM's return-annotation check."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError
from minitvm.relax.op.effects_a10 import RelaxAssertionError
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Printing:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), "int32")) -> R.Tensor((2,), "int32"):
        R.print(x, format="x = {}")  # an expression statement: bound to "_"
        t = (x, x)
        _p = R.print(x, t)
        _q = R.print(R.prim_value(7), format="n={}")
        return x


@I.ir_module
class Asserting:
    @R.function(pure=False)
    def main(flag: R.Tensor((), "bool"), x: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
        _a = R.assert_op(flag, [x, x])
        _b = R.assert_op(flag, x, format="Number: {}")
        return x


def _vm(mod):
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def test_print_writes_formatted_values(capsys):
    data = np.array([3, 4], "int32")
    out = _vm(Printing)["main"](data)
    np.testing.assert_array_equal(out.numpy(), data)
    assert capsys.readouterr().out == f"x = {data}\n{data} ({data}, {data})\nn=7\n"


def test_effect_ops_print_and_parse_back():
    for mod in (Printing, Asserting):
        text = mod.script()
        assert "R.print(" in text or "R.assert_op(" in text
        tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


def test_assert_op_passes_and_fails_with_tvm_messages():
    vm = _vm(Asserting)
    five = np.array(5, "int32")
    np.testing.assert_array_equal(vm["main"](np.array(True), five).numpy(), five)
    with pytest.raises(AssertionError, match="^5, 5$"):
        vm["main"](np.array(False), five)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((), "int32"))
    with bb.function("main", [x], pure=False):
        bb.emit(relax.op.assert_op(relax.const(False)))
        bb.emit_func_output(x)
    with pytest.raises(RelaxAssertionError, match="Assertion Failed"):
        _vm(bb.get())["main"](five)


def test_assert_op_refuses_a_non_bool_condition():
    bb = relax.BlockBuilder()
    c = relax.Var("c", relax.TensorStructInfo((2,), "bool"))
    with bb.function("main", [c], pure=False):
        bb.emit(relax.op.assert_op(c))
        bb.emit_func_output(c)
    with pytest.raises(ArgumentError, match="must be one bool"):
        _vm(bb.get())["main"](np.array([True, True]))


def test_bad_op_arguments_are_refused():
    with pytest.raises(ArgumentError, match="format must be a str"):
        relax.op.print(relax.const(1), format=3)
    with pytest.raises(ArgumentError, match="value 0 is a int"):
        relax.op.print(3)


@I.ir_module
class ReturnCheck:
    @R.function
    def main(x: R.Tensor(["n", "m"], "int32"), y: R.Object) -> R.Tensor(["m", "n"], dtype=None):
        return y


def test_return_annotation_is_checked_at_run_time():
    vm = _vm(ReturnCheck)
    x = np.zeros((1, 2), "int32")
    good = np.arange(2, dtype="float32").reshape(2, 1)
    np.testing.assert_array_equal(vm["main"](x, good).numpy(), good)
    with pytest.raises(ValueError, match="return value"):
        vm["main"](x, np.zeros((1, 2), "float32"))
    with pytest.raises(ValueError, match="return value"):
        vm["main"](x, np.zeros((2, 1, 1), "float32"))
