"""Lowering to the readable loop nest (`tvm.lower`), written as TVMScript before/expected pairs."""

import numpy as np
from minitvm.testing import run_prim_func

from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.tir.transform import lower_primfunc


def _check(before, expected):
    out = lower_primfunc(before, flatten=False)
    assert_structural_equal(out.replace(attrs=expected.attrs), expected)
    return out


def test_split_elementwise_divisible_guard_disappears():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for io, ii in T.grid(4, 4):
            with T.block("B"):
                v = T.axis.spatial(16, io * 4 + ii)
                T.where(io * 4 + ii < 16)
                B[v] = A[v] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for io, ii in T.grid(4, 4):
            B[io * 4 + ii] = A[io * 4 + ii] + T.float32(1)

    _check(before, expected)


def test_non_divisible_split_keeps_a_likely_guard():
    @T.prim_func
    def before(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
        for io, ii in T.grid(4, 4):
            with T.block("B"):
                v = T.axis.spatial(14, io * 4 + ii)
                T.where(io * 4 + ii < 14)
                B[v] = A[v] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
        for io, ii in T.grid(4, 4):
            if T.likely(io * 4 + ii < 14):
                B[io * 4 + ii] = A[io * 4 + ii] + T.float32(1)

    out = _check(before, expected)
    a = np.arange(14, dtype="float32")
    np.testing.assert_array_equal(run_prim_func(out, a, a * 0)[1], a + 1)


def test_matmul_init_is_hoisted_out_of_the_reduction_loop():
    @T.prim_func
    def before(
        A: T.Buffer((4, 3), "float32"),
        B: T.Buffer((3, 5), "float32"),
        C: T.Buffer((4, 5), "float32"),
    ):
        for i, j, k in T.grid(4, 5, 3):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def expected(
        A: T.Buffer((4, 3), "float32"),
        B: T.Buffer((3, 5), "float32"),
        C: T.Buffer((4, 5), "float32"),
    ):
        for i, j in T.grid(4, 5):
            C[i, j] = T.float32(0)
            for k in range(3):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]

    _check(before, expected)


def test_script_of_lowered_function_parses_back_equal():
    @T.prim_func
    def before(A: T.Buffer((4, 3), "float32"), S: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 3):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]

    from minitvm.script import from_source

    out = lower_primfunc(before, flatten=False)
    assert_structural_equal(from_source(out.script()), out)
