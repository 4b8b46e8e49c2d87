"""Devices: `tvm.cpu(0)` runs compiled host code; `tvm.opencl(k)` and `tvm.cuda(k)` run GPU
kernels through their device APIs (runtime/opencl_api.py, cuda_api.py), loaded on first use."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from ..error import DeviceError, RuntimeError_

# DLPack device-type codes, and which of them this build can run
_DEVICE_TYPES = {"cpu": 1, "cuda": 2, "opencl": 4, "vulkan": 7, "metal": 8, "rocm": 10}
_NAMES = {code: name for name, code in _DEVICE_TYPES.items()}
_ALIASES = {
    "llvm": "cpu",
    "c": "cpu",
    "stackvm": "cpu",
    "gpu": "cuda",
    "cl": "opencl",
    "mtl": "metal",
}
_AVAILABLE = frozenset({"cpu"})
# device kinds with a device API: name -> module of runtime/ that implements it (not named
# like the kinds: importing runtime/cuda.py would replace the function runtime.cuda)
_GPU_APIS = {"opencl": "opencl_api", "cuda": "cuda_api"}


def device_api(name: str):
    """The runtime module implementing device kind `name` (runtime/opencl_api.py, cuda_api.py)."""
    return importlib.import_module(f".{_GPU_APIS[name]}", __package__)


# --- shared by the device API modules -----------------------------------------------------
_state_lock = threading.Lock()


def missing_device(name: str, label: str, device_id: int, count: Callable[[], int]) -> str | None:
    """Why `name(device_id)` cannot be used: the API's error, or no such device (`count()`
    devices of kind `label` here); None when it can."""
    try:
        n = count()
    except DeviceError as err:
        return str(err)
    if not 0 <= device_id < n:
        return f"{name}({device_id}) does not exist: this machine has {n} {label} device(s)"
    return None


def device_state(
    states: dict, device_id: int, reason: Callable[[int], str | None], make: Callable[[int], Any]
) -> Any:
    """`states[device_id]`, made by `make(device_id)` once per process (thread-safe), after
    `reason(device_id)` has said the device can be used (a DeviceError with it otherwise)."""
    why = reason(device_id)
    if why is not None:
        raise DeviceError(why)
    with _state_lock:
        if device_id not in states:
            states[device_id] = make(device_id)
        return states[device_id]


class Device:
    """A (device_type, device_id) pair, as in DLPack: `tvm.cpu(0)`, `tvm.opencl(0)`, `tvm.cuda(0)`."""

    __slots__ = ("device_id", "device_type")

    kDLCPU = 1
    kDLCUDA = 2

    def __init__(self, device_type: int, device_id: int = 0) -> None:
        if device_type not in _NAMES:
            raise RuntimeError_(f"unknown device type code {device_type}; known: {_DEVICE_TYPES}")
        self.device_type = device_type
        self.device_id = int(device_id)

    @property
    def name(self) -> str:
        return _NAMES[self.device_type]

    @property
    def is_gpu(self) -> bool:
        """Whether the device runs through a GPU device API (OpenCL or CUDA)."""
        return self.name in _GPU_APIS

    def unavailable_reason(self) -> str | None:
        """Why memory cannot be allocated or code run on this device; None when it can."""
        if self.name in _GPU_APIS:
            return device_api(self.name).unavailable_reason(self.device_id)
        if self.name not in _AVAILABLE:
            return (
                f"device {self} is not available: {self.name} has no runtime in minitvm; "
                "use tvm.cpu(0), tvm.opencl(0) or tvm.cuda(0)"
            )
        if self.device_id != 0:
            return f"device {self} does not exist: the host is cpu(0)"
        return None

    @property
    def exist(self) -> bool:
        return self.unavailable_reason() is None

    def check_available(self) -> None:
        """Raise a clear error unless memory can be allocated and code run on this device."""
        reason = self.unavailable_reason()
        if reason is None:
            return
        raise (DeviceError if self.is_gpu else RuntimeError_)(reason)

    def _attribute(self, name: str, cpu_value=None):
        self.check_available()
        if not self.is_gpu:
            return cpu_value
        return device_api(self.name).attribute(self.device_id, name)

    @property
    def max_threads_per_block(self) -> int:
        return self._attribute("max_threads_per_block", 1)

    @property
    def max_shared_memory_per_block(self) -> int:
        return self._attribute("max_shared_memory_per_block", 0)

    @property
    def warp_size(self) -> int:
        return self._attribute("warp_size", 1)

    @property
    def device_name(self) -> str:
        return self._attribute("device_name", "cpu")

    @property
    def compute_version(self) -> str:
        return self._attribute("compute_version", "")

    def sync(self) -> None:
        """Wait until queued work on the device is done (CPU calls are synchronous)."""
        self.check_available()
        if self.is_gpu:
            device_api(self.name).sync(self.device_id)

    def _dlpack_device(self) -> tuple[int, int]:
        return (self.device_type, self.device_id)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Device)
            and other.device_type == self.device_type
            and other.device_id == self.device_id
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.name}({self.device_id})"


def device(dev_type: str | int | Device, dev_id: int = 0) -> Device:
    """A device from a name ("cpu", "llvm", "cuda", ...) or a DLPack code: `tvm.device("cpu", 0)`."""
    if isinstance(dev_type, Device):
        return dev_type
    if isinstance(dev_type, int):
        return Device(dev_type, dev_id)
    if not isinstance(dev_type, str):
        raise RuntimeError_(f"device: expected a name like 'cpu' or a code, got {dev_type!r}")
    kind = dev_type.split()[0] if dev_type.strip() else dev_type
    kind = _ALIASES.get(kind, kind)
    if kind not in _DEVICE_TYPES:
        raise RuntimeError_(
            f"unknown device '{dev_type}'; known: {', '.join([*_DEVICE_TYPES, *_ALIASES])}"
        )
    return Device(_DEVICE_TYPES[kind], dev_id)


def _device_of_kind(kind: str, doc: str) -> Callable[[int], Device]:
    """TVM's per-kind constructor `tvm.<kind>(dev_id=0)`."""

    def make(dev_id: int = 0) -> Device:
        return Device(_DEVICE_TYPES[kind], dev_id)

    make.__name__ = make.__qualname__ = kind
    make.__doc__ = doc
    return make


