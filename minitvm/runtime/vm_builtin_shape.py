"""VM builtins behind `R.tensor_to_shape`, `R.shape_to_tensor` and a reshape to a shape known
only at run time. The VM holds a shape as a tuple of ints; the values come from a tensor the
model computed, so each is checked here before anything is allocated from it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..error import DTypeError, ShapeError
from .ndarray import NDArray
from .registry import register_func
from .vm_builtin import _host_array

TENSOR_TO_SHAPE = "vm.builtin.tensor_to_shape"
SHAPE_TO_TENSOR = "vm.builtin.shape_to_tensor"
RESHAPE = "vm.builtin.minitvm.checked_reshape"
FULL = "vm.builtin.minitvm.full"
BROADCAST_TO = "vm.builtin.minitvm.broadcast_to"


def tensor_to_shape(data: Any) -> tuple[int, ...]:
    """The values of a 1-d int tensor as a shape; every value must be a dim (>= 0)."""
    arr = _host_array(data, "R.tensor_to_shape: data")
    if arr.dtype.kind not in "iu":
        raise DTypeError(
            f"R.tensor_to_shape: data has dtype {arr.dtype}; a shape needs an integer tensor"
        )
    if arr.ndim != 1:
        raise ShapeError(f"R.tensor_to_shape: data has shape {arr.shape}; it must be 1-d")
    dims = tuple(int(v) for v in arr)
    if any(d < 0 for d in dims):
        raise ShapeError(
            f"R.tensor_to_shape: data holds {list(dims)}; a shape's dims must be >= 0 (resolve "
            "-1 or other placeholders before making a shape)"
        )
    return dims


def shape_to_tensor(shape: Any) -> NDArray:
    """A shape as a fresh 1-d int64 tensor."""
    if not isinstance(shape, tuple | list):
        raise ShapeError(
            f"R.shape_to_tensor: expected a shape (a tuple of ints), got {shape!r:.80}"
        )
    return NDArray(np.asarray([int(d) for d in shape], dtype="int64").reshape(-1))


def checked_reshape(tensor: Any, shape: Any) -> NDArray:
    """`tensor` with `shape` (memory shared); refuses a shape of another element count."""
    data = _host_array(tensor, "R.reshape: x")
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise ShapeError(f"R.reshape: the new shape {dims} has a negative dim")
    count = int(np.prod(dims, dtype=np.int64))
    if count != data.size:
        raise ShapeError(
            f"R.reshape: cannot reshape x of shape {data.shape} ({data.size} elements) into "
            f"{dims} ({count} elements); the element count must stay the same"
        )
    return NDArray(data.reshape(dims))


def full(shape: Any, fill: Any) -> NDArray:
    """A fresh tensor of `shape` filled with the 0-d tensor `fill` (of its dtype)."""
    value = _host_array(fill, "R.full: fill_value")
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise ShapeError(f"R.full: the shape {dims} has a negative dim")
    return NDArray(np.full(dims, value.reshape(()), dtype=value.dtype))


def broadcast_to(tensor: Any, shape: Any) -> NDArray:
    """A fresh copy of `tensor` broadcast (numpy rules) to `shape`, checked first."""
    data = _host_array(tensor, "R.broadcast_to: x")
    dims = tuple(int(d) for d in shape)
    lead = len(dims) - data.ndim
    if lead < 0 or any(d < 0 for d in dims):
        raise ShapeError(f"R.broadcast_to: cannot broadcast x of shape {data.shape} to {dims}")
    for i, n in enumerate(data.shape):
        if n != 1 and n != dims[lead + i]:
            raise ShapeError(
                f"R.broadcast_to: cannot broadcast x of shape {data.shape} to {dims}: dim "
                f"{lead + i} is {dims[lead + i]}, x has {n} there (only 1 broadcasts)"
            )
    return NDArray(np.array(np.broadcast_to(data, dims), order="C"))


for _name, _fn in (
    (TENSOR_TO_SHAPE, tensor_to_shape),
    (SHAPE_TO_TENSOR, shape_to_tensor),
    (RESHAPE, checked_reshape),
    (FULL, full),
    (BROADCAST_TO, broadcast_to),
):
    register_func(_name, _fn, override=True)


DYNAMIC_STRIDED_SLICE = "vm.builtin.minitvm.dynamic_strided_slice"


def dynamic_strided_slice(tensor: Any, begin: Any, end: Any, strides: Any) -> NDArray:
    """A fresh copy of `tensor[begin[i]:end[i]:strides[i], ...]` over every axis, with Python's
    slice rules (a negative index counts from the end; out-of-range bounds clamp), which are
    also ONNX Slice's and TVM's dynamic_strided_slice's."""
    data = _host_array(tensor, "R.dynamic_strided_slice: x")
    named = {"begin": begin, "end": end, "strides": strides}
    parts = {}
    for name, value in named.items():
        arr = _host_array(value, f"R.dynamic_strided_slice: {name}")
        if arr.dtype.kind not in "iu" or arr.shape != (data.ndim,):
            raise ShapeError(
                f"R.dynamic_strided_slice: {name} has shape {arr.shape} and dtype {arr.dtype}; "
                f"it must be a 1-d int tensor of length {data.ndim} (one value per axis of x)"
            )
        parts[name] = [int(v) for v in arr]
    if 0 in parts["strides"]:
        raise ShapeError(
            f"R.dynamic_strided_slice: strides {parts['strides']} contain 0; every stride "
            "must be nonzero"
        )
    index = tuple(
        slice(b, e, s) for b, e, s in zip(parts["begin"], parts["end"], parts["strides"])
    )
    return NDArray(np.array(data[index], order="C"))


register_func(DYNAMIC_STRIDED_SLICE, dynamic_strided_slice, override=True)
