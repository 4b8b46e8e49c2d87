"""The scalar semantics of the reference interpreter: integer wrapping, truncating and flooring
division, numpy dtypes, comparisons and the intrinsic calls (tir.exp, ...), each as numpy
exactly as the compiler computes it."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.dtype import DataType
from ..tir import expr as E

# ----------------------------------------------------------------------------- values
# Scalars are Python ints (int/uint), bools, or numpy float scalars of the exact width; vectors
# are numpy arrays of the element dtype. Integer results are wrapped to their width.


def _wrapper(dtype: DataType) -> Callable[[int], int]:
    bits = dtype.bits
    mask = (1 << bits) - 1
    if dtype.is_uint:
        return lambda x: x & mask
    half = 1 << (bits - 1)
    return lambda x: x if -half <= x < half else ((x + half) & mask) - half


def _scalar_of(dtype: DataType) -> Callable[[Any], Any]:
    """Converts an element read from numpy (or a Python number) to the scalar representation."""
    if dtype.is_bool:
        return bool
    if dtype.is_float:
        return dtype.element_of().numpy_dtype().type
    return int


def _np_dtype(dtype: DataType) -> np.dtype:
    return dtype.element_of().numpy_dtype()


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _vec_trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.floor_divide(a, b)
    return q + ((a - q * b != 0) & ((a < 0) != (b < 0))).astype(q.dtype)


def _float_floor_mod(a: Any, b: Any) -> Any:
    """The code generator's float remainder: fmod, moved into the divisor's sign."""
    r = np.fmod(a, b)
    return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)[()]


def _logical_and(a: bool, b: bool) -> bool:
    return a and b


def _logical_or(a: bool, b: bool) -> bool:
    return a or b


def _for_kinds(ops: dict[type, Callable], *kinds: str) -> dict[tuple[type, str], Callable]:
    """Table entries giving each node class of `ops` the same function for every kind."""
    return {(cls, kind): fn for kind in kinds for cls, fn in ops.items()}


# float remainders compute the same on scalars and vectors
_FLOAT_REMAINDERS: dict[type, Callable[[Any, Any], Any]] = {
    E.Mod: np.fmod,  # C's fmod (LLVM frem)
    E.FloorDiv: lambda a, b: np.floor(a / b),
    E.FloorMod: _float_floor_mod,
}

# (node class, kind) -> scalar function; kind is "int" (also uint), "float" or "bool".
# Integer results are wrapped afterwards; comparisons return bool.
_SCALAR_BINARY: dict[tuple[type, str], Callable[[Any, Any], Any]] = {
    **_for_kinds({E.Add: operator.add, E.Sub: operator.sub, E.Mul: operator.mul}, "int", "float"),
    (E.Div, "int"): _trunc_div,
    (E.Mod, "int"): lambda a, b: a - _trunc_div(a, b) * b,
    (E.FloorDiv, "int"): operator.floordiv,
    (E.FloorMod, "int"): operator.mod,
    (E.Min, "int"): min,
    (E.Max, "int"): max,
    (E.Div, "float"): operator.truediv,
    **_for_kinds(_FLOAT_REMAINDERS, "float"),
    (E.Min, "float"): np.minimum,  # NaN propagates, as llvm.minimum
    (E.Max, "float"): np.maximum,
    **_for_kinds(
        {E.Min: _logical_and, E.Max: _logical_or, E.And: _logical_and, E.Or: _logical_or}, "bool"
    ),
}
_COMPARE = {
    E.EQ: operator.eq,
    E.NE: operator.ne,  # NaN != x is true, as in the code generator
    E.LT: operator.lt,
    E.LE: operator.le,
    E.GT: operator.gt,
    E.GE: operator.ge,
}
_VECTOR_BINARY: dict[tuple[type, str], Callable[[Any, Any], Any]] = {
    **_for_kinds(
        {
            E.Add: np.add,
            E.Sub: np.subtract,
            E.Mul: np.multiply,
            E.Min: np.minimum,
            E.Max: np.maximum,
        },
        "int",
        "float",
    ),
    (E.Div, "int"): _vec_trunc_div,
    (E.Mod, "int"): lambda a, b: a - _vec_trunc_div(a, b) * b,
    (E.FloorDiv, "int"): np.floor_divide,
    (E.FloorMod, "int"): np.mod,
    (E.Div, "float"): np.divide,
    **_for_kinds(_FLOAT_REMAINDERS, "float"),
    **_for_kinds(
        {E.Min: np.logical_and, E.Max: np.logical_or, E.And: np.logical_and, E.Or: np.logical_or},
        "bool",
    ),
}
_INT_DIVISIONS = (E.Div, E.Mod, E.FloorDiv, E.FloorMod)


def _kind(dtype: DataType) -> str:
    return "float" if dtype.is_float else "bool" if dtype.is_bool else "int"


def _erf(x: Any) -> Any:
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.asarray(x).dtype)[()]


# Intrinsics on numpy values (scalars or arrays); the result is coerced to the call's dtype.
_CALLS: dict[str, Callable[..., Any]] = {
    "tir.exp": np.exp,
    "tir.exp2": np.exp2,
    "tir.exp10": lambda x: np.power(x.dtype.type(10), x),
    "tir.log": np.log,
    "tir.log2": np.log2,
    "tir.log10": np.log10,
    "tir.log1p": np.log1p,
    "tir.sqrt": np.sqrt,
    "tir.rsqrt": lambda x: 1 / np.sqrt(x),
    "tir.tanh": np.tanh,
    "tir.sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tir.fabs": np.abs,
    "tir.floor": np.floor,
    "tir.ceil": np.ceil,
    "tir.round": np.round,  # half to even, as the code generator's llvm.roundeven
    "tir.nearbyint": np.rint,
    "tir.trunc": np.trunc,
    "tir.erf": _erf,
    "tir.sin": np.sin,
    "tir.cos": np.cos,
    "tir.tan": np.tan,
    "tir.sinh": np.sinh,
    "tir.cosh": np.cosh,
    "tir.asin": np.arcsin,
    "tir.acos": np.arccos,
    "tir.atan": np.arctan,
    "tir.atan2": np.arctan2,
    "tir.pow": np.power,
    "tir.fmod": np.fmod,
    "tir.copysign": np.copysign,
    "tir.fma": lambda a, b, c: a * b + c,
    "tir.isnan": np.isnan,
    "tir.isinf": np.isinf,
    "tir.isfinite": np.isfinite,
    "tir.likely": lambda x: x,
}
# Bitwise intrinsics on Python ints (scalars) or numpy integer arrays (vectors).
_BITWISE: dict[str, Callable[..., Any]] = {
    "tir.bitwise_and": lambda a, b: a & b,
    "tir.bitwise_or": lambda a, b: a | b,
    "tir.bitwise_xor": lambda a, b: a ^ b,
    "tir.bitwise_not": lambda a: ~a,
    "tir.shift_left": lambda a, b: a << b,
    "tir.shift_right": lambda a, b: a >> b,  # arithmetic for int, logical for uint
}
