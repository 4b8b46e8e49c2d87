"""T.macro (TVM's TIR macros): the body is pasted at each call with its arguments bound;
hygienic macros resolve other names where they were defined, non-hygienic ones at the call.
Also `*xs` inside list/tuple displays and `N, M = T.meta_var(...)`."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.script import tir as T


def test_macro_body_is_pasted_and_runs_like_the_hand_written_loop():
    @T.macro
    def scale(dst, src, i, factor=2.0):
        dst[i] = src[i] * T.float32(factor)

    @T.prim_func(private=True)
    def with_macro(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            scale(B, A, i)

    @T.prim_func(private=True)
    def by_hand(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = A[i] * T.float32(2.0)

    tvm.ir.assert_structural_equal(with_macro, by_hand)
    f = tvm.build(with_macro.with_attr("global_symbol", "f"), target="llvm")
    a = np.arange(8, dtype="float32")
    b = tvm.nd.empty((8,), "float32")
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * 2)


def test_hygienic_and_non_hygienic_name_resolution():
    k = 3

    @T.macro
    def hyg(A, B):
        B[()] = A[k]

    @T.macro(hygienic=False)
    def dyn(A, B):
        B[()] = A[k]

    @T.prim_func(private=True)
    def use(A: T.Buffer((16,), "int32"), B: T.Buffer((), "int32")):
        for k in range(5):
            hyg(A, B)
            dyn(A, B)

    @T.prim_func(private=True)
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((), "int32")):
        for k in range(5):
            B[()] = A[3]
            B[()] = A[k]

    tvm.ir.assert_structural_equal(use, expected)


def test_star_args_kwargs_and_meta_var_unpacking():
    dims = (4, 6)

    @T.macro
    def fill(buf, *idx, value):
        buf[idx[0], idx[1]] = value

    @T.prim_func(private=True)
    def use(A: T.Buffer((4, 6), "float32")):
        N, M = T.meta_var(dims)
        for i, j in T.grid(N, M):
            fill(A, *[i, j], value=T.float32(1))

    @T.prim_func(private=True)
    def expected(A: T.Buffer((4, 6), "float32")):
        for i, j in T.grid(4, 6):
            A[i, j] = T.float32(1)

    tvm.ir.assert_structural_equal(use, expected)


def test_macro_misuse_is_refused():
    with pytest.raises(ValueError, match="hygienic"):
        T.macro(True)

    @T.macro
    def two(a, b):
        T.evaluate(a + b)

    with pytest.raises(tvm.error.MiniTVMError, match="inside a @T.prim_func"):
        two(1, 2)
    with pytest.raises(tvm.error.ParseError, match="calling T.macro 'two'"):

        @T.prim_func(private=True)
        def bad():
            two(1)