cpu = _device_of_kind("cpu", "The host CPU: `tvm.cpu(0)`.")
cuda = _device_of_kind(
    "cuda", "The k-th CUDA device (driver API through libcuda); `.exist` says whether it is here."
)
opencl = _device_of_kind(
    "opencl", "The k-th OpenCL device of all platforms (PoCL's CPU device on CPU machines)."
)
vulkan = _device_of_kind("vulkan", "A Vulkan device (no device API here: `.exist` is False).")
metal = _device_of_kind("metal", "A Metal device (no device API here: `.exist` is False).")
rocm = _device_of_kind("rocm", "A ROCm device (no device API here: `.exist` is False).")


gpu = cuda  # 2018 name
context = device  # 2018 name
cl = opencl


# a target kind -> the device kind whose presence enables it ("cpu": always there)
_TARGET_DEVICES = {
    "llvm": "cpu",
    "c": "cpu",
    "stackvm": "cpu",
    "cuda": "cuda",
    "nvptx": "cuda",
    "gpu": "cuda",
    "opencl": "opencl",
    "cl": "opencl",
}


def enabled(target: Any) -> bool:
    """TVM's `tvm.runtime.enabled`: whether code for `target` ("llvm", "cuda", "opencl", or a
    Target) can run here: always for CPU targets, for a GPU one when its device exists."""
    kind = str(getattr(target, "kind", target)).split()[0] if target else ""
    dev_kind = _TARGET_DEVICES.get(kind)
    if dev_kind is None:
        return False
    return dev_kind == "cpu" or device(dev_kind).exist
