"""NDArrays on the OpenCL device (PoCL here): creation, host/device copies, device-to-device
copies, properties and their errors; device attributes and timing of a GPU function."""

import os
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import ShapeError

_REASON = tvm.opencl(0).unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def test_array_round_trip_and_properties():
    dev = tvm.opencl(0)
    x = np.arange(24, dtype="int64").reshape(2, 3, 4)
    a = tvm.nd.array(x, dev)
    assert isinstance(a, tvm.nd.NDArray) and a.device == dev
    assert (a.shape, a.dtype, a.ndim) == ((2, 3, 4), "int64", 3)
    np.testing.assert_array_equal(a.numpy(), x)
    np.testing.assert_array_equal(np.asarray(a), x)
    assert tvm.nd.array(x, dev, dtype="float32").dtype == "float32"


def test_copies_between_host_and_devices():
    dev = tvm.opencl(0)
    x = np.random.default_rng(0).random((5, 7), dtype="float32")
    a = tvm.nd.empty((5, 7), "float32", dev)
    a.copyfrom(x)
    b = tvm.nd.empty((5, 7), "float32", dev).copyfrom(a)  # device to device
    host = b.copyto(tvm.cpu(0))
    assert host.device == tvm.cpu(0)
    np.testing.assert_array_equal(host.numpy(), x)
    c = tvm.nd.array(np.zeros((5, 7), "float32"))
    a.copyto(c)
    np.testing.assert_array_equal(c.numpy(), x)
    d = tvm.nd.array(x).copyto(dev)
    np.testing.assert_array_equal(d.numpy(), x)
    a.copyfrom(x.astype("float64"))  # host data is converted, as for CPU arrays
    np.testing.assert_array_equal(a.numpy(), x)


def test_copy_errors_name_shapes_and_dtypes():
    dev = tvm.opencl(0)
    a = tvm.nd.empty((3,), "float32", dev)
    with pytest.raises(ShapeError, match=r"source has shape \(4,\), this array has shape \(3,\)"):
        a.copyfrom(np.zeros(4, "float32"))
    with pytest.raises(
        ShapeError, match=r"source is int32\[3\] on opencl\(0\), this array is float32\[3\]"
    ):
        a.copyfrom(tvm.nd.empty((3,), "int32", dev))


def test_empty_arrays_and_zero_sizes():
    dev = tvm.opencl(0)
    a = tvm.nd.empty((0, 3), "float32", dev)
    assert a.numpy().shape == (0, 3)


def test_device_attributes_and_sync():
    dev = tvm.opencl(0)
    assert dev.exist and dev.max_threads_per_block >= 1
    assert dev.max_shared_memory_per_block >= 16384
    assert isinstance(dev.device_name, str) and dev.device_name
    dev.sync()


def test_time_evaluator_of_a_gpu_function():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "codegen"))
    from gpu_kernels import vector_add

    from minitvm.codegen.device import build_device_module

    mod = build_device_module(vector_add(), "opencl")
    dev = tvm.opencl(0)
    a = tvm.nd.array(np.ones(256, "float32"), dev)
    c = tvm.nd.empty((256,), "float32", dev)
    result = mod.time_evaluator(mod.entry_name, dev, number=2)(a, a, c)
    assert result.mean > 0
    np.testing.assert_array_equal(c.numpy(), 2 * np.ones(256, "float32"))


def test_block_over_a_per_axis_limit_is_a_device_error(monkeypatch):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "codegen"))
    from gpu_kernels import vector_add

    from minitvm.codegen.device import build_device_module
    from minitvm.error import DeviceError
    from minitvm.runtime import opencl_api

    mod = build_device_module(vector_add(block=64), "opencl")
    real = opencl_api.attribute
    monkeypatch.setattr(
        opencl_api,
        "attribute",
        lambda d, name: (32, 32, 32) if name == "max_block_dims" else real(d, name),
    )
    a = tvm.nd.empty((100,), "float32", tvm.opencl(0))
    with pytest.raises(
        DeviceError, match=r"64 threads along threadIdx.x, more than the device's 32"
    ):
        mod(a, a, tvm.nd.empty((100,), "float32", tvm.opencl(0)))
