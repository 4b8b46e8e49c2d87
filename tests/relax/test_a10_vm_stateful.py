"""TVM's stateful-call errors (ValueError) and `vm.time_evaluator("invoke_stateful")`."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Add:
    @R.function
    def main(x: R.Tensor((3,), "float32"), y: R.Tensor((3,), "float32")):
        return R.add(x, y)


def _vm():
    return relax.VirtualMachine(relax.build(Add, "llvm"), tvm.cpu())


def test_out_of_order_stateful_calls_raise_value_error():
    vm = _vm()
    with pytest.raises(ValueError, match="no inputs were set"):
        vm.invoke_stateful("main")
    x = np.arange(3, dtype="float32")
    vm.set_input("main", x, x)
    with pytest.raises(ValueError, match="has not run"):
        vm.get_outputs("main")
    with pytest.raises(RuntimeError):  # TVM's RPC tests catch it as a RuntimeError too
        vm.get_outputs("main")
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main").numpy(), 2 * x)


def test_time_evaluator_of_invoke_stateful_runs_the_stateful_call():
    vm = _vm()
    x = np.arange(3, dtype="float32")
    vm.set_input("main", x, 2 * x)
    result = vm.time_evaluator("invoke_stateful", tvm.cpu(), number=3, repeat=2)("main")
    assert len(result.results) == 2 and all(t > 0 for t in result.results)
    np.testing.assert_allclose(vm.get_outputs("main").numpy(), 3 * x)
