"""Elementwise math beyond broadcast.py: inverse trig, float classes, bitwise ops and shifts.

Names follow TVM's topi (topi.asin, topi.isnan, topi.bitwise_and, topi.left_shift, ...).
"""

from __future__ import annotations

from ..tir import op as tir_op
from .broadcast import _binary, _unary

tan = _unary("tan", tir_op.tan)
sinh = _unary("sinh", tir_op.sinh)
cosh = _unary("cosh", tir_op.cosh)
asin = _unary("asin", tir_op.asin)
acos = _unary("acos", tir_op.acos)
atan = _unary("atan", tir_op.atan)
trunc = _unary("trunc", tir_op.trunc)
isnan = _unary("isnan", tir_op.isnan)  # bool results
isinf = _unary("isinf", tir_op.isinf)
isfinite = _unary("isfinite", tir_op.isfinite)
bitwise_not = _unary("bitwise_not", lambda v: ~v)
bitwise_and = _binary("bitwise_and", tir_op.bitwise_and)
bitwise_or = _binary("bitwise_or", tir_op.bitwise_or)
bitwise_xor = _binary("bitwise_xor", tir_op.bitwise_xor)
left_shift = _binary("left_shift", tir_op.shift_left)
right_shift = _binary("right_shift", tir_op.shift_right)  # logical on unsigned types

__all__ = [
    "acos",
    "asin",
    "atan",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "cosh",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "right_shift",
    "sinh",
    "tan",
    "trunc",
]


def reinterpret(x, dtype: str):
    """The bits of each element read as `dtype` (same width; bool is one byte, 0 or 1)."""
    from .. import te
    from ..ir.dtype import DataType

    src, dst = DataType(x.dtype), DataType(dtype)
    if src.is_bool or dst.is_bool:  # stored as a byte holding 0 or 1: a cast keeps those bits
        return te.compute(x.shape, lambda *i: x[i].astype(dtype), name="T_reinterpret")
    return te.compute(
        x.shape, lambda *i: tir_op.reinterpret(dtype, x[i]), name="T_reinterpret", tag="elemwise"
    )


__all__ += ["reinterpret"]
