import pytest

from minitvm.error import RuntimeError_
from minitvm.runtime import Device, context, cpu, cuda, device, gpu


def test_cpu_device_fields_and_names():
    dev = cpu(0)
    assert (dev.device_type, dev.device_id) == (Device.kDLCPU, 0)
    assert repr(dev) == "cpu(0)" and dev.exist
    assert device("cpu", 0) == device("llvm") == context("cpu") == device(1) == dev
    assert hash(device("cpu")) == hash(dev)
    dev.sync()


def test_gpu_devices_exist_as_handles_only():
    assert gpu(0) == cuda(0) and repr(cuda(0)) == "cuda(0)"
    assert not cuda(0).exist and not device("gpu").exist
    with pytest.raises(RuntimeError_, match="GPU devices are not supported in this build"):
        cuda(0).sync()


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
