"""DLPack import: a producer's capsule is read without a copy (address, shape, dtype, device) and
its deleter runs once when the memory is released; a CUDA tensor becomes a CUDA DeviceNDArray
over the same memory (run where CUDA and torch-with-CUDA exist, skipped elsewhere); without
CUDA the import is a DeviceError that leaves the tensor untouched; CPU torch tensors still
round-trip. Capsule code runs in a subprocess: a wrong capsule would crash the interpreter."""

import os
import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm

_PRELUDE = r"""
import gc
import weakref
import numpy as np
from minitvm.runtime import dlpack

made, released = [], []

def live():
    # exported tensors whose owner the consumer has not released yet
    gc.collect()
    return len(made) - len(released)

class Owner:
    def __init__(self, x):
        self.x = x
        made.append(1)
        weakref.finalize(self, released.append, 1)

class Producer:
    # host memory that calls itself CUDA memory: enough to test the reading of a capsule
    def __init__(self, x, device=(2, 0)):
        self.x, self.device = x, device
    def __dlpack__(self, **kwargs):
        x = self.x
        return dlpack.make_capsule(x.ctypes.data, self.device, x.shape, x.dtype, Owner(x))
    def __dlpack_device__(self):
        return self.device
"""

_READ = (
    _PRELUDE
    + r"""
for dtype in ("float32", "int8", "uint16", "float64", "bool"):
    x = np.ones((3, 4), dtype)
    data, device, shape, got, release = dlpack.take_capsule(Producer(x).__dlpack__())
    assert data == x.ctypes.data, "no copy: the producer's address"
    assert device == (2, 0) and shape == (3, 4) and got == x.dtype, (device, shape, got)
    assert live() == 1, "a consumed capsule's death does not free the tensor"
    release()
    assert live() == 0, "release() called the producer's deleter"
cap = Producer(np.zeros(2, "float32")).__dlpack__()
dlpack.take_capsule(cap)[-1]()
try:
    dlpack.take_capsule(cap)
except Exception as err:
    assert "consumed already" in str(err), err
else:
    raise AssertionError("a used capsule was read twice")
print("ok")
"""
)

_NO_CUDA = (
    _PRELUDE
    + r"""
import minitvm as tvm
from minitvm.error import DeviceError
p = Producer(np.zeros(4, "float32"))
try:
    dlpack.cuda_array_from_dlpack(p)
except DeviceError as err:
    assert "cuda" in str(err).lower(), err
else:
    raise AssertionError("no CUDA here, yet the import succeeded")
assert live() == 0
print("ok")
"""
)


_CAPSULES = (
    _PRELUDE
    + r"""
import ctypes
import minitvm as tvm
from minitvm.error import ArgumentError, DTypeError

# a raw host capsule becomes an NDArray over the producer's memory, released when it dies
x = np.arange(6, dtype="int32").reshape(2, 3)
a = tvm.nd.from_dlpack(Producer(x, (1, 0)).__dlpack__())
assert a.device == tvm.cpu(0) and a.shape == (2, 3) and a.data_ptr == x.ctypes.data
x[1, 2] = 40
assert a.numpy()[1, 2] == 40, "no copy"
assert live() == 1
del a
assert live() == 0, "the NDArray's death released the capsule"

# a foreign device (ROCm, DLPack type 10) is refused by name; the tensor is not taken
for source in (Producer(x, (10, 0)), Producer(x, (10, 0)).__dlpack__()):
    try:
        tvm.nd.from_dlpack(source)
    except ArgumentError as err:
        assert "device type 10" in str(err), err
    else:
        raise AssertionError("a ROCm tensor was imported")
    assert not dlpack.is_capsule(source) or dlpack._capsule_is_valid(source, b"dltensor")
del source
assert live() == 0, "a refused capsule is given back when it dies"

# element types without an NDArray form (bfloat16 is code 4, float8 is float with 8 bits)
for code, bits in ((4, 16), (2, 8), (0, 128)):
    cap = Producer(x, (1, 0)).__dlpack__()
    managed = ctypes.cast(dlpack._capsule_pointer(cap, b"dltensor"),
                          ctypes.POINTER(dlpack._DLManagedTensor)).contents
    managed.dl_tensor.dtype.code, managed.dl_tensor.dtype.bits = code, bits
    try:
        tvm.nd.from_dlpack(cap)
    except DTypeError as err:
        assert f"code {code}, {bits} bits" in str(err), err
    else:
        raise AssertionError(f"dtype code {code} bits {bits} was imported")
    assert dlpack._capsule_is_valid(cap, b"dltensor"), "a refused capsule stays unused"
    del cap
assert live() == 0
print("ok")
"""
)

