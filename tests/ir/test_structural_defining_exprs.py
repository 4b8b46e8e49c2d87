"""A var first named inside an expression in a defining position (a buffer's shape `(5 * n,)`)
is defined there: printed and parsed back, the function is structurally equal and hashes the
same (kernel caches and the parse-back check rely on both)."""

import minitvm as tvm
from minitvm.ir import assert_structural_equal, structural_equal, structural_hash
from minitvm.script import tir as T


@T.prim_func
def _reshape_like(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (5 * n,))
    B = T.match_buffer(b, (n, 5))
    for i, j in T.grid(n, 5):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi * 5 + vj]


@T.prim_func
def _other_factor(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (4 * n,))
    B = T.match_buffer(b, (n, 5))
    for i, j in T.grid(n, 5):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi * 5 + vj]


def test_shape_expression_defines_its_var_for_equality_and_hash():
    again = tvm.script.from_source(_reshape_like.script())
    assert_structural_equal(_reshape_like, again)
    assert structural_hash(_reshape_like) == structural_hash(again)


def test_shape_expressions_still_differ_when_they_differ():
    assert not structural_equal(_reshape_like, _other_factor)
    assert structural_hash(_reshape_like) != structural_hash(_other_factor)


def test_free_var_in_a_plain_expression_is_still_free():
    n, m = tvm.tir.Var("n", "int64"), tvm.tir.Var("m", "int64")
    assert not structural_equal(n * 5, m * 5)
    assert structural_equal(n * 5, m * 5, map_free_vars=True)
