"""The CUDA driver API layer (runtime/cuda_api.py) against a fake libcuda written in Python: the
ctypes calls, argument packing (device pointers, int32 sizes), copies and launch sizes of a
whole GPU function run here without a GPU. The fake runs the vector-add kernel itself from
the packed parameters, so wrong packing gives wrong numbers. Real GPUs: tests/codegen/test_nvptx.py."""

import ctypes
import os
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import DeviceError
from minitvm.runtime import cuda_api

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "codegen"))
from gpu_kernels import vector_add


def _out(ref, value) -> None:
    """Write through a ctypes byref() argument."""
    target = ref._obj
    target.value = value


class FakeDriver:
    """Just enough of libcuda: one device, memory in bytearrays, vadd_kernel run in numpy."""

    def __init__(self) -> None:
        self.memory: dict[int, ctypes.Array] = {}
        self.launches: list = []
        self.next_ptr = 1 << 20

    def cuInit(self, flags):
        return 0

    def cuGetErrorString(self, rc, out):
        _out(out, b"CUDA_ERROR_FAKE")
        return 0

    def cuDeviceGetCount(self, n):
        _out(n, 1)
        return 0

    def cuDeviceGet(self, dev, ordinal):
        _out(dev, ordinal)
        return 0

    def cuDevicePrimaryCtxRetain(self, ctx, dev):
        _out(ctx, 0xC0)
        return 0

    def cuCtxSetCurrent(self, ctx):
        return 0

    def cuCtxSynchronize(self):
        return 0

    def cuDeviceGetAttribute(self, value, attribute, dev):
        _out(value, {1: 1024, 8: 49152, 10: 32, 2: 1024, 3: 1024, 4: 64, 75: 9, 76: 0}[attribute])
        return 0

    def cuDeviceGetName(self, buf, size, dev):
        buf.value = b"Fake H100"
        return 0

    def cuMemAlloc_v2(self, ptr, nbytes):
        address = self.next_ptr
        self.next_ptr += nbytes.value + 256
        self.memory[address] = (ctypes.c_char * nbytes.value)()
        _out(ptr, address)
        return 0

    def cuMemFree_v2(self, ptr):
        self.memory.pop(ptr.value, None)
        return 0

    def cuMemcpyHtoD_v2(self, dst, src, n):
        ctypes.memmove(self.memory[dst.value], src.value, n.value)
        return 0

    def cuMemcpyDtoH_v2(self, dst, src, n):
        ctypes.memmove(dst.value, self.memory[src.value], n.value)
        return 0

    def cuMemcpyDtoD_v2(self, dst, src, n):
        ctypes.memmove(self.memory[dst.value], self.memory[src.value], n.value)
        return 0

    def cuModuleLoadDataEx(self, module, image, n, options, values):
        assert b".entry vadd_kernel" in image.value
        _out(module, 0x11)
        return 0

    def cuModuleGetFunction(self, fn, module, name):
        _out(fn, 0x22)
        return 0

    def cuModuleUnload(self, module):
        return 0

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        grid, block = (gx.value, gy.value, gz.value), (bx.value, by.value, bz.value)
        self.launches.append((grid, block))
        a, b, c = (ctypes.c_uint64.from_address(params[k]).value for k in range(3))
        n = ctypes.c_int32.from_address(params[3]).value
        view = {p: np.frombuffer(self.memory[p], dtype="float32") for p in (a, b, c)}
        assert grid[0] * block[0] >= n
        view[c][:n] = view[a][:n] + view[b][:n]
        return 0


