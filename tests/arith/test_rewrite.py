"""Rule families of the simplifier, checked structurally."""

import pytest

from minitvm import arith, tir
from minitvm.ir import structural_equal
from minitvm.tir import const

x, y, z = tir.Var("x"), tir.Var("y"), tir.Var("z")
io, ii = tir.Var("io"), tir.Var("ii")
n = tir.SizeVar("n")
i, j = tir.Var("i"), tir.Var("j")
b = tir.Var("b", "bool")


def _ana():
    ana = arith.Analyzer()
    ana.bind(io, tir.Range.from_min_extent(0, 32))
    ana.bind(ii, tir.Range.from_min_extent(0, 32))
    ana.bind(j, tir.Range.from_min_extent(0, n))
    return ana


def check(expr, expected, ana=None):
    out = (ana or _ana()).simplify(expr)
    expected = tir.const(expected) if isinstance(expected, bool | int) else expected
    assert structural_equal(out, expected), f"simplify({expr}) = {out}, expected {expected}"
    assert out.dtype == expected.dtype


# --- constant folding ----------------------------------------------------------------------
FOLD_CASES = [
    (tir.Div(const(7), const(-2)), -3),  # C truncation
    (tir.Mod(const(-7), const(2)), -1),
    (tir.FloorDiv(const(-7), const(2)), -4),
    (tir.FloorMod(const(-7), const(2)), 1),
    (tir.FloorMod(const(7), const(-2)), -1),
    (tir.Min(const(3), const(-4)), -4),
    (tir.Max(const(3), const(-4)), 3),
    (tir.Sub(const(3), const(10)), -7),
    (tir.LT(const(3), const(4)), True),
    (tir.GE(const(3), const(4)), False),
    (tir.EQ(const(3), const(3)), True),
    (tir.NE(const(3), const(3)), False),
    (tir.And(const(True), const(False)), False),
    (tir.Or(const(True), const(False)), True),
    (tir.Not(const(True)), False),
    (tir.Select(const(True), x, y), x),
    (tir.Select(const(False), x, y), y),
]


@pytest.mark.parametrize("expr, expected", FOLD_CASES)
def test_constant_folding(expr, expected):
    check(expr, expected)


def test_fold_floats_in_their_precision():
    a = tir.Add(const(0.1, "float32"), const(0.2, "float32"))
    out = arith.Analyzer().simplify(a)
    assert isinstance(out, tir.FloatImm) and out.dtype == "float32"
    import numpy as np

    assert out.value == float(np.float32(0.1) + np.float32(0.2))
    out = arith.Analyzer().simplify(tir.Div(const(1.0, "float64"), const(4.0, "float64")))
    assert out.value == 0.25 and out.dtype == "float64"


def test_fold_int64_keeps_dtype():
    a = tir.Mul(const(2**20, "int64"), const(2**20, "int64"))
    check(a, const(2**40, "int64"))
    v = tir.Var("v", "int64")
    out = arith.Analyzer().simplify(v * 2 + v - v * 3)
    assert structural_equal(out, const(0, "int64"))


def test_fold_cast():
    check(tir.Cast("int8", const(300)), const(44, "int8"))
    check(tir.Cast("int32", const(-2.7, "float32")), const(-2))
    check(tir.Cast("float32", const(3)), const(3.0, "float32"))
    check(tir.Cast("bool", const(5)), True)


def test_division_by_zero_is_left_alone():
    e = tir.FloorDiv(const(3), const(0))
    assert isinstance(arith.Analyzer().simplify(e), tir.FloorDiv)


def test_overflow_is_not_folded():
    e = tir.Mul(const(2**30), const(8))
    assert isinstance(arith.Analyzer().simplify(e), tir.Mul)


# --- identities and the canonical form -------------------------------------------------------
def test_identities():
    check(x + 0, x)
    check(x * 1, x)
    check(x * 0, 0)
    check(x - x, 0)
    check(tir.FloorDiv(x, const(1)), x)
    check(tir.FloorMod(x, const(1)), 0)
    check(tir.Div(x, const(1)), x)


def test_like_terms_collect():
    check(x * 2 + x - 3 * x, 0)
    check(x + y - x, y)
    check((x + 3) - (x + 1), 2)
    check(x * 2 + y + x, x * 3 + y)


def test_float_x_times_zero_is_kept():
    f = tir.Var("f", "float32")
    assert not isinstance(arith.Analyzer().simplify(f * 0.0), tir.FloatImm)


