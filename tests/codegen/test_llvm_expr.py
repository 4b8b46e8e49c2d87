"""LLVM codegen of expressions: every operator × dtype family, casts, intrinsics — vs numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from codegen_harness import aligned_copy, build_and_load, elementwise, run_elementwise
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minitvm import tir
from minitvm.tir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Select,
    Sub,
    Var,
)

RNG = np.random.default_rng(0)
N = 16


def _operands(dtype: str, nonzero_b: bool = False) -> tuple[np.ndarray, np.ndarray]:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = RNG.uniform(-10, 10, N).astype(dt)
        b = RNG.uniform(-10, 10, N).astype(dt)
        b[np.abs(b) < 0.5] = 1.5
    else:
        info = np.iinfo(dt)
        lo, hi = max(info.min + 1, -100), min(info.max, 100)
        a = RNG.integers(lo, hi, N).astype(dt)
        b = RNG.integers(lo, hi, N).astype(dt)
        if nonzero_b:
            b[b == 0] = 3
    return a, b


def _trunc_div(a, b):
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (q * np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64))).astype(a.dtype)


def _trunc_mod(a, b):
    return (a.astype(np.int64) - _trunc_div(a, b).astype(np.int64) * b.astype(np.int64)).astype(
        a.dtype
    )


ARITH = {
    Add: np.add,
    Sub: np.subtract,
    Mul: np.multiply,
    Min: np.minimum,
    Max: np.maximum,
}
FLOAT_DTYPES = ["float32", "float64"]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("op", list(ARITH), ids=lambda c: c.__name__)
def test_arith_matches_numpy(op, dtype):
    a, b = _operands(dtype)
    out = run_elementwise(lambda x, y: op(x, y), [a, b], dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(out, ARITH[op](a, b), rtol=1e-6)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_div_mod_truncate_like_c(dtype):
    a, b = _operands(dtype, nonzero_b=True)
    np.testing.assert_array_equal(run_elementwise(Div, [a, b], dtype), _trunc_div(a, b))
    np.testing.assert_array_equal(run_elementwise(Mod, [a, b], dtype), _trunc_mod(a, b))


@pytest.mark.parametrize(
    "dtype", ["int8", "int32", "int64", "uint8", "uint32", "float32", "float64"]
)
def test_floordiv_floormod_negative_operands_match_numpy(dtype):
    a, b = _operands(dtype, nonzero_b=True)
    if np.dtype(dtype).kind == "i":
        a[:4], b[:4] = [-7, 7, -7, 7], [2, -2, -2, 2]
    np.testing.assert_allclose(
        run_elementwise(FloorDiv, [a, b], dtype), np.floor_divide(a, b), rtol=1e-6
    )
    np.testing.assert_allclose(
        run_elementwise(FloorMod, [a, b], dtype), np.mod(a, b), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("divisor", [1, 2, 8, 3, -4])
def test_floordiv_by_constants_matches_numpy(divisor):
    a = np.arange(-20, 12, dtype="int32")
    d = np.int32(divisor)
    out_div = run_elementwise(lambda x: tir.floordiv(x, tir.const(divisor, "int32")), [a], "int32")
    out_mod = run_elementwise(lambda x: tir.floormod(x, tir.const(divisor, "int32")), [a], "int32")
    np.testing.assert_array_equal(out_div, a // d)
    np.testing.assert_array_equal(out_mod, a % d)


def test_float_div_is_true_division():
    a, b = _operands("float32")
    np.testing.assert_allclose(run_elementwise(Div, [a, b], "float32"), a / b, rtol=1e-6)


CMP = {
    EQ: np.equal,
    NE: np.not_equal,
    LT: np.less,
    LE: np.less_equal,
    GT: np.greater,
    GE: np.greater_equal,
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "uint8", "uint64"])
@pytest.mark.parametrize("op", list(CMP), ids=lambda c: c.__name__)
def test_comparisons_match_numpy(op, dtype):
    a, b = _operands(dtype)
    b[:3] = a[:3]  # some equal pairs
    out = run_elementwise(op, [a, b], "bool")
    np.testing.assert_array_equal(out, CMP[op](a, b))


def test_float_comparisons_with_nan_follow_numpy():
    a = np.array([np.nan, 1.0, np.nan, 2.0] * 4, "float32")
    b = np.array([1.0, np.nan, np.nan, 2.0] * 4, "float32")
    for op, ref in CMP.items():
        np.testing.assert_array_equal(
            run_elementwise(op, [a, b], "bool"), ref(a, b), err_msg=op.__name__
        )


def test_float_min_max_propagate_nan_like_numpy():
    a = np.array([np.nan, 1.0, 3.0, -2.0] * 4, "float32")
    b = np.array([1.0, np.nan, 2.0, 5.0] * 4, "float32")
    np.testing.assert_array_equal(run_elementwise(Max, [a, b], "float32"), np.maximum(a, b))
    np.testing.assert_array_equal(run_elementwise(Min, [a, b], "float32"), np.minimum(a, b))


def test_logical_and_or_not_on_bool():
    a = RNG.integers(0, 2, N).astype(bool)
    b = RNG.integers(0, 2, N).astype(bool)
    np.testing.assert_array_equal(run_elementwise(And, [a, b], "bool"), a & b)
    np.testing.assert_array_equal(run_elementwise(Or, [a, b], "bool"), a | b)
    np.testing.assert_array_equal(run_elementwise(lambda x: Not(x), [a], "bool"), ~a)


def test_bool_buffer_bytes_other_than_one_are_true():
    raw = np.array([0, 1, 2, 255] * 4, dtype=np.uint8).view(np.bool_)
    out = run_elementwise(
        lambda x: Select(x, tir.const(1, "int32"), tir.const(0, "int32")), [raw], "int32"
    )
    np.testing.assert_array_equal(out, [0, 1, 1, 1] * 4)


def test_select_and_let():
    a, b = _operands("float32")
    v = Var("t", "float32")
    out = run_elementwise(lambda x, y: Let(v, x * y, Select(v > 0.0, v, -v)), [a, b], "float32")
    np.testing.assert_allclose(out, np.abs(a * b), rtol=1e-6)


# --------------------------------------------------------------------------- casts

ALL_DTYPES = ["bool", "float16", "float32", "float64", *INT_DTYPES]


def _cast_source(src: str, dst: str) -> np.ndarray:
    """Values representable in both dtypes (float → int uses fractions to check truncation)."""
    s, d = np.dtype(src), np.dtype(dst)
    if s.kind == "b":
        return np.array([True, False] * (N // 2))
    lo, hi = -100, 100
    for dt in (s, d):
        if dt.kind == "u":
            lo = 0
        if dt.itemsize == 1 and dt.kind != "b":
            hi = min(hi, 100)
    vals = RNG.integers(lo, hi, N).astype(np.float64)
    if s.kind == "f":
        vals = vals + RNG.uniform(0, 0.9, N) * (1 if lo == 0 else np.sign(vals + 0.5))
    vals[0] = 0
    return vals.astype(s)


@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_casts_between_all_dtypes_match_numpy(src, dst):
    a = _cast_source(src, dst)
    out = run_elementwise(lambda x: Cast(dst, x), [a], dst)
    expected = a.astype(np.dtype(dst))
    if np.dtype(dst).kind == "f":
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64), rtol=1e-3)
    else:
        np.testing.assert_array_equal(out, expected)


def test_float_to_bool_treats_nan_as_true():
    a = np.array([0.0, -0.0, np.nan, 0.5] * 4, "float32")
    np.testing.assert_array_equal(
        run_elementwise(lambda x: Cast("bool", x), [a], "bool"), a.astype(bool)
    )


def test_float16_storage_arithmetic_matches_numpy():
    a = RNG.uniform(-4, 4, N).astype("float16")
    b = RNG.uniform(-4, 4, N).astype("float16")
    out = run_elementwise(lambda x, y: x * y + x, [a, b], "float16")
    np.testing.assert_allclose(out.astype(np.float32), (a * b + a).astype(np.float32), rtol=2e-3)
    out = run_elementwise(tir.exp, [a], "float16")
    np.testing.assert_allclose(out.astype(np.float32), np.exp(a).astype(np.float32), rtol=2e-3)


# --------------------------------------------------------------------------- intrinsics


def _positive(dtype):
    return RNG.uniform(0.1, 5.0, N).astype(dtype)


def _signed(dtype):
    return RNG.uniform(-3.0, 3.0, N).astype(dtype)


def _unit(dtype):
    return RNG.uniform(-0.95, 0.95, N).astype(dtype)


_erf = np.vectorize(math.erf)
UNARY = {
    "exp": (tir.exp, np.exp, _signed),
    "exp2": (tir.exp2, np.exp2, _signed),
    "exp10": (tir.exp10, lambda x: np.power(x.dtype.type(10), x), _signed),
    "log": (tir.log, np.log, _positive),
    "log2": (tir.log2, np.log2, _positive),
    "log10": (tir.log10, np.log10, _positive),
    "log1p": (tir.log1p, np.log1p, _positive),
    "sqrt": (tir.sqrt, np.sqrt, _positive),
    "rsqrt": (tir.rsqrt, lambda x: 1 / np.sqrt(x), _positive),
    "tanh": (tir.tanh, np.tanh, _signed),
    "sigmoid": (tir.sigmoid, lambda x: 1 / (1 + np.exp(-x)), _signed),
    "erf": (tir.erf, lambda x: _erf(x).astype(x.dtype), _signed),
    "abs": (tir.abs, np.abs, _signed),
    "floor": (tir.floor, np.floor, _signed),
    "ceil": (tir.ceil, np.ceil, _signed),
    "round": (
        tir.round,
        np.round,
        lambda dt: np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4] * 3, dt)[:N],
    ),
    "trunc": (tir.trunc, np.trunc, _signed),
    "sin": (tir.sin, np.sin, _signed),
    "cos": (tir.cos, np.cos, _signed),
    "tan": (tir.tan, np.tan, _unit),
    "sinh": (tir.sinh, np.sinh, _signed),
    "cosh": (tir.cosh, np.cosh, _signed),
    "asin": (tir.asin, np.arcsin, _unit),
    "acos": (tir.acos, np.arccos, _unit),
    "atan": (tir.atan, np.arctan, _signed),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_intrinsics_match_numpy(name, dtype):
    make, ref, gen = UNARY[name]
    a = gen(dtype)
    np.testing.assert_allclose(run_elementwise(make, [a], dtype), ref(a), rtol=1e-5, atol=1e-7)


BINARY_MATH = {
    "pow": (tir.power, np.power),
    "atan2": (tir.atan2, np.arctan2),
    "fmod": (tir.fmod, np.fmod),
    "copysign": (tir.copysign, np.copysign),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(BINARY_MATH))
def test_binary_intrinsics_match_numpy(name, dtype):
    make, ref = BINARY_MATH[name]
    a, b = _positive(dtype), _signed(dtype)
    np.testing.assert_allclose(run_elementwise(make, [a, b], dtype), ref(a, b), rtol=1e-5)


def test_fma_matches_numpy():
    a, b, c = _signed("float64"), _signed("float64"), _signed("float64")
    np.testing.assert_allclose(
        run_elementwise(tir.fma, [a, b, c], "float64"), a * b + c, rtol=1e-12
    )


@pytest.mark.parametrize(
    "name,ref", [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]
)
def test_float_classification(name, ref):
    a = np.array([0.0, np.nan, np.inf, -np.inf, 1.0, -2.0, np.nan, 3.0] * 2, "float32")
    np.testing.assert_array_equal(run_elementwise(getattr(tir, name), [a], "bool"), ref(a))


def test_bitwise_and_shift_intrinsics():
    a = RNG.integers(-1000, 1000, N).astype("int32")
    b = RNG.integers(0, 8, N).astype("int32")
    cases = {
        "bitwise_and": np.bitwise_and,
        "bitwise_or": np.bitwise_or,
        "bitwise_xor": np.bitwise_xor,
        "shift_left": np.left_shift,
        "shift_right": np.right_shift,
    }
    for name, ref in cases.items():
        out = run_elementwise(
            lambda x, y, name=name: tir.call_intrin("int32", name, x, y), [a, b], "int32"
        )
        np.testing.assert_array_equal(out, ref(a, b), err_msg=name)
    out = run_elementwise(lambda x: tir.call_intrin("int32", "bitwise_not", x), [a], "int32")
    np.testing.assert_array_equal(out, ~a)


def test_shift_right_is_logical_for_unsigned():
    a = np.array([0xF0000000, 8, 0xFFFFFFFF, 1] * 4, "uint32")
    b = np.full(N, 4, "uint32")
    out = run_elementwise(
        lambda x, y: tir.call_intrin("uint32", "shift_right", x, y), [a, b], "uint32"
    )
    np.testing.assert_array_equal(out, a >> b)


def test_likely_hint_keeps_condition_value():
    a, b = _operands("int32")
    out = run_elementwise(lambda x, y: Select(tir.likely(x < y), x, y), [a, b], "int32")
    np.testing.assert_array_equal(out, np.minimum(a, b))


def test_extern_call_by_symbol_name():
    a = _signed("float64")
    out = run_elementwise(lambda x: tir.call_extern("float64", "cbrt", x), [a], "float64")
    np.testing.assert_allclose(out, np.cbrt(a), rtol=1e-12)


# --------------------------------------------------------------------------- properties


@pytest.fixture(scope="module")
def floor_kernels():
    funcs = [
        elementwise("fdiv", ["int32", "int32"], "int32", FloorDiv, N),
        elementwise("fmod", ["int32", "int32"], "int32", FloorMod, N),
    ]
    return build_and_load(*funcs)


_INT32 = st.integers(-(2**31) + 1, 2**31 - 1)


@settings(max_examples=60, deadline=None)
@given(
    a=hnp.arrays(np.int32, N, elements=_INT32),
    b=hnp.arrays(np.int32, N, elements=_INT32.filter(lambda v: v != 0)),
)
def test_floordiv_floormod_property_matches_numpy(floor_kernels, a, b):
    for name, ref in (("fdiv", np.floor_divide), ("fmod", np.mod)):
        out = aligned_copy(np.zeros(N, "int32"))
        assert floor_kernels(name, aligned_copy(a), aligned_copy(b), out) == 0
        np.testing.assert_array_equal(out, ref(a, b), err_msg=name)


# --------------------------------------------------------------------------- dtype errors


@pytest.mark.parametrize(
    "make,dtype,match",
    [
        (
            lambda x: tir.call_intrin("float32", "bitwise_and", x, x),
            "float32",
            r"tir.bitwise_and is not defined for a float32 result \(it takes bool or int or uint\)",
        ),
        (
            lambda x: tir.call_intrin("bool", "floor", x),
            "bool",
            r"tir.floor is not defined for a bool result \(it takes float\)",
        ),
        (
            lambda x: Cast("float32", tir.call_intrin("int32", "shift_left", x, x)),
            "float32",
            r"tir.shift_left is not defined for a float32 argument 0",
        ),
    ],
)
def test_intrinsic_on_unsupported_dtype_is_build_error_not_invalid_ir(make, dtype, match):
    from minitvm.error import BuildError

    with pytest.raises(BuildError, match=match):
        run_elementwise(make, [np.ones(N, dtype)], "float32" if dtype == "float32" else "bool")


def test_cast_to_handle_is_build_error():
    from minitvm.error import BuildError

    with pytest.raises(BuildError, match="cannot cast handle to float32"):
        run_elementwise(
            lambda x: Cast("float32", Cast("handle", x)),
            [np.ones(N, "float32")],
            "float32",
        )
