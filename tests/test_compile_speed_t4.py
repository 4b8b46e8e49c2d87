"""Cold-build speed-ups that must not change what is built (issue 31): the code generator's
pre-emission checks walk less of the IR; their oracle is the generic Visitor walk they replace
(the same statements in the same order) and the dtypes the functions are written with.
"""

from minitvm import te
from minitvm.codegen.llvm_legalize import _mentions_low_float
from minitvm.codegen.llvm_packed import _statements_post_order
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Stmt


def _func(dtype: str, cast_to: str | None = None):
    a = te.placeholder((8,), dtype, name="A")
    if cast_to is None:
        b = te.compute((8,), lambda i: a[i] * 2, name="B")
    else:  # a float32 function that rounds through `cast_to` in its body only
        b = te.compute((8,), lambda i: (a[i] * 2).astype(cast_to).astype(dtype), name="B")
    return te.create_prim_func([a, b])


def test_low_float_is_found_in_buffers_and_in_casts():
    assert not _mentions_low_float(_func("float32"))
    assert _mentions_low_float(_func("bfloat16"))
    assert _mentions_low_float(_func("float32", cast_to="bfloat16"))
    assert _mentions_low_float(_func("float32", cast_to="float8_e4m3fn"))


def test_statement_walk_matches_the_visitor():
    a = te.placeholder((16, 16), "float32", name="A")
    b = te.compute((16, 16), lambda i, j: a[i, j] + 1, name="B")
    c = te.compute((16, 16), lambda i, j: b[i, j] * 2, name="C")
    func = te.create_prim_func([a, c])
    expected: list = []
    post_order_visit(func.body, lambda n: expected.append(n) if isinstance(n, Stmt) else None)
    got = list(_statements_post_order(func.body))
    assert len(got) == len(expected) > 4
    assert all(g is e for g, e in zip(got, expected))
