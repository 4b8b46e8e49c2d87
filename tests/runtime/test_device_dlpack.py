"""The ctypes DLPack capsule used for CUDA arrays, exercised on host memory (where numpy and
torch can consume it), in a subprocess: a wrong capsule would crash the interpreter."""

import subprocess
import sys

_CODE = r"""
import gc
import weakref
import numpy as np
from minitvm.runtime import dlpack

owners = weakref.WeakSet()

class Owner:
    def __init__(self, x):
        self.x = x
        owners.add(self)

class Holder:
    def __init__(self, x, device=(1, 0)):
        self.x, self.device = x, device
    def __dlpack__(self, **kwargs):
        x = self.x
        return dlpack.make_capsule(x.ctypes.data, self.device, x.shape, x.dtype, Owner(x))
    def __dlpack_device__(self):
        return self.device

def live():
    gc.collect()
    return len(owners)

for dtype in ("float32", "int64", "uint8", "float64"):
    x = np.arange(12).reshape(3, 4).astype(dtype)
    y = np.from_dlpack(Holder(x))
    assert y.dtype == x.dtype and y.shape == (3, 4) and (y == x).all(), dtype
    assert y.ctypes.data == x.ctypes.data  # zero-copy
    del y
assert live() == 0                                # consumers called the deleter
cap = Holder(np.zeros(3, "float32")).__dlpack__()
assert live() == 1
del cap
assert live() == 0                                # an unconsumed capsule frees itself
# a consumer that refuses a capsule (numpy, CUDA memory) destroys it with its error set: the
# error must come through (a ctypes destructor lost it and numpy raised a SystemError)
try:
    np.from_dlpack(Holder(np.zeros(3, "float32"), (2, 0)))
except SystemError as err:
    raise AssertionError(f"the consumer's error was lost: {err}")
except (RuntimeError, BufferError, ValueError) as err:
    assert "device" in str(err).lower(), err
else:
    raise AssertionError("numpy read CUDA memory")
assert live() == 0
for dtype in ("bool", "float16", "int8"):
    x = np.zeros((2, 0, 3), dtype)  # empty tensors and every element type export
    assert np.from_dlpack(Holder(x)).shape == (2, 0, 3)
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    x = np.arange(6, dtype="float32")
    t = torch.from_dlpack(Holder(x))
    assert t.tolist() == x.tolist()
print("ok")
"""


def test_dlpack_capsule_is_consumed_by_numpy_and_torch_and_freed():
    out = subprocess.run(
        [sys.executable, "-c", _CODE], check=False, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_opencl_arrays_refuse_dlpack_with_a_reason():
    import numpy as np
    import pytest

    import minitvm as tvm

    if not tvm.opencl(0).exist:
        pytest.skip(f"no OpenCL device: {tvm.opencl(0).unavailable_reason()}")
    a = tvm.nd.array(np.zeros(3, "float32"), tvm.opencl(0))
    with pytest.raises(BufferError, match="OpenCL memory has no DLPack form"):
        a.__dlpack__()
