"""Constant folding: one table of (node class → scalar function), exact C/floor semantics."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..error import DTypeError
from ..ir.dtype import DataType
from ..tir import expr as tx
from ..tir.expr import Cast, FloatImm, IntImm, Not, PrimExpr


def trunc_div(a: int, b: int) -> int:
    """Integer division rounding toward zero (C semantics)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def trunc_mod(a: int, b: int) -> int:
    """Remainder with the sign of the dividend (C semantics)."""
    return a - b * trunc_div(a, b)


def _float_div(a: float, b: float) -> float | None:
    return None if b == 0 else a / b


def _int_only(fn: Callable[[int, int], int]) -> Callable[[int, int], int | None]:
    return lambda a, b: None if b == 0 else fn(a, b)


# class → (fold on ints, fold on floats); None means "leave it" (division by zero, ...).
_ARITH: dict[type, tuple[Callable | None, Callable | None]] = {
    tx.Add: (lambda a, b: a + b, lambda a, b: a + b),
    tx.Sub: (lambda a, b: a - b, lambda a, b: a - b),
    tx.Mul: (lambda a, b: a * b, lambda a, b: a * b),
    tx.Div: (_int_only(trunc_div), _float_div),
    tx.Mod: (_int_only(trunc_mod), None),
    tx.FloorDiv: (
        _int_only(lambda a, b: a // b),
        lambda a, b: None if b == 0 else math.floor(a / b),
    ),
    tx.FloorMod: (_int_only(lambda a, b: a % b), None),
    tx.Min: (min, min),
    tx.Max: (max, max),
}

_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    tx.EQ: lambda a, b: a == b,
    tx.NE: lambda a, b: a != b,
    tx.LT: lambda a, b: a < b,
    tx.LE: lambda a, b: a <= b,
    tx.GT: lambda a, b: a > b,
    tx.GE: lambda a, b: a >= b,
    tx.And: lambda a, b: bool(a) and bool(b),
    tx.Or: lambda a, b: bool(a) or bool(b),
}


def _const(x: PrimExpr) -> int | float | None:
    if isinstance(x, IntImm | FloatImm) and x.dtype.lanes == 1:
        return x.value
    return None


def make_checked(dtype: DataType, value: Any) -> PrimExpr | None:
    """A scalar constant of `dtype`, or None when `value` does not fit (we never fold overflow)."""
    if value is None:
        return None
    if dtype.is_float:
        return FloatImm(dtype, float(np.array(value, dtype=dtype.numpy_dtype())))
    try:
        return IntImm(dtype, int(value))
    except DTypeError:
        return None


def fold_binary(e: PrimExpr) -> PrimExpr | None:
    """The constant `e` evaluates to when both operands are scalar constants, else None."""
    a, b = _const(e.a), _const(e.b)
    if a is None or b is None:
        return None
    cls = type(e)
    if cls in _COMPARE:
        return IntImm(e.dtype, int(_COMPARE[cls](a, b)))
    int_fn, float_fn = _ARITH[cls]
    fn = float_fn if e.dtype.is_float else int_fn
    if fn is None:
        return None
    return make_checked(e.dtype, fn(a, b))


def fold_not(e: Not) -> PrimExpr | None:
    a = _const(e.a)
    return None if a is None else IntImm(e.dtype, int(not a))


def fold_cast(e: Cast) -> PrimExpr | None:
    """Fold a cast of a constant with C semantics (wrap-around for ints, truncation for floats)."""
    value = _const(e.value)
    dst = e.dtype
    if value is None or dst.lanes != 1:
        return None
    if dst.is_bool:
        return IntImm(dst, int(value != 0))
    if dst.is_float:
        return FloatImm(dst, float(np.array(value, dtype=dst.numpy_dtype())))
    if not dst.is_integer:
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)  # truncation toward zero
    width = 2**dst.bits
    wrapped = value % width
    if dst.is_int and wrapped >= width // 2:
        wrapped -= width
    if e.value.dtype.is_float and wrapped != value:
        return None  # out-of-range float → int is undefined in C; leave it
    return IntImm(dst, wrapped)


def _clz(v: int, bits: int, _: int) -> int:
    return 0 if v < 0 else bits - v.bit_length()  # a negative value has its top bit set


def _shift(left: bool) -> Callable[[int, int, int], int | None]:
    """Shift by 0 <= b < bits (other amounts are undefined in C)."""
    return lambda a, bits, b: (a << b if left else a >> b) if 0 <= b < bits else None


# intrinsic name -> fold of (first operand, its bits, second operand or 0)
_CALLS: dict[str, Callable[[int, int, int], int | None]] = {
    "tir.clz": _clz,
    "tir.shift_left": _shift(True),
    "tir.shift_right": _shift(False),
}


def fold_call(e: tx.Call) -> PrimExpr | None:
    fn = _CALLS.get(getattr(e.op, "name", None))
    if fn is None or not all(type(a) is IntImm for a in e.args) or not e.dtype.is_int:
        return None
    a = e.args[0]
    out = fn(a.value, a.dtype.bits, e.args[1].value if len(e.args) > 1 else 0)
    bits = e.dtype.bits
    if out is None or not -(2 ** (bits - 1)) <= out < 2 ** (bits - 1):
        return None
    return IntImm(e.dtype, out)


_FOLDERS: dict[type, Callable[[Any], PrimExpr | None]] = {
    **{cls: fold_binary for cls in (*_ARITH, *_COMPARE)},
    Not: fold_not,
    Cast: fold_cast,
    tx.Call: fold_call,
}


def fold(e: PrimExpr) -> PrimExpr | None:
    """Fold `e` when its operands are constants; None when it cannot be folded."""
    folder = _FOLDERS.get(type(e))
    return None if folder is None else folder(e)
