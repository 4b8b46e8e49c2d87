"""The scalar semantics of the reference interpreter: integer wrapping, truncating and flooring
division, numpy dtypes, comparisons and the intrinsic calls (tir.exp, ...), each as numpy
exactly as the compiler computes it."""

from __future__ import annotations

import math
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


# (node class, kind) -> scalar function; kind is "int" (also uint), "float" or "bool".
# Integer results are wrapped afterwards; comparisons return bool.
_SCALAR_BINARY: dict[tuple[type, str], Callable[[Any, Any], Any]] = {
    (E.Add, "int"): lambda a, b: a + b,
    (E.Sub, "int"): lambda a, b: a - b,
    (E.Mul, "int"): lambda a, b: a * b,
    (E.Div, "int"): _trunc_div,
    (E.Mod, "int"): lambda a, b: a - _trunc_div(a, b) * b,
    (E.FloorDiv, "int"): lambda a, b: a // b,
    (E.FloorMod, "int"): lambda a, b: a % b,
    (E.Min, "int"): min,
    (E.Max, "int"): max,
    (E.Add, "float"): lambda a, b: a + b,
    (E.Sub, "float"): lambda a, b: a - b,
    (E.Mul, "float"): lambda a, b: a * b,
    (E.Div, "float"): lambda a, b: a / b,
    (E.Mod, "float"): np.fmod,  # C's fmod (LLVM frem)
    (E.FloorDiv, "float"): lambda a, b: np.floor(a / b),
    (E.FloorMod, "float"): _float_floor_mod,
    (E.Min, "float"): np.minimum,  # NaN propagates, as llvm.minimum
    (E.Max, "float"): np.maximum,
    (E.Min, "bool"): lambda a, b: a and b,
    (E.Max, "bool"): lambda a, b: a or b,
    (E.And, "bool"): lambda a, b: a and b,
    (E.Or, "bool"): lambda a, b: a or b,
}
_COMPARE = {
    E.EQ: lambda a, b: a == b,
    E.NE: lambda a, b: a != b,  # NaN != x is true, as in the code generator
    E.LT: lambda a, b: a < b,
    E.LE: lambda a, b: a <= b,
    E.GT: lambda a, b: a > b,
    E.GE: lambda a, b: a >= b,
}
_VECTOR_BINARY: dict[tuple[type, str], Callable[[Any, Any], Any]] = {
    (E.Add, "int"): np.add,
    (E.Sub, "int"): np.subtract,
    (E.Mul, "int"): np.multiply,
    (E.Div, "int"): _vec_trunc_div,
    (E.Mod, "int"): lambda a, b: a - _vec_trunc_div(a, b) * b,
    (E.FloorDiv, "int"): np.floor_divide,
    (E.FloorMod, "int"): np.mod,
    (E.Min, "int"): np.minimum,
    (E.Max, "int"): np.maximum,
    (E.Add, "float"): np.add,
    (E.Sub, "float"): np.subtract,
    (E.Mul, "float"): np.multiply,
    (E.Div, "float"): np.divide,
    (E.Mod, "float"): np.fmod,
    (E.FloorDiv, "float"): lambda a, b: np.floor(a / b),
    (E.FloorMod, "float"): _float_floor_mod,
    (E.Min, "float"): np.minimum,
    (E.Max, "float"): np.maximum,
    (E.Min, "bool"): np.logical_and,
    (E.Max, "bool"): np.logical_or,
    (E.And, "bool"): np.logical_and,
    (E.Or, "bool"): np.logical_or,
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
