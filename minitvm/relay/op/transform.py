"""Relay's broadcasting, selection, sorting and layout ops (one table row each, onto relax)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import OpNotImplemented, ShapeError
from ...relax import op as rop
from ...relax.expr import const as rconst
from ...topi.layout import layout_index_map
from ..expr import Constant, Expr
from ._registry import call, register
from .tensor import _axes, static_shape


def _ints(values: Any) -> tuple[int, ...]:
    """Ints from an int, a sequence or a relay constant (TVM takes a shape tensor there too)."""
    if isinstance(values, Constant):
        values = values.data.numpy().tolist()
    elif isinstance(values, Expr):
        raise OpNotImplemented(
            f"a shape computed at run time ({type(values).__name__}) is not supported; "
            "give the values as ints or a relay.const"
        )
    return (int(values),) if isinstance(values, int | np.integer) else tuple(int(v) for v in values)


def _shape_of(emit, args, attrs):
    # Relay gives the shape as a 1-D tensor; with a static shape that is a constant
    shape = static_shape(args[0], "shape_of")
    return rconst(np.array(shape, dtype=attrs.dtype))


def _one_hot(emit, args, attrs):
    indices, on, off = args
    one_hot = rop.one_hot(indices, 1, 0, attrs.depth, attrs.axis)
    mask = emit(rop.astype(emit(one_hot), "bool"))
    dtype = attrs.dtype
    return rop.where(mask, emit(rop.astype(on, dtype)), emit(rop.astype(off, dtype)))


def _topk(emit, args, attrs):
    largest = not attrs.is_ascend
    return rop.topk(args[0], attrs.k, attrs.axis, attrs.ret_type, largest, attrs.dtype)


def _topk_outputs(attrs: Any) -> int:
    return 2 if attrs.ret_type == "both" else 1


def _arg_reduce(fn: Any):
    # relay gives int32 indices; several axes index their flattened (row-major) product
    def to_relax(emit, args, attrs):
        if attrs.select_last_index:
            raise ShapeError("argmax/argmin: select_last_index=True is not built")
        x = args[0]
        ndim = x.struct_info.ndim
        axes = _axes(attrs, ndim)
        axes = tuple(range(ndim)) if axes is None else axes
        if len(axes) == 1 or len(axes) == ndim:
            one = None if len(axes) == ndim and ndim != 1 else axes[0]
            return rop.astype(emit(fn(x, one, attrs.keepdims)), "int32")
        shape = list(x.struct_info.shape)  # PrimExprs: symbolic dims reshape too
        kept = [a for a in range(ndim) if a not in axes]
        moved = emit(rop.permute_dims(x, kept + list(axes)))
        flat = emit(rop.reshape(moved, [shape[a] for a in kept] + [-1]))
        out = emit(rop.astype(emit(fn(flat, -1, False)), "int32"))
        if not attrs.keepdims:
            return out
        return rop.reshape(out, [1 if a in axes else d for a, d in enumerate(shape)])

    return to_relax


def _layout_transform(emit, args, attrs):
    index_map = layout_index_map(attrs.src_layout, attrs.dst_layout)
    return rop.layout_transform(args[0], index_map)


_ROWS = {
    "broadcast_to": lambda emit, args, attrs: rop.broadcast_to(args[0], attrs.shape),
    "broadcast_to_like": lambda emit, args, attrs: rop.broadcast_to(
        args[0], static_shape(args[1], "broadcast_to_like", "like")
    ),
    "reshape_like": lambda emit, args, attrs: rop.reshape(
        args[0], static_shape(args[1], "reshape_like", "shape_like")
    ),
    "cast_like": lambda emit, args, attrs: rop.astype(args[0], str(args[1].struct_info.dtype)),
    "full_like": lambda emit, args, attrs: rop.full_like(args[0], args[1]),
    "where": lambda emit, args, attrs: rop.where(*args),
    "tile": lambda emit, args, attrs: rop.tile(args[0], attrs.reps),
    "repeat": lambda emit, args, attrs: rop.repeat(args[0], attrs.repeats, attrs.axis),
    "reverse": lambda emit, args, attrs: rop.flip(args[0], attrs.axis),
    "shape_of": _shape_of,
    "one_hot": _one_hot,
    "argmax": _arg_reduce(rop.argmax),
    "argmin": _arg_reduce(rop.argmin),
    "argsort": lambda emit, args, attrs: rop.argsort(
        args[0], attrs.axis, not attrs.is_ascend, attrs.dtype
    ),
    "sort": lambda emit, args, attrs: rop.sort(args[0], attrs.axis, not attrs.is_ascend),
    "collapse_sum_like": lambda emit, args, attrs: rop.collapse_sum_like(*args),
    "collapse_sum_to": lambda emit, args, attrs: rop.collapse_sum_to(args[0], attrs.shape),
    "layout_transform": _layout_transform,
}
for _name, _to_relax in _ROWS.items():
    register(_name, _to_relax)
register("topk", _topk, _topk_outputs)


def broadcast_to(data: Expr, shape: Any) -> Expr:
    """Numpy broadcasting of `data` to `shape`: `relay.broadcast_to(x, (4, 3))`."""
    return call("broadcast_to", (data,), {"shape": _ints(shape)})


def broadcast_to_like(data: Expr, broadcast_type: Expr) -> Expr:
    """Broadcast `data` to the (static) shape of `broadcast_type`."""
    return call("broadcast_to_like", (data, broadcast_type))


def reshape_like(data: Expr, shape_like: Expr) -> Expr:
    """Reshape `data` to the (static) shape of `shape_like` (whole shapes only)."""
    return call("reshape_like", (data, shape_like))


def cast_like(data: Expr, dtype_like: Expr) -> Expr:
    """Convert `data` to the dtype of `dtype_like`."""
    return call("cast_like", (data, dtype_like))


def full_like(data: Expr, fill_value: Expr) -> Expr:
    """data's shape and dtype, every element the scalar `fill_value`."""
    return call("full_like", (data, fill_value))


