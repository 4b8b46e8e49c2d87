"""relax.op.cumprod: the running product along an axis (the product twin of relax.op.cumsum)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.dtype import DataType
from ...topi.cumulative import cumprod as topi_cumprod
from ..expr import Call, Expr
from ._table import OpPattern, make_call, register_op
from .statistical import _infer_cumsum


def _np_cumprod(data, axis, dtype, exclusive):
    flat = data.reshape(-1) if axis is None else data
    axis = 0 if axis is None else axis
    out = np.cumprod(flat, axis=axis, dtype=dtype or data.dtype)
    if exclusive:  # shift by one along the axis, starting from 1
        out = np.concatenate(
            [np.ones_like(np.take(out, [0], axis)), np.delete(out, -1, axis)], axis=axis
        )
    return out


_cumprod = register_op(
    "relax.cumprod",
    _infer_cumsum,
    topi_cumprod,
    _np_cumprod,
    OpPattern.OPAQUE,
)


def cumprod(
    data: Expr, axis: int | None = None, dtype: Any = None, exclusive: bool = False
) -> Call:
    """Running product along `axis` (of the flattened data when None): `relax.op.cumprod(x, 1)`."""
    attrs = {
        "axis": None if axis is None else int(axis),
        "dtype": None if dtype is None else str(DataType(dtype)),
        "exclusive": bool(exclusive),
    }
    return make_call(_cumprod, (data,), attrs)
