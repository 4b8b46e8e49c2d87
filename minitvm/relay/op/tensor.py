"""Relay tensor ops: elementwise, reductions and shape manipulation (each one table row)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...error import ShapeError
from ...relax import op as rop
from ...relax.struct_info import TensorStructInfo
from ..expr import Expr, Tuple
from ._registry import call, register


def static_shape(x: Any, op: str, what: str = "data") -> tuple[int, ...]:
    """The static shape of relax value `x`; ops that compute a new shape need one."""
    sinfo = x.struct_info
    shape = sinfo.static_shape() if isinstance(sinfo, TensorStructInfo) else None
    if shape is None:
        raise ShapeError(f"{op}: {what} needs a static shape here, got {sinfo}")
    return shape


# ----------------------------------------------------------------------------- elementwise

_BINARY = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum")
_UNARY = {  # relay name -> relax builder
    "exp": rop.exp,
    "log": rop.log,
    "sqrt": rop.sqrt,
    "tanh": rop.tanh,
    "sigmoid": rop.sigmoid,
    "negative": rop.negative,
    "abs": rop.abs,
}


def _binary_row(name: str) -> None:
    fn = getattr(rop, name)
    register(name, lambda emit, args, attrs: fn(*args))

    def build(lhs: Expr, rhs: Expr) -> Expr:
        return call(name, (lhs, rhs))

    build.__name__ = name
    build.__doc__ = f"Elementwise {name} with numpy broadcasting: `relay.{name}(a, b)`."
    globals()[name] = build


def _unary_row(name: str, fn: Any) -> None:
    register(name, lambda emit, args, attrs: fn(args[0]))

    def build(data: Expr) -> Expr:
        return call(name, (data,))

    build.__name__ = name
    build.__doc__ = f"Elementwise {name}: `relay.{name}(x)`."
    globals()[name] = build


for _name in _BINARY:
    _binary_row(_name)
for _name, _fn in _UNARY.items():
    _unary_row(_name, _fn)

register("rsqrt", lambda emit, args, attrs: rop.divide(1.0, emit(rop.sqrt(args[0]))))
register("clip", lambda emit, args, attrs: rop.clip(args[0], attrs.a_min, attrs.a_max))
register("cast", lambda emit, args, attrs: rop.astype(args[0], attrs.dtype))
register("copy", lambda emit, args, attrs: args[0])


def rsqrt(data: Expr) -> Expr:
    """1 / sqrt(x)."""
    return call("rsqrt", (data,))


def clip(a: Expr, a_min: float, a_max: float) -> Expr:
    """Clamp every element into [a_min, a_max]."""
    return call("clip", (a,), {"a_min": float(a_min), "a_max": float(a_max)})


def cast(data: Expr, dtype: str) -> Expr:
    """Convert elements to `dtype`."""
    return call("cast", (data,), {"dtype": str(dtype)})


def copy(data: Expr) -> Expr:
    """The same values (a new tensor in Relay; the same value after translation)."""
    return call("copy", (data,))


# ----------------------------------------------------------------------------- reductions


def _axes(attrs: Any, ndim: int) -> tuple[int, ...] | None:
    """Reduced axes from relay's (axis, exclude); None means all."""
    if attrs.axis is None:
        return None if not attrs.exclude else ()
    axes = {a % ndim for a in attrs.axis}
    return tuple(a for a in range(ndim) if (a in axes) != bool(attrs.exclude))


