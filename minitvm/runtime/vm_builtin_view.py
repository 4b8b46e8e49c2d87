"""VM builtins that read or re-describe a tensor's container, not its values.

`R.memory.view` (TVM's `runtime.TVMArrayCreateView`) sees the same memory with another shape,
dtype or byte offset; every view is checked to lie inside the bytes of the tensor it views, so
no view reaches memory its argument could not. `x.ndim`, `x.shape[i]` and `x.strides[i]` on a
relax expression read the tensor's rank, dims and (element) strides when the program runs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..error import ArgumentError, DTypeError, ShapeError
from ..ir.dtype import DataType
from .ndarray import NDArray
from .registry import register_func
from .vm_builtin import _host_array, _shape

CREATE_VIEW = "runtime.TVMArrayCreateView"
TENSOR_NDIM = "vm.builtin.minitvm.tensor_ndim"
TENSOR_SHAPE_I = "vm.builtin.minitvm.tensor_shape_i"
TENSOR_STRIDE_I = "vm.builtin.minitvm.tensor_stride_i"


def create_view(tensor: Any, shape: Any, dtype: Any, relative_byte_offset: Any) -> NDArray:
    """`tensor`'s bytes from `relative_byte_offset` on, as a tensor of `shape` and `dtype`
    (None keeps the argument's shape / dtype / offset 0); refuses a view that ends past them."""
    data = _host_array(tensor, "R.memory.view: data")
    if not data.flags.c_contiguous:
        raise ArgumentError(
            f"R.memory.view: data of shape {data.shape} is not contiguous; views are taken of "
            "compact tensors only"
        )
    dims = data.shape if shape is None else _shape(shape, "R.memory.view: shape")
    np_dtype = data.dtype if dtype is None else _dtype(dtype)
    offset = 0 if relative_byte_offset is None else relative_byte_offset
    if not isinstance(offset, int | np.integer) or isinstance(offset, bool) or offset < 0:
        raise ShapeError(
            f"R.memory.view: relative_byte_offset must be a non-negative int, got {offset!r:.80}"
        )
    offset = int(offset)
    nbytes = int(np.prod(dims, dtype=np.int64)) * np_dtype.itemsize
    if offset + nbytes > data.nbytes:
        raise ShapeError(
            f"R.memory.view: a view of shape {tuple(dims)} and dtype {np_dtype} at byte offset "
            f"{offset} needs bytes [{offset}, {offset + nbytes}), but data (shape {data.shape}, "
            f"dtype {data.dtype}) has {data.nbytes}; the view must lie inside its argument"
        )
    if (data.ctypes.data + offset) % np_dtype.itemsize:  # kernels assume element alignment
        raise ShapeError(
            f"R.memory.view: byte offset {offset} puts the view's first {np_dtype} element at "
            f"an address that is not a multiple of {np_dtype.itemsize}; use an offset that keeps "
            "elements aligned"
        )
    flat = data.reshape(-1).view(np.uint8)
    return NDArray(flat[offset : offset + nbytes].view(np_dtype).reshape(dims))


def _dtype(value: Any) -> np.dtype:
    try:
        return DataType(str(value)).numpy_dtype()
    except (DTypeError, TypeError, ValueError) as err:
        raise DTypeError(
            f"R.memory.view: dtype {value!r:.40} is not a dtype minitvm can hold; use e.g. "
            "'float32', 'int8', 'uint8'"
        ) from err


def _dims(tensor: Any, what: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, strides in elements) of a tensor argument; a device array is compact."""
    if isinstance(tensor, NDArray) and tensor._data is None:
        shape = tuple(int(d) for d in tensor.shape)
        strides, step = [], 1
        for d in reversed(shape):
            strides.append(step)
            step *= d
        return shape, tuple(reversed(strides))
    data = _host_array(tensor, what)
    return data.shape, tuple(s // data.itemsize for s in data.strides)


def _axis(axis: Any, ndim: int, what: str) -> int:
    if not isinstance(axis, int | np.integer) or isinstance(axis, bool) or not 0 <= axis < ndim:
        raise ShapeError(f"{what}: axis {axis!r:.40} is not in [0, {ndim}) for a {ndim}-d tensor")
    return int(axis)


def tensor_ndim(tensor: Any) -> int:
    """The rank of `tensor` (x.ndim)."""
    return len(_dims(tensor, "x.ndim")[0])


def tensor_shape_i(tensor: Any, axis: Any) -> int:
    """Dim `axis` of `tensor` (x.shape[axis])."""
    shape = _dims(tensor, "x.shape[i]")[0]
    return shape[_axis(axis, len(shape), "x.shape[i]")]


def tensor_stride_i(tensor: Any, axis: Any) -> int:
    """The stride, in elements, of dim `axis` of `tensor` (x.strides[axis])."""
    shape, strides = _dims(tensor, "x.strides[i]")
    return strides[_axis(axis, len(shape), "x.strides[i]")]


for _name, _fn in (
    (CREATE_VIEW, create_view),
    (TENSOR_NDIM, tensor_ndim),
    (TENSOR_SHAPE_I, tensor_shape_i),
    (TENSOR_STRIDE_I, tensor_stride_i),
):
    register_func(_name, _fn, override=True)
