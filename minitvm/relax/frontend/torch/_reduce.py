"""Converters of reductions and of ops that create tensors (constants when sizes are static)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._base import _axis, _axis_as_given, _dims, _dtype, _ndim, _need, _pair, shape_of
from ._elementwise import _binary
from ._promote import cast, category, default_float, number_dtype
from ._shape import _copy
from ._te import symbolic_arange

# how a reduction treats integer and bool input without dtype=: "int64" widens it (torch's
# sum and prod), "float" refuses it (torch's mean needs a float input), "keep" keeps it
_INTEGER_INPUT = {"sum": "int64", "prod": "int64", "mean": "float", "max": "keep", "min": "keep"}


def _reduce(relax_op: Callable) -> Callable:
    rule = _INTEGER_INPUT[relax_op.__name__]

    def convert(t, input, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            input = cast(t, input, t.dtype(dtype))
        elif category(_dtype(input)) < 2 and rule != "keep":
            if rule == "float":
                raise OpAttributeInvalid(
                    f"{relax_op.__name__} of a {_dtype(input)} tensor is rejected by torch itself "
                    "(it needs a floating point input); pass dtype=torch.float32 or cast first"
                )
            input = cast(t, input, rule)
        if dim is None or dim == []:
            return t.emit(relax_op(input, None, bool(keepdim)))
        axes = [_axis_as_given(d, _ndim(input)) for d in _pair(dim, 1)]
        return t.emit(relax_op(input, axes, bool(keepdim)))

    return convert


# ----------------------------------------------------------------------------- creation


def _any(t, input, dim=None, keepdim=False):
    as_int = t.emit(R.astype(input, "int32"))
    axes = None if dim is None else [_axis(d, _ndim(input)) for d in _pair(dim, 1)]
    return t.emit(R.astype(t.emit(R.max(as_int, axes, bool(keepdim))), "bool"))


def _arg_reduce(name: str) -> Callable:
    def convert(t, input, dim=None, keepdim=False):
        if _dtype(input) == "bool":
            raise OpAttributeInvalid(
                f"{name} of a bool tensor is rejected by torch itself; cast it to int first"
            )
        axis = None if dim is None else _axis_as_given(dim, _ndim(input))
        return t.emit(_need(name)(input, axis, bool(keepdim)))

    return convert


def _max_min(reduce: Callable, arg: str, binary: Callable) -> Callable:
    """torch.max(x) / max(x, dim, keepdim) -> (values, indices) / max(a, b) elementwise."""

    def convert(t, input, dim=None, keepdim=False):
        if isinstance(dim, Expr):
            return _binary(binary, max)(t, input, dim)
        if dim is None:
            return t.emit(reduce(input, None, False))
        axis = _axis(dim, _ndim(input))
        values = t.emit(reduce(input, [axis], bool(keepdim)))
        return (values, t.emit(_need(arg)(input, axis, bool(keepdim))))

    return convert


def _cumsum(t, input, dim, *, dtype=None):
    """Integer and bool input sums in int64 unless dtype= says otherwise, as in torch."""
    axis = _axis_as_given(dim, _ndim(input))
    if dtype is not None:  # relax's cumsum casts first and sums in dtype, as torch does
        return t.emit(_need("cumsum")(input, axis, t.dtype(dtype)))
    if category(_dtype(input)) < 2:
        input = cast(t, input, "int64")
    return t.emit(_need("cumsum")(input, axis, None))


def _var_std(name: str) -> Callable:
    """torch's var/std (Bessel-corrected by default) from relax's population variance."""

    def convert(t, input, dim=None, unbiased=True, keepdim=False, *, correction=None):
        if isinstance(dim, bool):  # aten.var.default(self, unbiased)
            dim, unbiased = None, dim
        if category(_dtype(input)) < 2:
            raise OpAttributeInvalid(
                f"{name} of a {_dtype(input)} tensor is rejected by torch itself (std and var "
                "need floating point input); cast it to float first"
            )
        shape = shape_of(input)
        axes = (
            list(range(len(shape)))
            if dim is None
            else [_axis(d, len(shape)) for d in _pair(dim, 1)]
        )
        count = 1
        for a in axes:
            count = count * shape[a]
        corr = (1 if unbiased else 0) if correction is None else correction
        if not isinstance(count, int):
            raise OpAttributeUnImplemented(f"{name} over symbolic dims")
        var = t.emit(_need("variance")(input, axes, bool(keepdim)))
        if corr:
            var = t.emit(R.multiply(var, t.const(count / (count - corr), _dtype(input))))
        return var if name == "var" else t.emit(R.sqrt(var))

    return convert


def _tensor(t, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    if any(isinstance(v, Expr | PrimExpr) for v in np.ravel(np.asarray(data, dtype=object))):
        raise OpAttributeUnImplemented("torch.tensor of computed values")
    value = np.asarray(data)
    if dtype is not None:
        return t.const(value.astype(t.dtype(dtype)))
    return t.const(value.astype("float32" if value.dtype.kind == "f" else value.dtype))


def _arange(t, *args, dtype=None, device=None, layout=None, pin_memory=None, requires_grad=False):
    if any(isinstance(a, Expr) for a in args):
        raise OpAttributeUnImplemented("arange with tensor bounds is not supported")
    if dtype is None:
        dtype = default_float() if any(isinstance(a, float) for a in args) else "int64"
    if any(isinstance(a, PrimExpr) for a in args):
        start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        return symbolic_arange(t, start, end, step, t.dtype(dtype))
    start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    return t.emit(R.arange(start, end, step, t.dtype(dtype)))


def _fill(value: Any) -> Callable:
    def convert(
        t,
        *size,
        dtype=None,
        device=None,
        layout=None,
        pin_memory=None,
        requires_grad=False,
        memory_format=None,
    ):
        dims, dtype = tuple(_dims(size)), t.dtype(dtype or "float32")
        if value == 0:  # zeros and empty: TVM's importer writes R.zeros
            return t.emit(R.zeros(dims, dtype))
        return t.emit(R.full(dims, t.const(value, dtype), dtype))

    return convert


def _full(
    t,
    size,
    fill_value,
    *,
    dtype=None,
    device=None,
    layout=None,
    pin_memory=None,
    requires_grad=False,
):
    dtype = t.dtype(dtype) if dtype is not None else number_dtype(fill_value)
    return t.emit(R.full(tuple(size), t.const(fill_value, dtype), dtype))


def _like(value: Any) -> Callable:
    def convert(
        t,
        input,
        fill_value=None,
        *,
        dtype=None,
        device=None,
        layout=None,
        pin_memory=None,
        memory_format=None,
        requires_grad=False,
    ):
        fill = value if value is not None else fill_value
        dtype = t.dtype(dtype) if dtype is not None else _dtype(input)
        shape = shape_of(input)
        if all(isinstance(d, int) for d in shape):
            return t.const(np.full(shape, fill, dtype))
        return t.emit(R.full(shape, t.const(fill, dtype), dtype))

    return convert


def _scalar_tensor(t, value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return t.const(value, t.dtype(dtype) if dtype is not None else "float32")


def _new_fill(value: Any) -> Callable:
    def convert(
        t, input, *size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False
    ):
        dtype = t.dtype(dtype) if dtype is not None else _dtype(input)
        fill = value if value is not None else size[-1]
        dims = _dims(size[:-1] if value is None else size)
        return t.emit(R.full(tuple(dims), t.const(fill, dtype), dtype))

    return convert


def _fill_like(t, input, value):
    if isinstance(value, Expr):  # fill.Tensor: a 0-d tensor's value
        return _copy(t, input, value)
    dtype = _dtype(input)
    return t.emit(R.full(shape_of(input), t.const(value, dtype), dtype))