@pytest.fixture
def fake_cuda(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(cuda_api, "_driver", lambda: fake)
    monkeypatch.setattr(cuda_api, "_contexts", {})
    cuda_api.attribute.cache_clear()
    yield fake
    cuda_api.attribute.cache_clear()


def test_a_gpu_function_runs_through_the_driver_api(fake_cuda):
    from minitvm.codegen.device import build_device_module

    dev = tvm.cuda(0)
    assert dev.exist and dev.device_name == "Fake H100" and dev.compute_version == "9.0"
    assert (dev.max_threads_per_block, dev.max_shared_memory_per_block, dev.warp_size) == (
        1024,
        49152,
        32,
    )
    mod = build_device_module(vector_add(), "cuda -arch=sm_90")
    n = 1000
    a, b = np.arange(n, dtype="float32"), np.ones(n, "float32")
    A, B, C = tvm.nd.array(a, dev), tvm.nd.array(b, dev), tvm.nd.empty((n,), "float32", dev)
    mod(A, B, C)
    dev.sync()
    np.testing.assert_array_equal(C.numpy(), a + b)
    assert fake_cuda.launches == [((16, 1, 1), (64, 1, 1))]
    D = tvm.nd.empty((n,), "float32", dev).copyfrom(C)  # device to device
    np.testing.assert_array_equal(D.numpy(), a + b)


def test_driver_errors_name_the_call(fake_cuda, monkeypatch):
    monkeypatch.setattr(fake_cuda, "cuMemAlloc_v2", lambda ptr, n: 2)
    with pytest.raises(DeviceError, match="CUDA driver call cuMemAlloc_v2 failed: CUDA_ERROR_FAKE"):
        tvm.nd.empty((4,), "float32", tvm.cuda(0))


def test_cuda_dlpack_capsule_names_the_device(fake_cuda):
    x = tvm.nd.array(np.zeros((2, 3), "float32"), tvm.cuda(0))
    assert x.__dlpack_device__() == (2, 0)
    capsule = x.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"


class FakeTorchCuda:
    """A producer of CUDA memory (as torch is) over a fake allocation; counts its owners alive."""

    def __init__(self, values: np.ndarray, device=(2, 0), claimed=(2, 0)) -> None:
        from minitvm.runtime import dlpack

        self.ptr = cuda_api.DevicePointer(0, values.nbytes)  # memory of the fake driver
        cuda_api.copy_from_host(0, self.ptr, values)
        self.values, self.device, self.claimed = values, device, claimed
        self.streams, self.exported = [], []
        self._make = dlpack.make_capsule

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        owner = _Owner()
        self.exported.append(__import__("weakref").ref(owner))
        return self._make(self.ptr.ptr, self.device, self.values.shape, self.values.dtype, owner)

    def __dlpack_device__(self):
        return self.claimed

    def live(self) -> int:
        __import__("gc").collect()
        return sum(ref() is not None for ref in self.exported)


class _Owner:
    pass


def test_cuda_dlpack_import_shares_memory_and_releases_it(fake_cuda):
    from minitvm.codegen.device import build_device_module

    n = 1000
    a = FakeTorchCuda(np.arange(n, dtype="float32"))
    b = FakeTorchCuda(np.ones(n, "float32"))
    c = FakeTorchCuda(np.zeros(n, "float32"))
    A, B, C = (tvm.nd.from_dlpack(t) for t in (a, b, c))
    assert isinstance(A, tvm.nd.DeviceNDArray) and A.device == tvm.cuda(0) and A.shape == (n,)
    assert A.data_ptr.ptr == a.ptr.ptr, "no copy: the producer's device memory"
    assert a.streams == [1], "the producer orders its work before the legacy default stream"
    from minitvm.runtime.dlpack import take_capsule

    data, device, shape, dtype, release = take_capsule(A.__dlpack__())  # exported back
    assert (data, device, shape, dtype) == (a.ptr.ptr, (2, 0), (n,), np.dtype("float32"))
    release()
    build_device_module(vector_add(), "cuda")(A, B, C)
    out = np.empty(n, "float32")
    cuda_api.copy_to_host(0, out, c.ptr)  # the kernel wrote into the producer's memory
    np.testing.assert_array_equal(out, np.arange(n) + 1)
    assert a.live() == 1
    del A
    assert a.live() == 0, "the imported array's death gave the memory back"
    copy = tvm.nd.array(c, tvm.cuda(0))  # a copy on the device, not a view
    assert copy.data_ptr.ptr != c.ptr.ptr and c.live() == 1
    np.testing.assert_array_equal(copy.numpy(), np.arange(n) + 1)
    np.testing.assert_array_equal(tvm.nd.array(b).numpy(), np.ones(n))  # to the host
    del B, C
    assert c.live() == 0 and b.live() == 0


def test_cuda_dlpack_import_checks_what_the_capsule_says(fake_cuda):
    from minitvm.error import ArgumentError

    wrong = FakeTorchCuda(np.zeros(4, "float32"), device=(2, 1))
    with pytest.raises(ArgumentError, match=r"said it is on cuda\(0\) but its capsule is on"):
        tvm.nd.from_dlpack(wrong)
    assert wrong.live() == 0, "the refused tensor was given back"
    absent = FakeTorchCuda(np.zeros(4, "float32"), claimed=(2, 3))
    with pytest.raises(DeviceError, match=r"cuda\(3\) does not exist"):
        tvm.nd.from_dlpack(absent)
    assert absent.streams == [], "an unusable device is refused before the tensor is taken"


def test_a_host_array_copies_from_a_device_array(fake_cuda):
    # GraphModule.get_output(i, out) on a GPU: out (host) copyfrom the device output
    a = np.arange(6, dtype="float32").reshape(2, 3)
    host = tvm.nd.empty((2, 3), "float32")
    host.copyfrom(tvm.nd.array(a, tvm.cuda(0)))  # was: 'NoneType' has no attribute 'dtype'
    np.testing.assert_array_equal(host.numpy(), a)
    with pytest.raises(tvm.error.DTypeError, match="source NDArray has dtype float64"):
        host.copyfrom(tvm.nd.array(a.astype("float64"), tvm.cuda(0)))
