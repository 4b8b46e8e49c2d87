"""Devices: `tvm.cpu(0)` holds memory and runs code; GPU devices exist only to say they are absent."""

from __future__ import annotations

from ..error import RuntimeError_

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


class Device:
    """A (device_type, device_id) pair, as in DLPack; `cpu(0)` is the only one that exists here."""

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
    def exist(self) -> bool:
        return self.name in _AVAILABLE and self.device_id == 0

    def check_available(self) -> None:
        """Raise a clear error unless memory can be allocated and code run on this device."""
        if self.name not in _AVAILABLE:
            raise RuntimeError_(
                f"device {self} is not available: GPU devices are not supported in this build; "
                "use tvm.cpu(0)"
            )
        if self.device_id != 0:
            raise RuntimeError_(f"device {self} does not exist: the host is cpu(0)")

    def sync(self) -> None:
        """Wait for queued work; CPU calls are synchronous, so this returns at once."""
        self.check_available()

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


def cpu(dev_id: int = 0) -> Device:
    """The host CPU: `tvm.cpu(0)`."""
    return Device(_DEVICE_TYPES["cpu"], dev_id)


def cuda(dev_id: int = 0) -> Device:
    """A CUDA device handle; `.exist` is False in this build."""
    return Device(_DEVICE_TYPES["cuda"], dev_id)


def opencl(dev_id: int = 0) -> Device:
    return Device(_DEVICE_TYPES["opencl"], dev_id)


def vulkan(dev_id: int = 0) -> Device:
    return Device(_DEVICE_TYPES["vulkan"], dev_id)


def metal(dev_id: int = 0) -> Device:
    return Device(_DEVICE_TYPES["metal"], dev_id)


def rocm(dev_id: int = 0) -> Device:
    return Device(_DEVICE_TYPES["rocm"], dev_id)


gpu = cuda  # 2018 name
context = device  # 2018 name
cl = opencl