def where(condition: Expr, x: Expr, y: Expr) -> Expr:
    """x where condition is true, else y (all three broadcast)."""
    return call("where", (condition, x, y))


def tile(data: Expr, reps: Any) -> Expr:
    """numpy.tile: repeat the whole tensor `reps[i]` times along dim i."""
    return call("tile", (data,), {"reps": _ints(reps)})


def repeat(data: Expr, repeats: int, axis: int) -> Expr:
    """numpy.repeat: each element `repeats` times along `axis`."""
    return call("repeat", (data,), {"repeats": int(repeats), "axis": int(axis)})


def reverse(data: Expr, axis: int) -> Expr:
    """Reverse the order of elements along `axis`."""
    return call("reverse", (data,), {"axis": int(axis)})


def shape_of(data: Expr, dtype: str = "int32") -> Expr:
    """The shape of `data` as a 1-D tensor of `dtype` (data's shape must be static)."""
    return call("shape_of", (data,), {"dtype": str(dtype)})


def one_hot(
    indices: Expr, on_value: Expr, off_value: Expr, depth: int, axis: int, dtype: str
) -> Expr:
    """on_value where the new `axis` (of size `depth`) equals the index, off_value elsewhere."""
    attrs = {"depth": int(depth), "axis": int(axis), "dtype": str(dtype)}
    return call("one_hot", (indices, on_value, off_value), attrs)


def topk(
    data: Expr,
    k: int = 1,
    axis: int = -1,
    ret_type: str = "both",
    is_ascend: bool = False,
    dtype: str = "int32",
) -> Any:
    """The k largest (smallest if `is_ascend`) along `axis`: values, indices or both."""
    if ret_type not in ("both", "values", "indices"):
        raise ShapeError(f"topk: ret_type must be 'both', 'values' or 'indices', got {ret_type!r}")
    attrs = {"k": int(k), "axis": int(axis), "ret_type": ret_type, "is_ascend": bool(is_ascend)}
    return call("topk", (data,), {**attrs, "dtype": str(dtype)})


def _arg_attrs(axis: Any, keepdims: bool, exclude: bool, select_last_index: bool) -> dict:
    axis = None if axis is None else _ints(axis)
    return {
        "axis": axis,
        "keepdims": bool(keepdims),
        "exclude": bool(exclude),
        "select_last_index": bool(select_last_index),
    }


def argmax(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Expr:
    """Index of the (first) largest element along `axis` (None: of the flattened data)."""
    return call("argmax", (data,), _arg_attrs(axis, keepdims, exclude, select_last_index))


def argmin(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Expr:
    """Index of the (first) smallest element along `axis` (None: of the flattened data)."""
    return call("argmin", (data,), _arg_attrs(axis, keepdims, exclude, select_last_index))


def argsort(data: Expr, axis: int = -1, is_ascend: bool = True, dtype: str = "int32") -> Expr:
    """Indices that sort `data` along `axis`."""
    attrs = {"axis": int(axis), "is_ascend": bool(is_ascend), "dtype": str(dtype)}
    return call("argsort", (data,), attrs)


def sort(data: Expr, axis: int = -1, is_ascend: bool = True) -> Expr:
    """`data` sorted along `axis`."""
    return call("sort", (data,), {"axis": int(axis), "is_ascend": bool(is_ascend)})


def collapse_sum_like(data: Expr, collapse_type: Expr) -> Expr:
    """Sum `data` down to the shape of `collapse_type` (the reverse of broadcasting)."""
    return call("collapse_sum_like", (data, collapse_type))


def collapse_sum_to(data: Expr, shape: Any) -> Expr:
    """Sum `data` down to `shape` (the reverse of broadcasting)."""
    return call("collapse_sum_to", (data,), {"shape": _ints(shape)})


def layout_transform(data: Expr, src_layout: str, dst_layout: str) -> Expr:
    """Reorder (and block) dims between layouts: `layout_transform(x, "NCHW", "NCHW16c")`."""
    attrs = {"src_layout": str(src_layout), "dst_layout": str(dst_layout)}
    return call("layout_transform", (data,), attrs)


__all__ = [
    "argmax",
    "argmin",
    "argsort",
    "broadcast_to",
    "broadcast_to_like",
    "cast_like",
    "collapse_sum_like",
    "collapse_sum_to",
    "full_like",
    "layout_transform",
    "one_hot",
    "repeat",
    "reshape_like",
    "reverse",
    "shape_of",
    "sort",
    "tile",
    "topk",
    "where",
]
