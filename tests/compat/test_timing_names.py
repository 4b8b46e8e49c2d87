"""The MLC book's timing spellings: `rt_lib.mod.time_evaluator` on what `tvm.compile` returns
for TIR, `ex.mod` of a relax Executable, and `vm.module.time_evaluator`."""

import numpy as np

import minitvm as tvm
from minitvm import relax, te


def _add_module():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    return tvm.IRModule({"main": te.create_prim_func([A, B])})


def test_compiled_tir_module_times_through_mod():
    lib = tvm.compile(_add_module(), target="llvm")
    a = tvm.nd.array(np.arange(16, dtype="float32"))
    b = tvm.nd.empty((16,))
    result = lib.mod.time_evaluator("main", tvm.cpu(), number=3)(a, b)
    assert result.mean > 0
    np.testing.assert_array_equal(b.numpy(), np.arange(16, dtype="float32") + 1)


def test_relax_executable_mod_and_vm_module_time_their_functions():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((16,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(bb.emit_te(lambda t: te.compute((16,), lambda i: t[i] * 2.0), x))
        bb.emit_func_output(y)
    ex = relax.build(bb.get(), "llvm")
    assert ex.mod is not None and ex.mod.time_evaluator is not None
    vm = relax.VirtualMachine(ex, tvm.cpu())
    data = tvm.nd.array(np.arange(16, dtype="float32"))
    assert vm.module is vm
    assert vm.module.time_evaluator("main", tvm.cpu(), number=2)(data).mean > 0
    np.testing.assert_array_equal(vm["main"](data).numpy(), np.arange(16, dtype="float32") * 2)
