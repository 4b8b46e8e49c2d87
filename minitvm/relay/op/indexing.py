"""Relay's gather, arange and sparse_reshape (one row each, onto relax/op/indexing.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ArgumentError
from ...relax.op import indexing as rindex
from ..expr import Constant, Expr
from ._registry import call, register

register(
    "gather",
    lambda emit, args, attrs: rindex.gather_elements(args[0], args[1], attrs.axis),
)
register(
    "arange",
    lambda emit, args, attrs: rindex.arange(attrs.start, attrs.stop, attrs.step, attrs.dtype),
)
register("sparse_reshape", lambda emit, args, attrs: rindex.sparse_reshape(*args), 2)


def gather(data: Expr, axis: int, indices: Expr) -> Expr:
    """out[i][j][k] = data[i][indices[i][j][k]][k] (axis 1): numpy's take_along_axis; indices
    has data's rank, negative ones count from the end, one outside the axis is an error."""
    return call("gather", (data, indices), {"axis": int(axis)})


def _number(value: Any, name: str) -> int | float:
    """A constant bound of arange: a Python number or a scalar relay.const."""
    if isinstance(value, Constant):
        arr = value.data.numpy()
        if arr.ndim == 0:
            return arr.item()
    elif isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        return value.item() if hasattr(value, "item") else value
    raise ArgumentError(
        f"relay.arange: {name} must be a number or a scalar relay.const, got {value!r}; the "
        "output length must be known when the program is built"
    )


def arange(start: Any, stop: Any = None, step: Any = None, dtype: str = "float32") -> Expr:
    """Evenly spaced values in [start, stop): `relay.arange(relay.const(1.0), relay.const(9.0),
    relay.const(2.0))`; with only `start`, the range is [0, start)."""
    if stop is None:
        start, stop = 0, start
    bounds = {
        "start": _number(start, "start"),
        "stop": _number(stop, "stop"),
        "step": 1 if step is None else _number(step, "step"),
    }
    if bounds["step"] == 0:
        raise ArgumentError("relay.arange: step must not be 0")
    return call("arange", (), {**bounds, "dtype": str(dtype)})


def sparse_reshape(sparse_indices: Expr, prev_shape: Expr, new_shape: Expr) -> Any:
    """TensorFlow's sparse_reshape of COO indices: `(new_indices, new_shape)`, where one -1 in
    new_shape takes what is left: `relay.sparse_reshape(idx, prev, new)[0]`."""
    return call("sparse_reshape", (sparse_indices, prev_shape, new_shape))


__all__ = ["arange", "gather", "sparse_reshape"]
