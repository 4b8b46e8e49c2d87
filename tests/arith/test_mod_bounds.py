"""can_prove bounds floormod terms by their divisor: `x % m < m` and the split of a fused
symbolic loop, checked by enumeration over small symbolic values (the oracle), and never a
proof of something false (hypothesis)."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from minitvm import tir
from minitvm.arith import Analyzer


def _vars():
    return [tir.Var(n, "int64") for n in ("a", "b", "x", "j")]


def test_split_of_a_fused_symbolic_loop_is_proven_in_range():
    a, b, x, j = _vars()
    ana = Analyzer()
    ana.bind(j, tir.Range.from_min_extent(tir.const(0, "int64"), tir.const(16, "int64")))
    m = a * b * tir.const(2, "int64")
    e = tir.floormod(x, m) * tir.const(16, "int64") + j
    with ana.constraint_scope(tir.all(a > 0, b > 0)):
        assert ana.can_prove(tir.floormod(x, m) < m)
        assert ana.can_prove(e < a * b * tir.const(32, "int64"))
        assert not ana.can_prove(e < a * b * tir.const(32, "int64") - tir.const(1, "int64"))
    assert not ana.can_prove(tir.floormod(x, m) < m)  # m may be 0 (or negative): no proof


@settings(max_examples=60, deadline=None)
@given(
    c=st.integers(-4, 4),
    k=st.integers(-40, 40),
    d=st.integers(-3, 3),
    op=st.sampled_from(["lt", "le", "gt", "ge"]),
)
def test_never_proves_a_false_comparison(c, k, d, op):
    """c * (x % m) + d * m + k  <op>  0 with m > 0: whenever can_prove says yes, every
    x in [-20, 20) and m in [1, 7) satisfies it."""
    a, _, x, _ = _vars()
    ana = Analyzer()
    m = a
    lhs = tir.floormod(x, m) * tir.const(c, "int64") + m * tir.const(d, "int64") + tir.const(
        k, "int64"
    )
    zero = tir.const(0, "int64")
    cond = {"lt": lhs < zero, "le": lhs <= zero, "gt": lhs > zero, "ge": lhs >= zero}[op]
    with ana.constraint_scope(a > 0):
        proven = ana.can_prove(cond)
    if proven:
        for xv, mv in itertools.product(range(-20, 20), range(1, 7)):
            v = c * (xv % mv) + d * mv + k
            assert {"lt": v < 0, "le": v <= 0, "gt": v > 0, "ge": v >= 0}[op], (xv, mv)


def test_a_term_under_a_division_is_not_bounded_linearly():
    """(x % m + r) // 16 is not affine in x % m: bounding it by m - 1 would be unsound (the
    padding guard of a conv kernel was dropped this way before the check was syntactic)."""
    a, _, x, _ = _vars()
    r = tir.Var("r", "int64")
    ana = Analyzer()
    ana.bind(r, tir.Range.from_min_extent(tir.const(0, "int64"), tir.const(3, "int64")))
    m = a
    e = tir.floordiv(tir.floormod(x, m) + r, tir.const(2, "int64"))
    with ana.constraint_scope(a > 0):
        assert not ana.can_prove(e < tir.const(1, "int64"))


@settings(max_examples=80, deadline=None)
@given(
    shape=st.sampled_from(["div", "min", "max", "mul_m", "plain"]),
    c=st.integers(-3, 3),
    q=st.integers(1, 4),
    k=st.integers(-12, 12),
    op=st.sampled_from(["lt", "le"]),
)
def test_never_proves_false_with_the_term_under_other_operations(shape, c, q, k, op):
    """The floormod term inside a division, min, max or a symbolic product: whatever can_prove
    says yes to holds for every x in [-20, 20) and m in [1, 7) (enumeration is the oracle)."""
    a, _, x, _ = _vars()
    ana = Analyzer()
    m, t = a, tir.floormod(x, a)
    Q, K, C = (tir.const(v, "int64") for v in (q, k, c))
    inner = {
        "div": tir.floordiv(t + K, Q),
        "min": tir.min(t, K),
        "max": tir.max(t, K),
        "mul_m": t * m,
        "plain": t,
    }[shape]
    lhs = inner * C - m
    py = {
        "div": lambda tv, mv: (tv + k) // q,
        "min": lambda tv, mv: min(tv, k),
        "max": lambda tv, mv: max(tv, k),
        "mul_m": lambda tv, mv: tv * mv,
        "plain": lambda tv, mv: tv,
    }[shape]
    zero = tir.const(0, "int64")
    with ana.constraint_scope(a > 0):
        proven = ana.can_prove(lhs < zero if op == "lt" else lhs <= zero)
    if proven:
        for xv, mv in itertools.product(range(-20, 20), range(1, 7)):
            v = py(xv % mv, mv) * c - mv
            assert (v < 0) if op == "lt" else (v <= 0), (shape, xv, mv)
