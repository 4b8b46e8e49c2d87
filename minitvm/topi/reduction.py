"""Reductions over axes (sum, mean, max, min, prod), with keepdims."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import te
from ..tir.expr import PrimExpr
from ..tir.expr import cast as tir_cast
from .utils import normalize_axes
from .utils import prod as dims_prod


def _reduce(name: str, reducer: Callable) -> Callable:
    def op(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        axes = normalize_axes(axis, len(data.shape), f"topi.{name}")
        kept = [d for n, d in enumerate(data.shape) if n not in axes]
        out_shape = [1 if n in axes else d for n, d in enumerate(data.shape)] if keepdims else kept
        raxes = [te.reduce_axis((0, data.shape[a]), f"k{a}") for a in axes]

        def body(*idx: Any) -> PrimExpr:
            r_it, o_it, index = iter(raxes), iter(idx), []
            for n in range(len(data.shape)):
                if n in axes:
                    index.append(next(r_it))
                    if keepdims:
                        next(o_it)  # the size-1 output dim
                else:
                    index.append(next(o_it))
            return reducer(data[tuple(index)], axis=raxes)

        return te.compute(tuple(out_shape), body, name=f"T_{name}", tag="reduce")

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
