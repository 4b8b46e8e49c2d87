"""TIR TVMScript names that TVM v0.19's unit tests and tutorials use: limits, `dtype=` on the
math intrinsics, `T.call_extern` in both argument orders, and `Buffer.access_ptr`.
Each is parsed, built and compared with numpy, and printed back and re-parsed."""

import numpy as np
import pytest

import minitvm
import minitvm.driver
from minitvm.error import ParseError
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T


def _run(func, *arrays):
    """Build `func` for llvm, run it on copies of `arrays`, return them as numpy."""
    lib = minitvm.driver.build(func, target="llvm")
    nds = [minitvm.nd.array(a) for a in arrays]
    lib[func.attrs["global_symbol"]](*nds)
    return [nd.numpy() for nd in nds]


def _roundtrip(func):
    again = from_source(func.script())
    assert_structural_equal(func, again)
    return again


@T.prim_func
def math_names(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    T.func_attr({"global_symbol": "math_names"})
    for i in range(8):
        with T.block("b"):
            vi = T.axis.spatial(8, i)
            B[vi] = (
                T.sqrt(T.exp(A[vi], dtype="float32"), dtype="float32")
                + T.round(A[vi], dtype="float32")
                + T.if_then_else(
                    T.likely(vi < 4, dtype="bool"), A[vi], T.float32(0), dtype="float32"
                )
                + T.max(T.min_value("float32"), T.float32(-1))
                + T.min(T.max_value("float32"), T.float32(1))
                + T.floor(T.abs(A[vi], dtype="float32"))
            )


def test_math_intrinsics_with_dtype_keyword_build_and_match_numpy():
    a = np.linspace(-2.2, 2.7, 8).astype("float32")
    _, b = _run(math_names, a, np.zeros(8, "float32"))
    want = (
        np.sqrt(np.exp(a))
        + np.round(a)
        + np.where(np.arange(8) < 4, a, 0)
        + 0
        + np.floor(np.abs(a))
    )
    np.testing.assert_allclose(b, want, rtol=1e-5)


def test_math_intrinsics_print_back_and_round_trip():
    text = math_names.script()
    for name in ("T.sqrt", "T.exp", "T.round", "T.likely", "T.if_then_else", "T.floor"):
        assert name in text
    _roundtrip(math_names)


@pytest.mark.parametrize(
    "dtype,lo,hi",
    [
        ("float32", -3.4028234663852886e38, 3.4028234663852886e38),
        ("float16", -65504.0, 65504.0),
        ("int8", -128, 127),
        ("uint16", 0, 65535),
        ("int64", -(2**63), 2**63 - 1),
    ],
)
def test_min_max_value_are_tvms_finite_limits(dtype, lo, hi):
    assert T.min_value(dtype).value == lo and T.max_value(dtype).value == hi
    assert str(T.min_value(dtype).dtype) == dtype


@T.prim_func
def limits(A: T.Buffer((4,), "float32"), B: T.Buffer((1,), "float32")):
    T.func_attr({"global_symbol": "limits"})
    for i in range(4):
        with T.block("m"):
            vi = T.axis.reduce(4, i)
            with T.init():
                B[0] = T.min_value("float32")
            B[0] = T.max(B[0], A[vi])


def test_min_value_as_reduction_init_builds_and_round_trips():
    a = np.array([-5.0, -7.0, -1.5, -9.0], "float32")
    _, b = _run(limits, a, np.zeros(1, "float32"))
    assert b[0] == a.max()
    again = _roundtrip(limits)
    _, b2 = _run(again, a, np.zeros(1, "float32"))
    assert b2[0] == a.max()


@T.prim_func
def externs(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "externs"})
    for i in range(4):
        with T.block("e"):
            vi = T.axis.spatial(4, i)
            B[vi] = T.call_extern("float32", "sqrtf", A[vi]) + T.call_extern(
                "fabsf", A[vi], dtype="float32"
            )


def test_call_extern_both_orders_typed_build_and_round_trip():
    a = np.array([1.0, 4.0, 9.0, 16.0], "float32")
    _, b = _run(externs, a, np.zeros(4, "float32"))
    np.testing.assert_allclose(b, np.sqrt(a) + np.abs(a), rtol=1e-6)
    again = _roundtrip(externs)
    call = again.body.block.body.body.block.body.value.a  # B[vi] = <this> + ...
    assert str(call.dtype) == "float32"


def test_call_extern_without_a_dtype_is_a_clear_error():
    with pytest.raises(ParseError, match="result dtype and the function name"):
        from_source(
            "@T.prim_func\n"
            'def f(A: T.Buffer((4,), "float32")):\n'
            '    A[0] = T.call_extern("sqrtf", A[1])\n'
        )


def test_dtype_keyword_that_disagrees_is_a_clear_error():
    with pytest.raises(
        ParseError, match=r"dtype='float64' was given but the call computes float32"
    ):
        from_source(
            "@T.prim_func\n"
            'def f(A: T.Buffer((4,), "float32")):\n'
            '    A[0] = T.exp(A[1], dtype="float64")\n'
        )


def test_buffer_access_ptr_is_tvms_access_ptr_call():
    func = from_source(
        "@T.prim_func\n"
        'def f(A: T.Buffer((4, 2), "float32")):\n'
        '    T.evaluate(T.call_extern("int32", "memset", A.access_ptr("w", offset=2), 0, 16))\n'
    )
    ptr = func.body.value.args[0]
    assert ptr.op.name == "tir.tvm_access_ptr"
    marker, data, start, extent, mask = ptr.args
    assert str(marker.dtype) == "float32" and data is func.buffer_map[func.params[0]].data
    assert (start.value, extent.value, mask.value) == (2, 6, 2)  # 8 elements from offset 2; "w"


def test_buffer_access_ptr_with_a_bad_mask_is_a_clear_parse_error():
    with pytest.raises(ParseError, match=r"A.access_ptr: access mask 'x' is not 'r', 'w' or 'rw'"):
        from_source(
            "@T.prim_func\n"
            'def f(A: T.Buffer((4,), "float32")):\n'
            '    T.evaluate(T.call_extern("int32", "memset", A.access_ptr("x"), 0, 16))\n'
        )


@T.prim_func
def more_names(A: T.Buffer((10,), "int32"), B: T.Buffer((10,), "float32")):
    T.func_attr({"global_symbol": "more_names"})
    n = T.meta_var(3)
    for i in range(10):
        with T.block("c"):
            vi = T.axis.spatial(10, i)
            B[vi] = T.cast(T.ceildiv(A[vi], n), "float32") + T.call_pure_extern(
                "float32", "fabsf", T.Cast("float32", A[vi])
            )


def test_cast_ceildiv_meta_var_and_call_pure_extern_build_and_round_trip():
    a = np.arange(-5, 5, dtype="int32")
    _, b = _run(more_names, a, np.zeros(10, "float32"))
    np.testing.assert_array_equal(b, -(-a // 3) + np.abs(a))
    again = _roundtrip(more_names)
    _, b2 = _run(again, a, np.zeros(10, "float32"))
    np.testing.assert_array_equal(b2, b)


def test_ceildiv_of_floats_is_a_clear_error():
    with pytest.raises(ParseError, match=r"T.ceildiv takes integers, got float32; for floats"):
        from_source(
            '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = T.ceildiv(A[1], A[2])\n'
        )
