"""Running products along an axis (topi.cumprod), the product twin of topi.cumsum."""

from __future__ import annotations

from typing import Any

from .. import te
from ..tir import op as tir_op
from ..tir.expr import PrimExpr
from ..tir.expr import cast as tir_cast
from .reduction import _prod_reducer
from .transform import flatten
from .utils import normalize_axis


def cumprod(
    data: te.Tensor, axis: int | None = None, dtype: str | None = None, exclusive: bool = False
) -> te.Tensor:
    """Running product along `axis` (flattened when None); `exclusive` leaves out each element."""
    if axis is None:
        data, axis = flatten(data), 0
    axis = normalize_axis(axis, len(data.shape), "topi.cumprod")
    dtype = dtype or data.dtype
    k = te.reduce_axis((0, data.shape[axis]), "k")
    product = _prod_reducer()

    def body(*idx: Any) -> PrimExpr:
        src = list(idx)
        src[axis] = k
        taken = k < idx[axis] if exclusive else k <= idx[axis]
        value = tir_cast(dtype, data[tuple(src)])
        # a masked product over the whole axis (quadratic in its length, as topi.cumsum)
        return product(tir_op.if_then_else(taken, value, tir_op.const(1, dtype)), axis=k)

    return te.compute(data.shape, body, name="T_cumprod", tag="reduce")
