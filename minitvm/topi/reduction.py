"""Reductions over axes (sum, mean, max, min, prod), with keepdims."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import te
from ..tir import op as tir_op
from ..tir.expr import PrimExpr
from ..tir.expr import cast as tir_cast
from .utils import normalize_axes
from .utils import prod as dims_prod


def _reduce_with(
    name: str, data: te.Tensor, axes: tuple, keepdims: bool, reducer: Any, source: Callable
) -> Any:
    """A compute reducing `source(index, raxes)` over `axes` of `data` with `reducer`."""
    kept = [d for n, d in enumerate(data.shape) if n not in axes]
    out_shape = [1 if n in axes else d for n, d in enumerate(data.shape)] if keepdims else kept
    raxes = [te.reduce_axis((0, data.shape[a]), f"k{a}") for a in axes]

    def body(*idx: Any) -> Any:
        r_it, o_it, index = iter(raxes), iter(idx), []
        for n in range(len(data.shape)):
            if n in axes:
                index.append(next(r_it))
                if keepdims:
                    next(o_it)  # the size-1 output dim
            else:
                index.append(next(o_it))
        return reducer(source(index, raxes), axis=raxes)

    return te.compute(tuple(out_shape), body, name=f"T_{name}", tag="reduce")


def _reduce(name: str, reducer: Callable) -> Callable:
    def op(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        axes = normalize_axes(axis, len(data.shape), f"topi.{name}")
        return _reduce_with(
            name, data, axes, keepdims, reducer, lambda index, _: data[tuple(index)]
        )

    op.__name__ = name
    op.__doc__ = f"{name} over `axis` (None: all axes); `keepdims` keeps reduced dims as size 1."
    return op


sum = _reduce("sum", te.sum)
max = _reduce("max", te.max)
min = _reduce("min", te.min)


def _prod_reducer() -> Any:
    return te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")


def prod(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
    """Product over `axis`."""
    return _reduce("prod", _prod_reducer())(data, axis, keepdims)


def mean(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
    """Mean over `axis`: a sum, then a division by the element count (a separate compute)."""
    axes = normalize_axes(axis, len(data.shape), "topi.mean")
    total = sum(data, axes, keepdims)
    count = dims_prod([data.shape[a] for a in axes])
    return te.compute(
        total.shape,
        lambda *i: total[i] / tir_cast(data.dtype, count),
        name="T_mean",
        tag="elemwise",
    )


def _arg_reducer(name: str, better: Callable, select_last_index: bool) -> Any:
    """A reducer over (index, value) pairs keeping the best value; ties and NaNs as in numpy."""

    def wins(xi: PrimExpr, xv: PrimExpr, yi: PrimExpr, yv: PrimExpr) -> PrimExpr:
        earlier = xi > yi if select_last_index else xi < yi
        if not xv.dtype.is_float:
            return better(xv, yv) | ((xv == yv) & earlier)
        # numpy returns the first NaN: a NaN beats any number, and NaNs tie with each other.
        x_nan, y_nan = tir_op.isnan(xv), tir_op.isnan(yv)
        same = (xv == yv) | (x_nan & y_nan)
        return (x_nan & ~y_nan) | better(xv, yv) | (same & earlier)

    def combine(x: tuple, y: tuple) -> tuple:
        w = wins(x[0], x[1], y[0], y[1])
        return tir_op.Select_(w, x[0], y[0]), tir_op.Select_(w, x[1], y[1])

    def identity(index_dtype: str, value_dtype: str) -> tuple:
        # The identity's index loses every tie, so a real element always replaces it.
        sentinel = -1 if select_last_index else tir_op.max_value(index_dtype)
        worst = tir_op.min_value if name == "argmax" else tir_op.max_value
        return te.const(sentinel, index_dtype), worst(value_dtype)

    return te.comm_reducer(combine, identity, name=name)


def _arg_reduce(name: str, better: Callable) -> Callable:
    def op(
        data: te.Tensor, axis: Any = None, keepdims: bool = False, select_last_index: bool = False
    ) -> te.Tensor:
        axes = normalize_axes(axis, len(data.shape), f"topi.{name}")
        reducer = _arg_reducer(name, better, select_last_index)

        def pairs(index: list, raxes: list) -> tuple:
            flat = te.const(0, "int32")  # row-major position within the reduced axes
            for a, k in zip(axes, raxes):
                flat = flat * tir_cast("int32", data.shape[a]) + k.var
            return flat, data[tuple(index)]

        return _reduce_with(name, data, axes, keepdims, reducer, pairs)[0]

    op.__name__ = name
    op.__doc__ = (
        f"The int32 index of the {name[3:]} over `axis` (None: all axes, a flat index), like "
        f"numpy.{name}: the first one on ties (the last with select_last_index), NaN first."
    )
    return op


argmax = _arg_reduce("argmax", lambda x, y: x > y)
argmin = _arg_reduce("argmin", lambda x, y: x < y)


def variance(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
    """Population variance over `axis`: mean((x - mean(x))**2) (two passes, stable)."""
    nd = len(data.shape)
    axes = normalize_axes(axis, nd, "topi.variance")
    avg = mean(data, axes, True)
    count = dims_prod([data.shape[a] for a in axes])

    def square_dev(index: list, _: list) -> Any:
        d = data[tuple(index)] - avg[tuple(0 if n in axes else i for n, i in enumerate(index))]
        return d * d

    total = _reduce_with("variance_sum", data, axes, keepdims, te.sum, square_dev)
    return te.compute(
        total.shape,
        lambda *i: total[i] / tir_cast(data.dtype, count),
        name="T_variance",
        tag="elemwise",
    )


def std(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
    """Population standard deviation over `axis`: sqrt(variance)."""
    var = variance(data, axis, keepdims)
    return te.compute(var.shape, lambda *i: tir_op.sqrt(var[i]), name="T_std", tag="elemwise")
