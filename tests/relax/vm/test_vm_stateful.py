"""TVM's stateful VM calls: set_input / invoke_stateful / get_outputs, save_function and the
signature queries, checked against the plain call and numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, MiniTVMError
from minitvm.script import relax as R


@pytest.fixture(scope="module")
def vm():
    @tvm.script.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
            z = R.add(x, y)
            w = R.multiply(z, x)
            return (z, w)

    return relax.VirtualMachine(relax.build(Mod, target="llvm"), tvm.cpu())


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3)).astype("float32") for _ in range(2)]


def test_set_input_invoke_get_outputs_match_numpy(vm):
    x, y = _inputs()
    vm.set_input("main", tvm.nd.array(x), tvm.nd.array(y))
    vm.invoke_stateful("main")
    z, w = vm.get_outputs("main")
    np.testing.assert_allclose(z.numpy(), x + y, rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), (x + y) * x, rtol=1e-6)


def test_set_input_by_name_is_the_positional_call(vm):
    x, y = _inputs(1)
    vm.set_input("main", y=tvm.nd.array(y), x=tvm.nd.array(x))
    vm.invoke_stateful("main")
    got = vm.get_outputs("main")
    ref = vm["main"](x, y)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_signature_queries(vm):
    assert vm.get_function_arity("main") == 2
    assert [vm.get_function_param_name("main", i) for i in range(2)] == ["x", "y"]
    with pytest.raises(ArgumentError, match="2 parameters"):
        vm.get_function_param_name("main", 2)


def test_save_function_binds_arguments(vm):
    x, y = _inputs(2)
    vm.save_function("main", "main_saved", tvm.nd.array(x), tvm.nd.array(y))
    z, w = vm["main_saved"]()
    np.testing.assert_allclose(w.numpy(), (x + y) * x, rtol=1e-6)
    res = vm.time_evaluator("main_saved", tvm.cpu(), number=2, repeat=1)()
    assert res.mean > 0
    vm.save_function("main", "main_quiet", x, y, include_return=False)
    assert vm["main_quiet"]() is None


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda vm: vm.set_input("main", np.zeros((2, 3), "float32")), "no value for parameter"),
        (lambda vm: vm.set_input("main", 1, 2, 3), "3 positional inputs for 2"),
        (lambda vm: vm.set_input("main", 1, x=2), "given twice"),
        (lambda vm: vm.set_input("main", q=1), "no parameter named 'q'"),
        (lambda vm: vm.set_input("nope", 1), "no relax function 'nope'"),
    ],
)
def test_bad_inputs_are_named(vm, call, match):
    with pytest.raises(MiniTVMError, match=match):
        call(vm)


def test_order_of_calls_is_explained():
    @tvm.script.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            return x

    vm = relax.VirtualMachine(relax.build(Mod, target="llvm"), tvm.cpu())
    with pytest.raises(MiniTVMError, match="call vm.set_input"):
        vm.invoke_stateful("main")
    with pytest.raises(MiniTVMError, match="call vm.invoke_stateful"):
        vm.get_outputs("main")
    vm.set_input("main", np.ones(2, "float32"))
    vm.invoke_stateful("main")
    np.testing.assert_array_equal(vm.get_outputs("main").numpy(), np.ones(2, "float32"))
    vm.set_input("main", np.zeros(2, "float32"))  # new inputs: the old result is gone
    with pytest.raises(MiniTVMError, match="invoke_stateful"):
        vm.get_outputs("main")
