"""Relay tensor ops: elementwise, reductions and shape manipulation (each one table row)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...error import ShapeError
from ...relax import op as rop
from ...relax.expr import Tuple as RTuple
from ...relax.expr import TupleGetItem as RTupleGetItem
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


def _ewise_row(name: str, arity: int) -> Any:
    """Relay's elementwise op `name` of 1 or 2 operands: the relax op of the same name."""
    fn = getattr(rop, name)
    register(name, lambda emit, args, attrs: fn(*args))

    def unary(data: Expr) -> Expr:
        return call(name, (data,))

    def binary(lhs: Expr, rhs: Expr) -> Expr:
        return call(name, (lhs, rhs))

    build = binary if arity == 2 else unary
    build.__name__ = build.__qualname__ = name
    build.__doc__ = (
        f"Elementwise {name} with numpy broadcasting: `relay.{name}(a, b)`."
        if arity == 2
        else f"Elementwise {name}: `relay.{name}(x)`."
    )
    return build


add = _ewise_row("add", 2)
subtract = _ewise_row("subtract", 2)
multiply = _ewise_row("multiply", 2)
divide = _ewise_row("divide", 2)
power = _ewise_row("power", 2)
maximum = _ewise_row("maximum", 2)
minimum = _ewise_row("minimum", 2)
exp = _ewise_row("exp", 1)
log = _ewise_row("log", 1)
sqrt = _ewise_row("sqrt", 1)
tanh = _ewise_row("tanh", 1)
sigmoid = _ewise_row("sigmoid", 1)
negative = _ewise_row("negative", 1)
abs = _ewise_row("abs", 1)

# more elementwise ops, each the relax op of the same name (comparisons give bool tensors)
_MORE_BINARY = (
    "less", "greater", "less_equal", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "floor_divide", "floor_mod", "bitwise_and", "bitwise_or",
    "bitwise_xor", "left_shift", "right_shift", "mod",
)  # fmt: skip
_MORE_UNARY = (
    "floor", "ceil", "round", "sign", "trunc", "cos", "sin", "tan", "acos", "asin", "atan",
    "cosh", "sinh", "acosh", "asinh", "atanh", "erf", "isnan", "isinf", "isfinite",
    "logical_not", "bitwise_not",
)  # fmt: skip
for _name in _MORE_BINARY:
    globals()[_name] = _ewise_row(_name, 2)
for _name in _MORE_UNARY:
    globals()[_name] = _ewise_row(_name, 1)

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


def in_float32(emit: Any, x: Any, make: Any) -> Any:
    """make(x), computed in float32 when x is float16 and cast back: TVM's mean and variance
    do so, since a float16 running sum stops growing past 2048."""
    if str(x.struct_info.dtype) != "float16":
        return make(x)
    return rop.astype(emit(make(emit(rop.astype(x, "float32")))), "float16")


