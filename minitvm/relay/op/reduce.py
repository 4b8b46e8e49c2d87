"""Relay's statistical and boolean reductions: variance, std, all, any, logsumexp (one row each).

They share relay's (axis, keepdims, exclude) convention with sum/mean in tensor.py.
"""

from __future__ import annotations

from typing import Any

from ...error import OpNotImplemented
from ...relax import op as rop
from ..expr import Expr, Tuple
from ._registry import call, register
from .tensor import _axes, in_float32, mean


def _reduced(x: Any, attrs: Any) -> tuple[int, ...]:
    """The reduced axes of relax value `x` (all of them when relay's axis is None)."""
    axes = _axes(attrs, x.struct_info.ndim)
    return tuple(range(x.struct_info.ndim)) if axes is None else axes


def _variance(emit, args, attrs, root: bool = False):
    return in_float32(emit, args[0], lambda x: _variance_of(emit, x, attrs, root))


def _variance_of(emit, x, attrs, root: bool):
    axes = _reduced(x, attrs)
    out = rop.variance(x, axes, attrs.keepdims)
    if attrs.unbiased:  # n / (n - 1) of the biased estimate; n counted so shapes may be symbolic
        n = emit(rop.sum(emit(rop.ones_like(x)), axes, attrs.keepdims))
        scale = emit(rop.divide(n, emit(rop.subtract(n, emit(rop.ones_like(n))))))
        out = rop.multiply(emit(out), scale)
    return rop.sqrt(emit(out)) if root else out


def _bool_reduce(reduce_fn: Any):
    # all = min and any = max over 0/1, back to bool
    def to_relax(emit, args, attrs):
        x = args[0]
        axes = _reduced(x, attrs)
        ints = emit(rop.astype(x, "int8"))
        return rop.astype(emit(reduce_fn(ints, axes, attrs.keepdims)), "bool")

    return to_relax


def _logsumexp(emit, args, attrs):
    # max + log(sum(exp(x - max))): no overflow for large inputs
    x = args[0]
    axes = _reduced(x, attrs)
    top = emit(rop.max(x, axes, True))
    shifted = emit(rop.exp(emit(rop.subtract(x, top))))
    out = rop.add(emit(rop.log(emit(rop.sum(shifted, axes, True)))), top)
    return out if attrs.keepdims else rop.squeeze(emit(out), axes)


register("variance", _variance)
register("std", lambda emit, args, attrs: _variance(emit, args, attrs, root=True))
register("all", _bool_reduce(rop.min))
register("any", _bool_reduce(rop.max))
register("logsumexp", _logsumexp)


def _reduce_attrs(axis: Any, keepdims: bool, exclude: bool, **extra: Any) -> dict:
    axis = None if axis is None else ((int(axis),) if isinstance(axis, int) else tuple(axis))
    return {"axis": axis, "keepdims": bool(keepdims), "exclude": bool(exclude), **extra}


def variance(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    unbiased: bool = False,
    with_mean: Expr | None = None,
) -> Expr:
    """Variance over `axis` (divided by n, or by n - 1 when `unbiased`)."""
    if with_mean is not None:
        raise OpNotImplemented("relay.variance(with_mean=...) is not built; pass the data only")
    return call("variance", (data,), _reduce_attrs(axis, keepdims, exclude, unbiased=unbiased))


def std(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    unbiased: bool = False,
) -> Expr:
    """Standard deviation over `axis` (the square root of `variance`)."""
    return call("std", (data,), _reduce_attrs(axis, keepdims, exclude, unbiased=unbiased))


def mean_variance(
    data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False,
    unbiased: bool = False,
) -> Any:  # fmt: skip
    """(mean, variance) over `axis`, as a relay tuple."""
    return Tuple([mean(data, axis, keepdims, exclude),
                  variance(data, axis, keepdims, exclude, unbiased)])  # fmt: skip


def mean_std(
    data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False,
    unbiased: bool = False,
) -> Any:  # fmt: skip
    """(mean, std) over `axis`, as a relay tuple."""
    return Tuple([mean(data, axis, keepdims, exclude),
                  std(data, axis, keepdims, exclude, unbiased)])  # fmt: skip


def all(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Expr:
    """True where every element over `axis` is true."""
    return call("all", (data,), _reduce_attrs(axis, keepdims, exclude))


def any(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Expr:
    """True where some element over `axis` is true."""
    return call("any", (data,), _reduce_attrs(axis, keepdims, exclude))


def logsumexp(data: Expr, axis: Any = None, keepdims: bool = False) -> Expr:
    """log(sum(exp(data))) over `axis`, computed stably."""
    return call("logsumexp", (data,), _reduce_attrs(axis, keepdims, False))


__all__ = ["all", "any", "logsumexp", "mean_std", "mean_variance", "std", "variance"]
