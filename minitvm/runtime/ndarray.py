"""NDArray: a tensor in 64-byte-aligned host memory backed by numpy, exchanged through DLPack."""

from __future__ import annotations

import numpy as np

from ..error import ArgumentError, DTypeError, ShapeError
from ..ir.dtype import DataType
from .device import Device, cpu, device

ALIGNMENT = 64  # bytes; a cache line and one AVX-512 register


class NDArray:
    """A C-contiguous tensor on a device (only `cpu(0)` exists). Build with `tvm.nd.array`.

    >>> a = tvm.nd.array(np.arange(4, dtype="float32")); a.numpy()
    array([0., 1., 2., 3.], dtype=float32)
    """

    __slots__ = ("__weakref__", "_data", "_dtype", "_ptr", "device")

    def __init__(self, data: np.ndarray, dev: Device | None = None) -> None:
        """Wrap a C-contiguous numpy array without copying (use `nd.array` to copy)."""
        if not data.flags.c_contiguous:
            raise ShapeError("NDArray needs C-contiguous storage; use np.ascontiguousarray(x)")
        self._data = data
        self._ptr = data.ctypes.data
        self._dtype = _dtype_str(data.dtype)
        self.device = dev or cpu(0)

    # --- what TVM code reads ---------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def ctx(self) -> Device:
        """2018 name of `.device`."""
        return self.device

    @property
    def data_ptr(self) -> int:
        """Address of the first element (what compiled code receives)."""
        return self._ptr

    handle = data_ptr

    def numpy(self) -> np.ndarray:
        """A numpy copy of the contents."""
        return self._data.copy()

    asnumpy = numpy

    def copyfrom(self, source: NDArray | np.ndarray | list | float) -> NDArray:
        """Copy `source` (same shape) into this array; returns self.

        A numpy array or list of another dtype is converted to this array's dtype (as TVM does:
        `float32_arr.copyfrom(np.float64 array)` works); an NDArray source must match exactly.
        """
        if isinstance(source, NDArray):
            source = source._data
            if source.dtype != self._data.dtype:
                raise DTypeError(
                    f"copyfrom: source NDArray has dtype {_dtype_str(source.dtype)}, this array "
                    f"has dtype {self.dtype}; convert with tvm.nd.array(x.numpy(), "
                    f"dtype='{self.dtype}')"
                )
        else:
            source = np.asarray(source)
        if source.shape != self.shape:
            raise ShapeError(
                f"copyfrom: source has shape {source.shape}, this array has shape {self.shape}"
            )
        np.copyto(self._data, source, casting="unsafe")
        return self

    def copyto(self, target: NDArray | Device) -> NDArray:
        """Copy into another NDArray, or into a new array on a device."""
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        if isinstance(target, Device):
            return array(self, dev=target)
        raise ArgumentError(f"copyto: expected an NDArray or a Device, got {type(target).__name__}")

    def __setitem__(self, index, value) -> None:
        if index != slice(None):
            raise ArgumentError("NDArray supports only whole assignment `a[:] = value`")
        self.copyfrom(value)

    # --- interop -----------------------------------------------------------
    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**{k: v for k, v in kwargs.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device._dlpack_device()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        data = self._data if dtype is None else self._data.astype(dtype, copy=False)
        return data.copy() if copy else data

    def __reduce__(self):
        raise TypeError("NDArray is not picklable by design; save .numpy() with np.save/np.savez")

    def __repr__(self) -> str:
        return f"<minitvm.nd.NDArray shape={self.shape}, {self.device}>\n{self._data!r}"

    def __str__(self) -> str:
        return str(self._data)


def _dtype_str(dtype: np.dtype) -> str:
    try:
        return str(DataType(str(dtype)))
    except DTypeError as err:
        raise DTypeError(
            f"NDArray cannot hold numpy dtype {dtype}; use a numeric or bool dtype"
        ) from err


def _aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Uninitialised C-contiguous storage whose first element is ALIGNMENT-byte aligned."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def _device_of(dev: Device | str | None, ctx: Device | str | None) -> Device:
    chosen = dev if dev is not None else ctx
    chosen = cpu(0) if chosen is None else device(chosen)
    chosen.check_available()
    return chosen


def _as_numpy(source) -> np.ndarray:
    if isinstance(source, NDArray):
        return source._data
    if isinstance(source, np.ndarray):
        return source
    if hasattr(source, "__dlpack__"):
        try:
            return np.from_dlpack(source)
        except (RuntimeError, TypeError, BufferError) as err:
            raise ArgumentError(
                f"cannot read a {type(source).__name__} through DLPack: {err}. "
                "Move it to the CPU (and .detach() a torch tensor) first"
            ) from err
    return np.asarray(source)


def array(
    arr, dev: Device | str | None = None, ctx: Device | str | None = None, dtype=None
) -> NDArray:
    """Copy a numpy array, list, NDArray or DLPack tensor into a new aligned NDArray.

    >>> tvm.nd.array(np.zeros((2, 3), "float32"), tvm.cpu(0)).shape
    (2, 3)
    """
    dev = _device_of(dev, ctx)
    source = _as_numpy(arr)
    if dtype is not None:
        source = source.astype(DataType(dtype).numpy_dtype(), copy=False)
    _dtype_str(source.dtype)
    out = _aligned_empty(source.shape, source.dtype)
    np.copyto(out, source)
    return NDArray(out, dev)


def empty(
    shape, dtype="float32", dev: Device | str | None = None, ctx=None, *, device=None
) -> NDArray:
    """An uninitialised aligned NDArray: `tvm.nd.empty((n, m), "float32", tvm.cpu(0))`
    (the device may also be given as `device=`, TVM's newer keyword)."""
    dev = _device_of(dev if device is None else device, ctx)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError as err:
        raise ShapeError(f"empty: shape must be ints, got {shape!r}") from err
    if any(d < 0 for d in shape):
        raise ShapeError(f"empty: shape {shape} has a negative dimension")
    return NDArray(_aligned_empty(shape, DataType(dtype).numpy_dtype()), dev)


def from_dlpack(tensor) -> NDArray:
    """Wrap a DLPack tensor (torch, numpy, ...) without copying; it must be C-contiguous on the CPU."""
    if isinstance(tensor, NDArray):
        return tensor
    data = _as_numpy(tensor)
    if not data.flags.c_contiguous:
        raise ShapeError(
            f"from_dlpack: the {type(tensor).__name__} is not C-contiguous (strides "
            f"{data.strides}); make it contiguous first (.contiguous() / np.ascontiguousarray)"
        )
    return NDArray(data, cpu(0))


__all__ = ["ALIGNMENT", "NDArray", "array", "cpu", "device", "empty", "from_dlpack"]