def _reduce_row(name: str) -> Any:
    fn = getattr(rop, name)

    def to_relax(emit, args, attrs):
        x = args[0]
        axes = _axes(attrs, x.struct_info.ndim)
        if axes == ():
            return x
        if name == "mean":
            return in_float32(emit, x, lambda v: fn(v, axes, attrs.keepdims))
        return fn(x, axes, attrs.keepdims)

    register(name, to_relax)

    def build(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Expr:
        axes = None if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
        return call(name, (data,), {"axis": axes, "keepdims": bool(keepdims), "exclude": exclude})

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{name} over `axis` (None: all): `relay.{name}(x, axis=1, keepdims=True)`."
    return build


sum = _reduce_row("sum")
mean = _reduce_row("mean")
max = _reduce_row("max")
min = _reduce_row("min")
prod = _reduce_row("prod")


# ----------------------------------------------------------------------------- shapes


def _split_dims(size: int, d1: int, d2: int, newshape: Sequence[int], op: str) -> list:
    """Code -4: input dim `size` as (d1, d2), one of which may be -1."""
    if d1 == -1 and d2 == -1:
        raise ShapeError(f"{op}: newshape {list(newshape)}: -4 splits into at most one -1")
    d1 = size // d2 if d1 == -1 else d1
    d2 = size // d1 if d2 == -1 else d2
    if d1 * d2 != size:
        raise ShapeError(
            f"{op}: newshape {list(newshape)}: -4 cannot split {size} into {d1} x {d2}"
        )
    return [d1, d2]


def infer_newshape(shape: Sequence[int], newshape: Sequence[int], op: str = "reshape") -> list:
    """Relay's reshape codes, read left to right against the input dims: 0 copies one input
    dim, -1 infers one dim, -2 copies all remaining dims, -3 merges two input dims into one,
    -4 splits one input dim into the two values after it (one may be -1)."""
    out: list[int] = []
    src, i, codes = 0, 0, list(newshape)
    while i < len(codes):
        d = int(codes[i])
        if d > 0 or d == -1:
            out.append(d)
            src += 1
        elif d == 0 and src < len(shape):
            out.append(shape[src])
            src += 1
        elif d == -2:
            out.extend(shape[src:])
            src = len(shape)
        elif d == -3 and src + 1 < len(shape):
            out.append(shape[src] * shape[src + 1])
            src += 2
        elif d == -4 and src < len(shape) and i + 2 < len(codes):
            out.extend(_split_dims(shape[src], int(codes[i + 1]), int(codes[i + 2]), codes, op))
            src, i = src + 1, i + 2
        else:
            raise ShapeError(
                f"{op}: newshape {codes}: code {d} has no input dim left in {tuple(shape)}"
            )
        i += 1
    total = 1
    for d in shape:
        total *= d
    known = 1
    for d in out:
        known *= d if d != -1 else 1
    if out.count(-1) > 1 or (out.count(-1) and (known == 0 or total % known)):
        raise ShapeError(f"{op}: cannot reshape data of shape {tuple(shape)} into {codes}")
    out = [total // known if d == -1 else d for d in out]
    size = 1
    for d in out:
        size *= d
    if size != total:
        raise ShapeError(f"{op}: cannot reshape data of shape {tuple(shape)} into {codes}")
    return out


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


def _reverse_reshape(emit, args, attrs):
    x = args[0]
    shape = static_shape(x, "reverse_reshape")
    out = infer_newshape(shape[::-1], attrs.newshape[::-1], "reverse_reshape")
    return rop.reshape(x, out[::-1])


register("reshape", _reshape)
register("reverse_reshape", _reverse_reshape)
register("squeeze", _squeeze)
register("expand_dims", _expand_dims)
register("transpose", lambda emit, args, attrs: rop.permute_dims(args[0], attrs.axes))
register("concatenate", lambda emit, args, attrs: rop.concat(args[0], attrs.axis))


def reshape(data: Expr, newshape: Any) -> Expr:
    """Same elements, new shape (0 copies a dim, -1 infers one): `relay.reshape(x, (0, -1))`."""
    newshape = (newshape,) if isinstance(newshape, int) else tuple(int(d) for d in newshape)
    return call("reshape", (data,), {"newshape": newshape})


def reverse_reshape(data: Expr, newshape: Any) -> Expr:
    """reshape with the codes read right to left: `reverse_reshape(x, (-1, 0))` of a (2, 3, 4)
    tensor is (6, 4)."""
    newshape = (newshape,) if isinstance(newshape, int) else tuple(int(d) for d in newshape)
    return call("reverse_reshape", (data,), {"newshape": newshape})


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
    "abs",
    "add",
    "cast",
    "clip",
    "concatenate",
    "copy",
    "divide",
    "exp",
    "expand_dims",
    "log",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "power",
    "prod",
    "reshape",
    "reverse_reshape",
    "rsqrt",
    "sigmoid",
    "sqrt",
    "squeeze",
    "subtract",
    "sum",
    "tanh",
    "transpose",
]
__all__ += list(_MORE_BINARY) + list(_MORE_UNARY)


# ----------------------------------------------------------------------------- slicing / creation


def _split_count(attrs: Any) -> int:
    ios = attrs.indices_or_sections
    return ios if isinstance(ios, int) else len(ios) + 1


def _strided_slice(emit, args, attrs):
    x = args[0]
    ndim = x.struct_info.ndim
    axes = attrs.axes if attrs.axes is not None else tuple(range(len(attrs.begin)))
    end = list(attrs.end)
    if attrs.slice_mode == "size":  # end holds sizes; -1 means to the end
        shape = static_shape(x, "strided_slice")
        end = [shape[a % ndim] if e < 0 else b + e for a, b, e in zip(axes, attrs.begin, end)]
    strides = attrs.strides if attrs.strides else None
    if strides is not None and len(strides) == 1 and len(axes) > 1:
        strides = strides * len(axes)
    return rop.strided_slice(x, axes, attrs.begin, end, strides)


def _stack(emit, args, attrs):
    tup = args[0]
    if isinstance(tup, RTuple):
        fields = tup.fields
    else:  # a tuple-typed value: its fields one by one
        fields = [emit(RTupleGetItem(tup, i)) for i in range(len(tup.struct_info.fields))]
    ndim = fields[0].struct_info.ndim
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + ndim + 1
    return rop.concat([emit(rop.expand_dims(f, axis)) for f in fields], axis)


def _full(emit, args, attrs):
    fill = args[0]
    dtype = attrs.dtype or str(fill.struct_info.dtype)
    return rop.full(attrs.shape, fill, dtype)


def _like(fill: float):
    def to_relax(emit, args, attrs):
        sinfo = args[0].struct_info
        return rop.full(static_shape(args[0], "full_like"), fill, str(sinfo.dtype))

    return to_relax


register(
    "split",
    lambda emit, args, attrs: rop.split(args[0], attrs.indices_or_sections, attrs.axis),
    _split_count,
)
register("strided_slice", _strided_slice)
register("take", lambda emit, args, attrs: rop.take(args[0], args[1], attrs.axis, attrs.mode))
register("stack", _stack)
register("zeros", lambda emit, args, attrs: rop.zeros(attrs.shape, attrs.dtype))
register("ones", lambda emit, args, attrs: rop.ones(attrs.shape, attrs.dtype))
register("full", _full)
register("zeros_like", _like(0.0))
register("ones_like", _like(1.0))


def split(data: Expr, indices_or_sections: Any, axis: int = 0) -> Any:
    """Split into equal sections (an int) or at indices; a tuple: `relay.split(x, 2)[0]`."""
    ios = indices_or_sections
    ios = int(ios) if isinstance(ios, int) else tuple(int(i) for i in ios)
    return call("split", (data,), {"indices_or_sections": ios, "axis": int(axis)})


def strided_slice(
    data: Expr, begin: Any, end: Any, strides: Any = None, axes: Any = None, slice_mode: str = "end"
) -> Expr:
    """data[begin:end:strides] on `axes` (default: the leading ones)."""
    if slice_mode not in ("end", "size"):
        raise ShapeError(f"strided_slice: slice_mode must be 'end' or 'size', got {slice_mode!r}")
    attrs = {
        "begin": tuple(int(b) for b in begin),
        "end": tuple(int(e) for e in end),
        "strides": None if strides is None else tuple(int(s) for s in strides),
        "axes": None if axes is None else tuple(int(a) for a in axes),
        "slice_mode": slice_mode,
    }
    return call("strided_slice", (data,), attrs)


def take(
    data: Expr, indices: Expr, axis: int | None = None, batch_dims: int = 0, mode: str = "clip"
) -> Expr:
    """Gather along `axis` (of the flattened data when None)."""
    if batch_dims:
        raise ShapeError(f"take: batch_dims={batch_dims} is not supported; use 0")
    return call(
        "take", (data, indices), {"axis": None if axis is None else int(axis), "mode": mode}
    )


def stack(data: Any, axis: int) -> Expr:
    """Join same-shape tensors along a new axis."""
    tup = data if isinstance(data, Expr) else Tuple(list(data))
    return call("stack", (tup,), {"axis": int(axis)})


def zeros(shape: Any, dtype: str = "float32") -> Expr:
    """A tensor of zeros."""
    return call("zeros", (), {"shape": tuple(int(d) for d in shape), "dtype": str(dtype)})


def ones(shape: Any, dtype: str = "float32") -> Expr:
    """A tensor of ones."""
    return call("ones", (), {"shape": tuple(int(d) for d in shape), "dtype": str(dtype)})


def full(fill_value: Expr, shape: Any = (), dtype: str = "") -> Expr:
    """A tensor filled with the scalar `fill_value` (a relay expression)."""
    return call(
        "full", (fill_value,), {"shape": tuple(int(d) for d in shape), "dtype": dtype or ""}
    )


def zeros_like(data: Expr) -> Expr:
    """Zeros of data's shape and dtype."""
    return call("zeros_like", (data,))


def ones_like(data: Expr) -> Expr:
    """Ones of data's shape and dtype."""
    return call("ones_like", (data,))


__all__ += [
    "full",
    "ones",
    "ones_like",
    "split",
    "stack",
    "strided_slice",
    "take",
    "zeros",
    "zeros_like",
]
