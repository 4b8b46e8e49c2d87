"""relax.ExecBuilder (TVM's hand-written VM programs): results against numpy, and the VM's
program verifier applied to what it builds."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, BuildError, TVMError
from minitvm.relax.vm.verify import ProgramError


@tvm.register_func("a10.test.add", override=True)
def _add(a, b):
    return tvm.nd.array(a.numpy() + b.numpy())


@tvm.register_func("a10.test.mul", override=True)
def _mul(a, b):
    return tvm.nd.array(a.numpy() * b.numpy())


@tvm.register_func("a10.test.add_scalar", override=True)
def _add_scalar(a, b):
    return a + b


@tvm.register_func("a10.test.device_id", override=True)
def _device_id(dev):
    return dev.device_id


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return tvm.nd.array(rng.random(4)), tvm.nd.array(rng.random(4))


def test_call_packed_function_and_return():
    ib = relax.ExecBuilder()
    with ib.function("func0", num_inputs=2):
        ib.emit_call("a10.test.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("func1", num_inputs=2):
        ib.emit_call("a10.test.mul", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    vm = relax.VirtualMachine(ib.get(), tvm.cpu())
    a, b = _inputs()
    np.testing.assert_allclose(vm["func0"](a, b).numpy(), a.numpy() + b.numpy())
    np.testing.assert_allclose(vm["func1"](a, b).numpy(), a.numpy() * b.numpy())


def test_immediates_and_non_tensor_arguments():
    ib = relax.ExecBuilder()
    with ib.function("neg", num_inputs=1):
        ib.emit_call("a10.test.add_scalar", args=[ib.imm(-3), ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    with ib.function("dev", num_inputs=1):
        ib.emit_call("a10.test.device_id", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    vm = relax.VirtualMachine(ib.get(), tvm.cpu())
    assert vm["neg"](1) == -2
    assert vm["neg"](-3) == -6
    assert vm["dev"](tvm.cpu(3)) == 3


def test_registers_are_numbered_by_first_use():
    texts = []
    for first, second in ((100, 50), (2, 3)):
        ib = relax.ExecBuilder()
        with ib.function("f", num_inputs=2):
            ib.emit_call("a10.test.add", args=[ib.r(0), ib.r(1)], dst=ib.r(first))
            ib.emit_call("a10.test.mul", args=[ib.r(1), ib.r(first)], dst=ib.r(second))
            ib.emit_ret(ib.r(second))
        texts.append(ib.get().as_text())
    assert texts[0] == texts[1]


def test_goto_and_if_follow_tvm_offsets():
    ib = relax.ExecBuilder()
    with ib.function("main", num_inputs=3):
        ib.emit_if(ib.r(0), 3)  # false: 3 ahead, to the mul
        ib.emit_call("a10.test.add", args=[ib.r(1), ib.r(2)], dst=ib.r(3))
        ib.emit_goto(2)
        ib.emit_call("a10.test.mul", args=[ib.r(1), ib.r(2)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    vm = relax.VirtualMachine(ib.get(), tvm.cpu())
    a, b = _inputs(1)
    np.testing.assert_allclose(vm["main"](0, a, b).numpy(), a.numpy() * b.numpy())
    np.testing.assert_allclose(vm["main"](1, a, b).numpy(), a.numpy() + b.numpy())


def test_return_in_each_branch():
    ib = relax.ExecBuilder()
    with ib.function("main", num_inputs=3):
        ib.emit_if(ib.r(0), 3)
        ib.emit_call("a10.test.add", args=[ib.r(1), ib.r(2)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
        ib.emit_call("a10.test.mul", args=[ib.r(1), ib.r(2)], dst=ib.r(4))
        ib.emit_ret(ib.r(4))
    vm = relax.VirtualMachine(ib.get(), tvm.cpu())
    a, b = _inputs(2)
    np.testing.assert_allclose(vm["main"](1, a, b).numpy(), a.numpy() + b.numpy())
    np.testing.assert_allclose(vm["main"](0, a, b).numpy(), a.numpy() * b.numpy())


def test_constants_are_cached_and_loaded():
    ib = relax.ExecBuilder()
    data = np.arange(6, dtype="float32").reshape(2, 3)
    with ib.function("main", num_inputs=0):
        c0 = ib.convert_constant(tvm.nd.array(data))
        assert c0 == ib.convert_constant(data.copy())
        assert ib.convert_constant("s") == ib.convert_constant("s")
        assert ib.convert_constant((1, 2)) != ib.convert_constant((1, 3))
        ib.emit_call("vm.builtin.shape_of", args=[tvm.nd.array(data)], dst=ib.r(0))
        ib.emit_call("a10.test.add", args=[c0, c0], dst=ib.r(1))
        ib.emit_call("a10.test.add_scalar", args=[(1, 2), (3,)], dst=ib.r(2))
        ib.emit_call("a10.test.add", args=[ib.r(1), ib.r(1)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    ex = ib.get()
    assert len(ex.constants) == 1
    out = relax.VirtualMachine(ex, tvm.cpu())["main"]()
    np.testing.assert_allclose(out.numpy(), 4 * data)


def test_calls_between_vm_functions():
    ib = relax.ExecBuilder()
    ib.declare_function("double", relax.vm.VMFuncKind.VM_FUNC)
    with ib.function("main", num_inputs=1):
        ib.emit_call("double", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    with ib.function("double", num_inputs=1):
        ib.emit_call("a10.test.add", args=[ib.r(0), ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    a, _ = _inputs(3)
    out = relax.VirtualMachine(ib.get(), tvm.cpu())["main"](a)
    np.testing.assert_allclose(out.numpy(), 2 * a.numpy())


def test_read_before_write_is_refused_by_the_verifier():
    ib = relax.ExecBuilder()
    with ib.function("func0", num_inputs=2):
        ib.emit_call("a10.test.add", args=[ib.r(0), ib.r(2)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with pytest.raises(ProgramError, match="reads register"):
        ib.get()
    assert issubclass(ProgramError, TVMError)


def test_backward_jump_and_recursion_are_refused():
    ib = relax.ExecBuilder()
    with ib.function("loop", num_inputs=1):
        ib.emit_call("a10.test.add", args=[ib.r(0), ib.r(0)], dst=ib.r(1))
        ib.emit_goto(-1)
        ib.emit_ret(ib.r(1))
    with pytest.raises(ProgramError, match="jumps back"):
        ib.get()
    ib = relax.ExecBuilder()
    with ib.function("f", num_inputs=1):
        ib.emit_call("f", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    with pytest.raises(ProgramError, match="cycle"):
        ib.get()


def test_malformed_programs_are_refused_clearly():
    ib = relax.ExecBuilder()
    with ib.function("out", num_inputs=1):
        ib.emit_goto(5)
        ib.emit_ret(ib.r(0))
    with pytest.raises(BuildError, match="jumps to 5, outside"):
        ib.get()
    ib = relax.ExecBuilder()
    with ib.function("noret", num_inputs=1):
        ib.emit_call("a10.test.add", args=[ib.r(0), ib.r(0)], dst=ib.r(1))
    with pytest.raises(BuildError, match="never returns"):
        ib.get()
    ib = relax.ExecBuilder()
    with ib.function("clo", num_inputs=1):
        ib.emit_call("vm.builtin.make_closure", args=[ib.f("clo"), ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    with pytest.raises(BuildError, match="no closures"):
        ib.get()
    with pytest.raises(ArgumentError, match="outside"):
        ib.emit_ret(ib.r(0))
    with pytest.raises(ArgumentError, match="cannot make a constant"):
        ib.convert_constant(object())


def test_built_executable_exports_and_loads(tmp_path):
    ib = relax.ExecBuilder()
    with ib.function("f", num_inputs=1):
        ib.emit_call("a10.test.add", args=[ib.r(0), ib.convert_constant(np.ones(3))], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    path = str(tmp_path / "hand.so")
    ib.get().export_library(path)
    vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    np.testing.assert_allclose(vm["f"](tvm.nd.array(np.arange(3.0))).numpy(), np.arange(3.0) + 1)