_TORCH_CAPSULES = r"""
import gc
import numpy as np
import torch
import minitvm as tvm
from minitvm.error import ArgumentError

t = torch.arange(12, dtype=torch.float64).reshape(3, 4)
a = tvm.nd.from_dlpack(t.__dlpack__())
assert a.data_ptr == t.data_ptr() and a.dtype == "float64"
t.add_(1)
np.testing.assert_array_equal(a.numpy(), t.numpy())
del t
gc.collect()
np.testing.assert_array_equal(a.numpy(), np.arange(12).reshape(3, 4) + 1)  # a keeps it alive
s = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
try:
    tvm.nd.from_dlpack(s.__dlpack__())
except ArgumentError as err:
    assert "strides (1, 4)" in str(err), err
else:
    raise AssertionError("a transposed tensor was imported as if compact")
b = tvm.nd.from_dlpack(torch.ones(4, 1, 3).__dlpack__())  # unit dims may have any stride
assert b.shape == (4, 1, 3) and b.numpy().sum() == 12
print("ok")
"""

_NO_CUDA_ARRAY = (
    _PRELUDE
    + r"""
import minitvm as tvm
from minitvm.error import DeviceError
for convert in (tvm.nd.from_dlpack, tvm.nd.array, lambda p: tvm.nd.from_dlpack(p.__dlpack__())):
    try:
        convert(Producer(np.zeros(4, "float32")))
    except DeviceError as err:
        assert "cuda" in str(err).lower(), err
    else:
        raise AssertionError("no CUDA here, yet a CUDA tensor was imported")
assert live() == 0
print("ok")
"""
)


def _run(code):
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_capsule_is_read_without_a_copy_and_released_once():
    _run(_READ)


@pytest.mark.skipif(tvm.cuda(0).exist, reason="CUDA is present: the import succeeds there")
def test_cuda_import_without_cuda_is_a_device_error_and_takes_nothing():
    _run(_NO_CUDA)


def test_raw_capsules_foreign_devices_and_dtypes():
    _run(_CAPSULES)


def test_torch_capsules_keep_their_tensor_and_strides_are_checked():
    pytest.importorskip("torch")
    _run(_TORCH_CAPSULES)


@pytest.mark.skipif(tvm.cuda(0).exist, reason="CUDA is present: the import succeeds there")
def test_nd_array_and_from_dlpack_of_cuda_memory_without_cuda_are_device_errors():
    _run(_NO_CUDA_ARRAY)


def test_cpu_torch_tensor_round_trips_without_a_copy():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = tvm.nd.from_dlpack(t)
    assert a.device == tvm.cpu(0)
    t[0, 0] = 7.0  # shared memory: the NDArray sees the change
    np.testing.assert_array_equal(a.numpy(), t.numpy())
    back = torch.from_dlpack(a)
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def _cuda_torch():
    torch = pytest.importorskip("torch")
    if not (tvm.cuda(0).exist and torch.cuda.is_available()):
        pytest.skip(f"needs CUDA and torch with CUDA: {tvm.cuda(0).unavailable_reason()}")
    return torch


def test_cuda_torch_tensor_imports_without_a_copy():
    from minitvm.runtime.dlpack import cuda_array_from_dlpack

    torch = _cuda_torch()
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    a = cuda_array_from_dlpack(t)
    assert a.device == tvm.cuda(0) and a.shape == (3, 4)
    assert a.data_ptr.ptr == t.data_ptr()  # the same device memory
    t.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(a.numpy(), t.cpu().numpy())
    back = torch.from_dlpack(a)
    assert back.data_ptr() == t.data_ptr()
    assert tvm.nd.from_dlpack(t).device == tvm.cuda(0)


def test_cuda_torch_tensor_copies_and_kernels_on_imported_memory():
    torch = _cuda_torch()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "codegen"))
    from gpu_kernels import vector_add

    from minitvm.codegen.device import build_device_module

    a, b = torch.rand(1000, device="cuda"), torch.rand(1000, device="cuda")
    c = torch.empty(1000, device="cuda")
    mod = build_device_module(vector_add(), "cuda")
    mod(tvm.nd.from_dlpack(a), tvm.nd.from_dlpack(b), tvm.nd.from_dlpack(c))
    tvm.cuda(0).sync()
    np.testing.assert_allclose(c.cpu().numpy(), (a + b).cpu().numpy(), rtol=1e-6)
    copy = tvm.nd.array(a, tvm.cuda(0))  # a device-to-device copy, not a view
    assert copy.data_ptr.ptr != a.data_ptr()
    host = tvm.nd.array(a)  # to the CPU
    np.testing.assert_array_equal(host.numpy(), a.cpu().numpy())
