"""Running products along an axis (topi.cumprod), the product twin of topi.cumsum."""

from __future__ import annotations

from .. import te
from .reduction import _prod_reducer
from .transform import running_reduce


def cumprod(
    data: te.Tensor, axis: int | None = None, dtype: str | None = None, exclusive: bool = False
) -> te.Tensor:
    """Running product along `axis` (flattened when None); `exclusive` leaves out each element."""
    return running_reduce(data, axis, dtype, exclusive, _prod_reducer(), 1, "cumprod")