def _reduce_row(name: str) -> None:
    fn = getattr(rop, name)

    def to_relax(emit, args, attrs):
        x = args[0]
        axes = _axes(attrs, x.struct_info.ndim)
        if axes == ():
            return x
        return fn(x, axes, attrs.keepdims)

    register(name, to_relax)

    def build(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Expr:
        axes = None if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
        return call(name, (data,), {"axis": axes, "keepdims": bool(keepdims), "exclude": exclude})

    build.__name__ = name
    build.__doc__ = f"{name} over `axis` (None: all): `relay.{name}(x, axis=1, keepdims=True)`."
    globals()[name] = build


for _name in ("sum", "mean", "max", "min", "prod"):
    _reduce_row(_name)


# ----------------------------------------------------------------------------- shapes


def infer_newshape(shape: Sequence[int], newshape: Sequence[int], op: str = "reshape") -> list:
    """Relay's reshape codes: 0 copies the input dim, -1 takes what is left."""
    out = [shape[i] if d == 0 else int(d) for i, d in enumerate(newshape)]
    if any(d < -1 for d in out):
        raise ShapeError(f"{op}: newshape {list(newshape)}: codes -2, -3, -4 are not supported")
    total = 1
    for d in shape:
        total *= d
    known = 1
    for d in out:
        known *= d if d != -1 else 1
    if out.count(-1) > 1 or (out.count(-1) and (known == 0 or total % known)):
        raise ShapeError(f"{op}: cannot reshape data of shape {tuple(shape)} into {list(newshape)}")
    return [total // known if d == -1 else d for d in out]


def _reshape(emit, args, attrs):
    x = args[0]
    return rop.reshape(x, infer_newshape(static_shape(x, "reshape"), attrs.newshape))


def _squeeze(emit, args, attrs):
    x = args[0]
    shape = static_shape(x, "squeeze")
    axes = range(len(shape)) if attrs.axis is None else [a % len(shape) for a in attrs.axis]
    for a in axes:
        if attrs.axis is not None and shape[a] != 1:
            raise ShapeError(f"squeeze: axis {a} of data {shape} has size {shape[a]}, not 1")
    drop = {a for a in axes if shape[a] == 1}
    return rop.reshape(x, [d for i, d in enumerate(shape) if i not in drop])


def _expand_dims(emit, args, attrs):
    x = args[0]
    ndim = x.struct_info.ndim
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + ndim + 1
    for _ in range(attrs.num_newaxis):
        x = rop.expand_dims(x if _ == 0 else emit(x), axis)
    return x


register("reshape", _reshape)
register("squeeze", _squeeze)
register("expand_dims", _expand_dims)
register("transpose", lambda emit, args, attrs: rop.permute_dims(args[0], attrs.axes))
register("concatenate", lambda emit, args, attrs: rop.concat(args[0], attrs.axis))


def reshape(data: Expr, newshape: Any) -> Expr:
    """Same elements, new shape (0 copies a dim, -1 infers one): `relay.reshape(x, (0, -1))`."""
    newshape = (newshape,) if isinstance(newshape, int) else tuple(int(d) for d in newshape)
    return call("reshape", (data,), {"newshape": newshape})


def squeeze(data: Expr, axis: Any = None) -> Expr:
    """Drop size-1 dims (those in `axis`, or all)."""
    axis = None if axis is None else tuple(int(a) for a in axis)
    return call("squeeze", (data,), {"axis": axis})


def expand_dims(data: Expr, axis: int, num_newaxis: int = 1) -> Expr:
    """Insert `num_newaxis` size-1 dims at `axis`."""
    return call("expand_dims", (data,), {"axis": int(axis), "num_newaxis": int(num_newaxis)})


def transpose(data: Expr, axes: Any = None) -> Expr:
    """Permute dims (reverse them when `axes` is None)."""
    axes = None if axes is None else tuple(int(a) for a in axes)
    return call("transpose", (data,), {"axes": axes})


def concatenate(data: Any, axis: int) -> Expr:
    """Join tensors along `axis`: `relay.concatenate([a, b], axis=1)`."""
    tup = data if isinstance(data, Expr) else Tuple(list(data))
    return call("concatenate", (tup,), {"axis": int(axis)})


__all__ = [
    *_BINARY,
    *_UNARY,
    "cast",
    "clip",
    "concatenate",
    "copy",
    "expand_dims",
    "max",
    "mean",
    "min",
    "prod",
    "reshape",
    "rsqrt",
    "squeeze",
    "sum",
    "transpose",
]