# --- division and modulo -----------------------------------------------------------------------
def test_split_fuse_with_constant_factor():
    check((io * 32 + ii) // 32, io)
    check((io * 32 + ii) % 32, ii)
    check(tir.truncdiv(io * 32 + ii, 32), io)
    check(tir.truncmod(io * 32 + ii, 32), ii)


def test_divisible_terms_leave_the_division():
    check((x * 8 + y) // 4, x * 2 + y // 4)
    check(tir.floormod(x * 4, 2), 0)
    check(tir.floormod(x * 8 + y, 4), tir.floormod(y, 4))


def test_nested_division():
    check((x // 4) // 8, x // 32)


def test_div_mod_recombine():
    check((x // 4) * 4 + x % 4, x)
    check((x // n) * n + x % n, x)


def test_symbolic_divisor_fuse_split_round_trip():
    check((i * n + j) // n, i)
    check((i * n + j) % n, j)


def test_truncdiv_unknown_sign_is_kept():
    out = _ana().simplify(tir.truncdiv(x, 4))
    assert isinstance(out, tir.Div)


def test_division_decided_by_bounds():
    check(ii // 32, 0)
    check(ii % 32, ii)
    check((ii + 32) // 32, 1)


# --- min / max -----------------------------------------------------------------------------
def test_min_max():
    check(tir.min(x, x), x)
    check(tir.min(x + 1, x), x)
    check(tir.max(x + 1, x), x + 1)
    check(tir.max(io, const(40)), 40)
    check(tir.min(io, const(40)), io)
    check(tir.min(tir.min(x, 8), 3), tir.min(x, 3))
    check(tir.max(tir.max(x, 8), 3), tir.max(x, 8))
    check(tir.min(tir.max(x, y), x), x)


# --- comparisons and logic ---------------------------------------------------------------------
def test_comparisons():
    check(x + 1 < x + 3, True)
    check(x + 3 <= x + 1, False)
    check(io < 32, True)
    check(io >= 0, True)
    check(io * 32 + ii < 1024, True)
    check(tir.EQ(x + 1, x + 1), True)
    check(tir.NE(x + 1, x), True)
    check(x + y < y + 5, x < 5)


def test_logic():
    check(tir.And(b, const(True)), b)
    check(tir.And(b, const(False)), False)
    check(tir.Or(b, const(True)), True)
    check(tir.Or(const(False), b), b)
    check(tir.Not(tir.Not(b)), b)
    check(tir.Not(x < y), y <= x)
    check(tir.And(x < 5, io < 32), x < 5)


def test_select():
    check(tir.Select(b, x, x), x)
    check(tir.Select(io < 32, x, y), x)
    check(tir.if_then_else(b, x, x), tir.if_then_else(b, x, x))


# --- vectors -----------------------------------------------------------------------------------
def test_ramp_broadcast():
    r = tir.Ramp(x, 1, 4)
    check(r + tir.Broadcast(y, 4), tir.Ramp(x + y, 1, 4))
    check(tir.Broadcast(x, 4) + tir.Broadcast(y, 4), tir.Broadcast(x + y, 4))
    check(r * tir.Broadcast(const(2), 4), tir.Ramp(x * 2, 2, 4))


# --- API -----------------------------------------------------------------------------------------
def test_rewrite_and_canonical_entry_points():
    ana = _ana()
    assert structural_equal(ana.rewrite_simplify(x + 0), x)
    assert structural_equal(ana.canonical_simplify(x * 2 + x - 3 * x), const(0))
    assert ana.can_prove_equal(x * 2 + y, y + x + x)
    assert not ana.can_prove_equal(x, y)


def test_bind_substitution():
    ana = arith.Analyzer()
    ana.bind(x, y + 1)
    check(x - y, 1, ana)


def test_bind_rebinding_needs_allow_override():
    ana = arith.Analyzer()
    ana.bind(x, tir.Range.from_min_extent(0, 4))
    ana.bind(x, tir.Range.from_min_extent(0, 4))  # same binding: fine
    with pytest.raises(arith.analyzer.MiniTVMError, match="already bound.*allow_override=True"):
        ana.bind(x, tir.Range.from_min_extent(0, 8))
    ana.bind(x, tir.Range.from_min_extent(0, 8), allow_override=True)
    assert ana.const_int_bound(x).max_value == 7


def test_bind_rejects_other_values():
    with pytest.raises(arith.analyzer.MiniTVMError, match="expected a tir.Range"):
        arith.Analyzer().bind(x, (0, 4))
    with pytest.raises(arith.analyzer.MiniTVMError, match="expects a tir.Var"):
        arith.Analyzer().bind(3, tir.Range.from_min_extent(0, 4))


def test_simplify_returns_same_object_when_unchanged():
    e = tir.min(x, y) + z
    assert _ana().simplify(e) is e


def test_constraint_scope():
    ana = _ana()
    cond = i * 32 + ii < n
    assert not ana.can_prove(cond)
    with ana.constraint_scope(cond):
        assert ana.can_prove(cond)
        assert ana.can_prove(i * 32 + ii < n + 5)
        assert ana.can_prove(tir.likely(cond))
    assert not ana.can_prove(cond)
    with ana.constraint_scope(x < 10):
        assert ana.can_prove(x < 11)
        assert ana.const_int_bound(x).max_value == 9
        assert ana.simplify(tir.min(x, 20)) is x
    assert ana.const_int_bound(x).max_value == 2**31 - 1
    with ana.constraint_scope(tir.And(3 <= x, tir.EQ(y, 7))):
        assert ana.const_int_bound(x).min_value == 3
        assert ana.const_int_bound(y).min_value == 7 and ana.const_int_bound(y).max_value == 7
        assert ana.can_prove(tir.max(x, 2) == x)
        assert ana.can_prove_equal(y * 2, 14)
    with ana.constraint_scope(tir.Not(b)):
        assert ana.can_prove(tir.Not(b))
        assert not ana.can_prove(b)


def test_likely_guard_kept_when_not_provable():
    ana = _ana()
    guard = tir.likely(io * 32 + ii < n)
    out = ana.simplify(guard)
    assert isinstance(out, tir.Call) and out.op.name == "tir.likely"
    assert ana.can_prove(tir.likely(io * 32 + ii < 1024))


def test_no_infinite_loop_on_deep_expression():
    e = x
    for k in range(200):
        e = tir.Add(e, tir.Mul(y, const(k % 3)))
    out = _ana().simplify(e)
    assert structural_equal(out, x + y * sum(k % 3 for k in range(200)))


def test_vector_index_division():
    ana = arith.Analyzer()
    k = tir.Var("k")
    ana.bind(k, tir.Range.from_min_extent(0, 16))

    def bc(v):
        return tir.Broadcast(const(v), 4)

    check(tir.floordiv(tir.Ramp(k * 4, 1, 4), bc(4)), tir.Broadcast(k, 4), ana)
    check(tir.floormod(tir.Ramp(k * 4, 1, 4), bc(4)), tir.Ramp(const(0), 1, 4), ana)
    check(tir.floordiv(tir.Ramp(k * 8, 4, 4), bc(4)), tir.Ramp(k * 2, 1, 4), ana)
    check(tir.floormod(tir.Ramp(k * 8, 4, 4), bc(2)), tir.Broadcast(const(0), 4), ana)
    kept = tir.floordiv(tir.Ramp(k * 4 + 1, 1, 4), bc(4))  # crosses a multiple of 4
    assert ana.simplify(kept) is kept


def test_integer_cast_round_trip():
    check(tir.Cast("int32", tir.Cast("int64", x)), x)
    narrowing = tir.Cast("int32", tir.Cast("int8", x))
    assert _ana().simplify(narrowing) is narrowing


def test_large_products_stay_factored():
    # distributing (a+b+c+d)*(e+f+g+h)*... would grow exponentially: it is kept as a product
    s = x + y + z + n + 1
    e = s * s * s * s
    out = _ana().simplify(e)
    assert out.dtype == e.dtype
    assert isinstance(out, tir.Mul)


def test_select_branches_assume_their_condition():
    ana = _ana()
    check(tir.Select(x < 32, tir.min(x, 40), tir.max(x, 20)), x)  # else: x >= 32
    check(tir.Select(x < 32, tir.min(x, 40), tir.max(x, 40)), tir.Select(x < 32, x, tir.max(x, 40)))
    check(tir.Select(io < 16, tir.min(io, 40), tir.max(io, 10)), io, ana)
    A = tir.decl_buffer((64,), "float32", "A")
    guarded = tir.if_then_else(tir.LT(x, n), A[tir.min(x, n - 1)], const(0.0, "float32"))
    check(guarded, tir.if_then_else(tir.LT(x, n), A[x], const(0.0, "float32")))


def test_and_or_implication():
    check(tir.And(x < 5, x < 3), x < 3)
    check(tir.And(x < 5, 7 < x), False)
    check(tir.Or(x < 5, x < 3), x < 5)
    check(tir.Or(x < 5, 3 <= x), True)


def test_comparison_common_factor():
    check(x * 4 < 10, x < 3)
    check(x * 4 <= 10, x <= 2)
    check(tir.EQ(x * 4, 10), False)
    check(tir.NE(x * 4, 8), tir.NE(x, 2))
    check(tir.floordiv(x, 4) < 3, x < 12)


def test_likely_constraint_is_unwrapped():
    ana = _ana()
    with ana.constraint_scope(tir.likely(tir.LT(x, n))):
        assert ana.can_prove(tir.LT(x, n))
        assert ana.can_prove(tir.LE(x, n))


def test_sum_of_nonnegative_terms_equal_zero_splits_per_term():
    """`k_0*4 + k_1 == 0` over loop vars becomes `k_0 == 0 and k_1 == 0` (unswitchable per loop)."""
    from minitvm import arith, tir
    from minitvm.ir import structural_equal

    k0, k1, n = tir.Var("k_0"), tir.Var("k_1"), tir.Var("n")
    ana = arith.Analyzer()
    ana.bind(k0, tir.Range.from_min_extent(0, 256))
    ana.bind(k1, tir.Range.from_min_extent(0, 4))
    assert structural_equal(ana.simplify(k0 * 4 + k1 == 0), tir.all(k0 == 0, k1 == 0))
    # a term that may be negative, or a non-zero constant, keeps the equality whole
    assert isinstance(ana.simplify(k0 * 4 - n == 0), tir.EQ)
    assert isinstance(ana.simplify(k0 * 4 + k1 == 4), tir.EQ)
