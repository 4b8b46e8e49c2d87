import pytest

from minitvm.error import DeviceError, RuntimeError_
from minitvm.runtime import Device, context, cpu, cuda, device, gpu, vulkan


def test_cpu_device_fields_and_names():
    dev = cpu(0)
    assert (dev.device_type, dev.device_id) == (Device.kDLCPU, 0)
    assert repr(dev) == "cpu(0)" and dev.exist
    assert device("cpu", 0) == device("llvm") == context("cpu") == device(1) == dev
    assert hash(device("cpu")) == hash(dev)
    dev.sync()


def test_gpu_device_handles_and_names():
    assert gpu(0) == cuda(0) and repr(cuda(0)) == "cuda(0)"
    assert device("gpu").exist == cuda(0).exist


def test_absent_cuda_is_a_device_error_saying_why():
    if cuda(0).exist:
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(DeviceError, match="CUDA is not available: libcuda"):
        cuda(0).sync()
    with pytest.raises(DeviceError, match="libcuda"):
        _ = cuda(0).max_threads_per_block


def test_devices_without_a_runtime_say_so():
    assert not vulkan(0).exist
    with pytest.raises(RuntimeError_, match="vulkan has no runtime in minitvm"):
        vulkan(0).sync()


def test_other_cpu_ids_do_not_exist():
    assert not cpu(1).exist
    with pytest.raises(RuntimeError_, match=r"device cpu\(1\) does not exist"):
        cpu(1).check_available()


def test_unknown_device_names_are_errors():
    with pytest.raises(RuntimeError_, match="unknown device 'tpu'"):
        device("tpu")
    with pytest.raises(RuntimeError_, match="unknown device type code 99"):
        Device(99, 0)
    with pytest.raises(RuntimeError_, match="expected a name like 'cpu'"):
        device(1.5)


def test_loading_device_apis_keeps_the_device_functions():
    import minitvm.runtime as rt

    for name in ("opencl", "cuda"):
        assert rt.device(name).exist in (True, False)  # imports its device API module
    assert callable(rt.cuda) and callable(rt.opencl)
    assert rt.cuda(0) == Device(2, 0) and rt.opencl(1).device_id == 1
