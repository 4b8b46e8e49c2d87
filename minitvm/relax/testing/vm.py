"""TVM's `relax.testing.vm`: packed functions TVM's VM tests call by name, and check_saved_func."""

import numpy as np

from ...runtime import ndarray as _nd
from ...runtime.registry import register_func


def _register(name):
    return register_func(name, override=True)


@_register("test.vm.move")
def move(src):
    return src


@_register("test.vm.add")
def add(a, b):
    return _nd.array(a.numpy() + b.numpy())


@_register("test.vm.mul")
def mul(a, b):
    return _nd.array(a.numpy() * b.numpy())


@_register("test.vm.equal_zero")
def equal_zero(a):
    return _nd.array(np.array(np.all(a.numpy() == 0)))


@_register("test.vm.subtract_one")
def subtract_one(a):
    return _nd.array(a.numpy() - 1)


@_register("test.vm.identity")
def identity_packed(a, b):
    b.copyfrom(a.numpy())


@_register("test.vm.tile")
def tile_packed(a, b):
    b.copyfrom(np.tile(a.numpy(), (1, 2)))


@_register("test.vm.add_scalar")
def add_scalar(a, b):
    return a + b


@_register("test.vm.get_device_id")
def get_device_id(device):
    return device.device_id


@_register("test.vm.check_if_defined")
def check_if_defined(obj):
    return obj is not None


def check_saved_func(vm, func_name, *inputs):
    """Call `func_name` directly and through `vm.save_function`; the two results must agree."""
    saved_name = f"{func_name}_saved"
    vm.save_function(func_name, saved_name, *inputs)
    res1 = vm[func_name](*inputs)
    res2 = vm[saved_name]()
    np.testing.assert_allclose(res1.numpy(), res2.numpy(), rtol=1e-7, atol=1e-7)
    return res1
