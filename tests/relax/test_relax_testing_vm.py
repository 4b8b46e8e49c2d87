"""relax.testing.vm / runtime_builtin: the helpers TVM's VM tests import (numbers: numpy)."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.relax.testing import runtime_builtin
from minitvm.relax.testing import vm as testing_vm


def test_registered_test_functions_compute_what_their_names_say():
    a = tvm.nd.array(np.array([1.0, 2.0], "float32"))
    b = tvm.nd.array(np.array([3.0, 0.5], "float32"))
    add = tvm.get_global_func("test.vm.add")
    np.testing.assert_allclose(add(a, b).numpy(), [4.0, 2.5])
    np.testing.assert_allclose(tvm.get_global_func("test.vm.mul")(a, b).numpy(), [3.0, 1.0])
    assert bool(tvm.get_global_func("test.vm.equal_zero")(tvm.nd.array(np.zeros(3))).numpy())
    assert testing_vm.add is not None
    assert int(runtime_builtin.MatchShapeCode.STORE_TO_HEAP) == 1
    assert int(runtime_builtin.MakeShapeCode.LOAD_SHAPE) == 1


def test_check_saved_func_agrees_with_a_direct_call():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, x)))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a = tvm.nd.array(np.array([1.0, 2.0, 3.0], "float32"))
    out = testing_vm.check_saved_func(vm, "main", a)
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])
