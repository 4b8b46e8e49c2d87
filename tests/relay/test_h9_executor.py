"""relay.create_executor("vm") on a non-CPU device takes host (numpy) inputs, as TVM's does."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.build_module import _to_device


def test_vm_executor_copies_numpy_inputs_to_its_device():
    dev = tvm.opencl(0)
    x = relay.var("x", shape=(2, 3))
    func = relay.Function([x], relay.multiply(x, relay.const(2.0)))
    data = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    out = relay.create_executor("vm", device=dev, target="opencl").evaluate(func)(data)
    np.testing.assert_allclose(out.numpy(), data * 2, rtol=1e-6)


def test_to_device_moves_host_arrays_only():
    dev = tvm.opencl(0)
    data = np.ones((2,), "float32")
    moved = _to_device(data, dev)
    assert moved.device == dev
    assert _to_device(moved, dev) is moved
    assert _to_device(3, dev) == 3
    assert _to_device(data, tvm.cpu(0)) is data


def test_executors_take_python_numbers_for_scalar_params():
    xs = [relay.var(f"x{i}", "float32") for i in range(2)]
    func = relay.Function(xs, relay.multiply(xs[0], xs[1]))
    for kind in ("graph", "vm"):
        out = relay.create_executor(kind, device=tvm.cpu(0), target="llvm").evaluate(func)(1.5, 3)
        assert out.numpy().dtype == np.float32 and out.numpy() == np.float32(4.5)


def test_annotations_are_identities():
    x = relay.var("x", shape=(3,))
    y = relay.annotation.stop_fusion(relay.annotation.checkpoint(relay.add(x, x)))
    y = relay.annotation.on_device(y, "cpu")
    func = relay.Function([x], y)
    data = np.arange(3, dtype="float32")
    out = relay.create_executor("graph", target="llvm").evaluate(func)(data)
    np.testing.assert_array_equal(out.numpy(), data * 2)


def test_on_device_attrs():
    x = relay.var("x")
    call = relay.annotation.on_device(x, "cuda")
    vd = call.attrs.virtual_device
    assert (vd.device_type_int, vd.virtual_device_id, vd.target, vd.memory_scope) == (
        2,
        0,
        None,
        "",
    )
    assert call.attrs.constrain_body and not call.attrs.constrain_result
    free = relay.annotation.on_device(x, "cuda", constrain_result=False, constrain_body=False)
    assert free.attrs.virtual_device.device_type_int == -1
    with pytest.raises(ValueError, match="bogus"):
        relay.annotation.on_device(x, "bogus")
