"""NDArray: a tensor in 64-byte-aligned host memory backed by numpy, exchanged through DLPack;
DeviceNDArray: the same interface over memory of an OpenCL or CUDA device."""

from __future__ import annotations

import numpy as np

from ..error import ArgumentError, DTypeError, ShapeError
from ..ir.dtype import DataType
from .device import Device, cpu, device, device_api
from .dlpack import (
    HOST_KINDS,
    KDL_CUDA,
    array_from_capsule,
    cuda_array_from_dlpack,
    foreign_device_error,
    is_capsule,
)

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

    def _create_view(
        self, shape: tuple | list, dtype: str | None = None, relative_byte_offset: int = 0
    ) -> NDArray:
        """A row-major view of `shape` (and `dtype`, default this array's) sharing this array's
        memory from byte `relative_byte_offset` on; it must lie inside this array (TVM's
        `NDArray::CreateView`). `a._create_view([512], relative_byte_offset=2048)`."""
        np_dtype = DataType(dtype or self._dtype).dtype
        shape = tuple(int(d) for d in shape)
        start = int(relative_byte_offset)
        end = start + int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
        total = self._data.nbytes
        if start < 0 or end > total:
            raise ShapeError(
                f"_create_view: a view of shape {list(shape)} ({np_dtype}) at "
                f"relative_byte_offset {start} would occupy bytes {start} <= i_byte < {end}, "
                f"but the NDArray being viewed only contains {total} bytes"
            )
        raw = self._data.reshape(-1).view(np.uint8)[start:end]
        return NDArray(raw.view(np_dtype).reshape(shape), self.device)

    def copyfrom(self, source: NDArray | np.ndarray | list | float) -> NDArray:
        """Copy `source` (same shape) into this array; returns self.

        A numpy array or list of another dtype is converted to this array's dtype (as TVM does:
        `float32_arr.copyfrom(np.float64 array)` works); an NDArray source must match exactly.
        """
        if isinstance(source, NDArray):
            # a device array has no host data: copy it to the host first
            source = source._data if source._data is not None else source.numpy()
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
        if self._data.dtype.type.__module__ == "ml_dtypes":  # bfloat16, float8, int4
            raise DTypeError(
                f"an NDArray of dtype {self._dtype} cannot be shared through DLPack (numpy's "
                "exporter carries only bool, int, uint and float elements); use .numpy(), or "
                "cast it to float32 first"
            )
        return self._data.__dlpack__(**{k: v for k, v in kwargs.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device._dlpack_device()

    def to_dlpack(self):
        """A "dltensor" capsule over this array's memory (TVM's name for __dlpack__())."""
        return self.__dlpack__()

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
    if isinstance(source, DeviceNDArray):
        return source.numpy()
    if isinstance(source, NDArray):
        return source._data
    if isinstance(source, np.ndarray):
        return source
    if hasattr(source, "__dlpack__"):
        try:
            return np.from_dlpack(source)
        except (RuntimeError, TypeError, BufferError) as err:
            raise ArgumentError(
                f"cannot read a {type(source).__name__} through DLPack: {str(err).rstrip('.')}. "
                "Move it to the CPU (and .detach() a torch tensor) first"
            ) from err
    return np.asarray(source)


def array(
    arr,
    dev: Device | str | None = None,
    ctx: Device | str | None = None,
    dtype=None,
    device: Device | str | None = None,
) -> NDArray:
    """Copy a numpy array, list, NDArray or DLPack tensor (CPU or CUDA) into a new aligned
    NDArray (`device=` is TVM's keyword, `dev`/`ctx` the older ones).

    >>> tvm.nd.array(np.zeros((2, 3), "float32"), tvm.cpu(0)).shape
    (2, 3)
    """
    dev = _device_of(dev if device is None else device, ctx)
    if _dlpack_kind(arr) == KDL_CUDA:
        arr = from_dlpack(arr)  # a view of the device memory; copied below
    if isinstance(arr, DeviceNDArray) and arr.device == dev and dtype in (None, arr.dtype):
        return DeviceNDArray(arr.shape, arr._npdtype, dev).copyfrom(arr)  # device to device
    source = _as_numpy(arr)
    if dtype is not None:
        source = source.astype(DataType(dtype).numpy_dtype(), copy=False)
    _dtype_str(source.dtype)
    if dev.is_gpu:
        return DeviceNDArray(source.shape, source.dtype, dev).copyfrom(source)
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
    if dev.is_gpu:
        return DeviceNDArray(shape, DataType(dtype).numpy_dtype(), dev)
    return NDArray(_aligned_empty(shape, DataType(dtype).numpy_dtype()), dev)


def _dlpack_kind(tensor) -> int | None:
    """The DLPack device type a producer reports (None for objects that are not producers)."""
    if isinstance(tensor, NDArray | np.ndarray) or not hasattr(tensor, "__dlpack_device__"):
        return None
    return int(tensor.__dlpack_device__()[0])


def from_dlpack(tensor) -> NDArray:
    """Wrap a DLPack tensor or capsule without copying: host memory (numpy, torch CPU) becomes an
    NDArray on cpu(0), CUDA memory (torch CUDA) a DeviceNDArray on tvm.cuda; C-contiguous only."""
    if isinstance(tensor, NDArray):
        return tensor
    if is_capsule(tensor):
        return array_from_capsule(tensor)
    kind = _dlpack_kind(tensor)
    if kind == KDL_CUDA:
        return cuda_array_from_dlpack(tensor)
    if kind is not None and kind not in HOST_KINDS:
        raise foreign_device_error(kind, tensor.__dlpack_device__()[1], type(tensor).__name__)
    data = _as_numpy(tensor)
    if not data.flags.c_contiguous:
        raise ShapeError(
            f"from_dlpack: the {type(tensor).__name__} is not C-contiguous (strides "
            f"{data.strides}); make it contiguous first (.contiguous() / np.ascontiguousarray)"
        )
    return NDArray(data, cpu(0))


class DeviceNDArray(NDArray):
    """A C-contiguous tensor in the memory of a GPU device (`tvm.nd.array(x, tvm.opencl(0))`).

    Its contents are read with `.numpy()` (a copy to the host); it has no host pointer, so a
    function compiled for the CPU refuses it by name (and a GPU function refuses host arrays).
    """

    __slots__ = ("_api", "_handle", "_nbytes", "_npdtype", "_shape")

    def __init__(self, shape: tuple[int, ...], dtype, dev: Device) -> None:
        dev.check_available()
        self._npdtype = np.dtype(dtype)
        self._dtype = _dtype_str(self._npdtype)
        self._shape = tuple(int(d) for d in shape)
        self._nbytes = int(np.prod(self._shape, dtype=np.int64)) * self._npdtype.itemsize
        self._api = device_api(dev.name)
        self._handle = self._api.alloc(dev.device_id, self._nbytes)
        self._data = None  # no host memory: code reading _data must not treat it as a CPU array
        self._ptr = None
        self.device = dev

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def data_ptr(self):
        """The device memory handle (a CUDA device pointer or an OpenCL buffer object)."""
        return self._handle

    handle = data_ptr

    def numpy(self) -> np.ndarray:
        """A host copy of the contents (waits for the device's queued work)."""
        out = _aligned_empty(self._shape, self._npdtype)
        self._api.copy_to_host(self.device.device_id, out, self._handle)
        return out

    asnumpy = numpy

    def copyfrom(self, source) -> DeviceNDArray:
        """Copy a host array/list or an NDArray of the same shape (and dtype for NDArrays) in."""
        if isinstance(source, DeviceNDArray) and source.device == self.device:
            self._check_same(source, "copyfrom")
            self._api.copy_device(self.device.device_id, self._handle, source._handle, self._nbytes)
            return self
        if isinstance(source, NDArray):
            self._check_same(source, "copyfrom")
            source = source.numpy() if isinstance(source, DeviceNDArray) else source._data
        source = np.asarray(source)
        if source.shape != self._shape:
            raise ShapeError(
                f"copyfrom: source has shape {source.shape}, this array has shape {self._shape}"
            )
        host = np.ascontiguousarray(source, dtype=self._npdtype)
        self._api.copy_from_host(self.device.device_id, self._handle, host)
        return self

    def _check_same(self, other: NDArray, what: str) -> None:
        if other.dtype != self.dtype or other.shape != self.shape:
            raise ShapeError(
                f"{what}: source is {other.dtype}{list(other.shape)} on {other.device}, this array "
                f"is {self.dtype}{list(self.shape)} on {self.device}; shapes and dtypes must match"
            )

    def copyto(self, target: NDArray | Device) -> NDArray:
        """Copy into another NDArray (any device), or into a new array on `target`."""
        if isinstance(target, DeviceNDArray):
            return target.copyfrom(self)
        if isinstance(target, NDArray):
            self._check_same(target, "copyto")
            np.copyto(target._data, self.numpy())
            return target
        if isinstance(target, Device):
            return array(self.numpy(), dev=target)
        raise ArgumentError(f"copyto: expected an NDArray or a Device, got {type(target).__name__}")

    def __dlpack__(self, **kwargs):
        if self.device.name != "cuda":
            raise BufferError(
                f"an NDArray on {self.device} cannot be exchanged through DLPack (OpenCL memory "
                "has no DLPack form); copy it to the host with .numpy()"
            )
        from .dlpack import to_dlpack_capsule

        return to_dlpack_capsule(self)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        data = self.numpy()
        return data if dtype is None else data.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"<minitvm.nd.NDArray shape={self.shape}, {self.device}>\n{self.numpy()!r}"

    def __str__(self) -> str:
        return str(self.numpy())


__all__ = [
    "ALIGNMENT",
    "DeviceNDArray",
    "NDArray",
    "array",
    "cpu",
    "device",
    "empty",
    "from_dlpack",
]
