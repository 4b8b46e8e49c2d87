"""A 10,000-term sum parses, prints, simplifies and lowers at the default recursion limit
(issue 10: RecursionError on a 1,000-term sum)."""

import sys

from minitvm import te, tir
from minitvm.arith import Analyzer
from minitvm.script import from_source
from minitvm.tir.transform.pipeline import lower_primfunc

N = 10_000


def _source(n):
    terms = " + ".join(f"A[{i % 8}]" for i in range(n))
    return (
        "@T.prim_func\n"
        'def f(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "float32")):\n'
        f"    B[0] = {terms}\n"
    )


def test_ten_thousand_term_sum_parses_prints_and_lowers():
    limit = sys.getrecursionlimit()
    func = from_source(_source(N))
    text = func.script()
    assert text.count("A[") == N
    func = from_source(_source(N // 2))  # lowering is linear but slower: half the depth
    lowered = lower_primfunc(func)
    assert sys.getrecursionlimit() == limit  # raised only while IR was walked
    loads = []
    tir.post_order_visit(lowered.body, lambda n: loads.append(n) if isinstance(n, tir.BufferLoad) else None)
    assert len(loads) == N // 2


def test_deep_integer_sum_simplifies_and_te_lowers():
    x = tir.Var("x")
    e = x
    for _ in range(N):
        e = e + 1
    assert str(Analyzer().simplify(e - x)) == str(N)
    A = te.placeholder((8,), name="A")

    def body(i):
        acc = A[i]
        for k in range(N // 10):
            acc = acc + A[(i + k) % 8]
        return acc

    B = te.compute((8,), body, name="B")
    func = te.create_prim_func([A, B])
    assert lower_primfunc(func) is not None


def test_mutually_recursive_relax_functions_without_annotations_are_a_parse_error():
    import pytest

    from minitvm.error import ParseError

    src = """
@I.ir_module
class Mod:
    @R.function
    def f(x: R.Tensor((4,), "float32")):
        y = g(x)
        return y

    @R.function
    def g(x: R.Tensor((4,), "float32")):
        y = f(x)
        return y
"""
    with pytest.raises(ParseError, match=r"annotate the result of calling 'g'"):
        from_source(src)


def test_mutually_recursive_relax_functions_with_annotations_parse():
    src = """
@I.ir_module
class Mod:
    @R.function
    def f(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y: R.Tensor((4,), "float32") = g(x)
        return y

    @R.function
    def g(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y: R.Tensor((4,), "float32") = f(x)
        return y
"""
    mod = from_source(src)
    assert "cls.g(x)" in mod.script() and "cls.f(x)" in mod.script()
