"""Expressions refuse dtypes LLVM cannot compile when they are built (issue 10, worst errors)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.error import DTypeError


@pytest.mark.parametrize(
    "build, symbol",
    [
        (lambda a, b: a & b, "&"),
        (lambda a, b: a | b, "|"),
        (lambda a, b: a ^ b, "^"),
        (lambda a, b: a << b, "<<"),
        (lambda a, b: a >> b, ">>"),
        (lambda a, b: tir.bitwise_and(a, b), "&"),
    ],
)
def test_bitwise_on_floats_is_a_dtype_error_naming_the_operator(build, symbol):
    A = te.placeholder((4,), name="A")
    B = te.placeholder((4,), name="B")
    with pytest.raises(
        DTypeError,
        match=rf"bitwise '{__import__('re').escape(symbol)}' needs integer.*got float32 and "
        r"float32 in `A\[i\] .* B\[i\]`; cast with .astype\('int32'\)",
    ):
        te.compute((4,), lambda i: build(A[i], B[i]), name="C")


def test_invert_of_a_float_is_a_dtype_error():
    A = te.placeholder((4,), name="A")
    with pytest.raises(DTypeError, match=r"bitwise '~' needs integer or bool operands, got float32"):
        te.compute((4,), lambda i: ~A[i], name="C")


def test_shift_of_bools_is_refused_but_logic_on_bools_works():
    x = tir.Var("x", "bool")
    with pytest.raises(DTypeError, match="bitwise '<<' needs integer operands, got bool"):
        _ = x << x
    assert isinstance(x & x, tir.And) and isinstance(~x, tir.Not)


def test_bitwise_ops_on_integers_match_numpy():
    A = te.placeholder((16,), dtype="int32", name="A")
    B = te.placeholder((16,), dtype="int32", name="B")
    ops = [
        lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b,
        lambda a, b: a << (b & 7), lambda a, b: a >> (b & 7), lambda a, b: ~a,
    ]
    refs = [
        np.bitwise_and, np.bitwise_or, np.bitwise_xor,
        lambda a, b: a << (b & 7), lambda a, b: a >> (b & 7), lambda a, b: ~a,
    ]
    rng = np.random.default_rng(0)
    a = rng.integers(-1000, 1000, 16).astype("int32")
    b = rng.integers(-1000, 1000, 16).astype("int32")
    for op, ref in zip(ops, refs):
        C = te.compute((16,), lambda i: op(A[i], B[i]), name="C")
        f = tvm.build(te.create_schedule(C.op), [A, B, C], "llvm")
        c = np.zeros(16, "int32")
        f(a, b, c)
        np.testing.assert_array_equal(c, ref(a, b))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint16"])
@pytest.mark.parametrize("fn", ["floor", "ceil", "round", "trunc", "nearbyint"])
def test_rounding_an_integer_or_bool_returns_it_unchanged(fn, dtype):
    A = te.placeholder((8,), dtype=dtype, name="A")
    C = te.compute((8,), lambda i: getattr(te, fn)(A[i]), name="C")
    assert C.dtype == dtype
    f = tvm.build(te.create_schedule(C.op), [A, C], "llvm")
    a = (np.arange(8) % 2).astype(dtype)
    c = np.zeros(8, dtype)
    f(a, c)
    np.testing.assert_array_equal(c, a)


@pytest.mark.parametrize("dtype", ["bool", "int32"])
def test_transcendental_of_an_integer_computes_in_float32(dtype):
    A = te.placeholder((8,), dtype=dtype, name="A")
    C = te.compute((8,), lambda i: te.exp(A[i]) + te.sqrt(A[i]), name="C")
    assert C.dtype == "float32"
    f = tvm.build(te.create_schedule(C.op), [A, C], "llvm")
    a = (np.arange(8) % 2).astype(dtype)
    c = np.zeros(8, "float32")
    f(a, c)
    ref = np.exp(a.astype("float32")) + np.sqrt(a.astype("float32"))
    np.testing.assert_allclose(c, ref, rtol=1e-6)


def test_float_class_predicates_of_integers_are_constants():
    x = tir.Var("x", "int32")
    assert tir.isnan(x).value == 0 and tir.isinf(x).value == 0 and tir.isfinite(x).value == 1
    y = tir.Var("y", "int32")
    assert not isinstance(tir.fma(x, y, 1), tir.Call)


def test_constants_that_do_not_fit_their_dtype_are_dtype_errors():
    with pytest.raises(DTypeError, match=r"constant 1000.*\(401 digits\) does not fit float32"):
        tir.const(10**400, "float32")
    with pytest.raises(DTypeError, match=r"constant 1e\+39 does not fit float32.*float64"):
        tir.const(1e39, "float32")
    with pytest.raises(DTypeError, match=r"constant 1099511627776 does not fit in int32 .*int64"):
        tir.const(2**40, "int32")
    A = te.placeholder((4,), name="A")
    with pytest.raises(DTypeError, match="does not fit float32"):
        te.compute((4,), lambda i: A[i] * 10**400, name="C")
    assert tir.const(float("inf"), "float16").value == float("inf")
    assert tir.const(3.4028235e38, "float32").value == pytest.approx(3.4028235e38)
    assert tir.const(10**300, "float64").value == 1e300
