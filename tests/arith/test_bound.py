"""Constant and symbolic bound analysis."""

import pytest

from minitvm import arith, tir
from minitvm.error import MiniTVMError
from minitvm.ir import structural_equal
from minitvm.tir import const

x, y = tir.Var("x"), tir.Var("y")
i, ii = tir.Var("i"), tir.Var("ii")
n = tir.SizeVar("n")


def _ana():
    ana = arith.Analyzer()
    ana.bind(x, tir.Range.from_min_extent(-4, 8))  # [-4, 3]
    ana.bind(y, tir.Range.from_min_extent(1, 5))  # [1, 5]
    ana.bind(ii, tir.Range.from_min_extent(0, 32))
    ana.bind(i, tir.Range.from_min_extent(0, n))
    return ana


def bound(e):
    b = _ana().const_int_bound(e)
    return b.min_value, b.max_value


BOUND_CASES = [
    (x + y, (-3, 8)),
    (x - y, (-9, 2)),
    (x * y, (-20, 15)),
    (x * -2, (-6, 8)),
    (tir.floordiv(x, 2), (-2, 1)),
    (tir.truncdiv(x, 2), (-2, 1)),
    (tir.floordiv(x, y), (-4, 3)),
    (tir.floormod(x, 4), (0, 3)),
    (tir.floormod(ii, 64), (0, 31)),
    (tir.truncmod(x, 3), (-2, 2)),
    (tir.min(x, y), (-4, 3)),
    (tir.max(x, y), (1, 5)),
    (tir.Select(x < 0, y, x), (-4, 5)),
    (tir.Cast("int64", ii) * 2, (0, 62)),
    (tir.Cast("int8", ii * 100), (-128, 127)),
    # a SizeVar is >= 0; bounds are clipped to the dtype (no overflow is assumed)
    (n, (0, 2**31 - 1)),
    (n + 1, (1, 2**31 - 1)),
    (i, (0, 2**31 - 2)),
    (x < y, (0, 1)),
    (tir.likely(ii), (0, 31)),
    (tir.Ramp(ii, 2, 4), (0, 37)),
]


@pytest.mark.parametrize("expr, expected", BOUND_CASES)
def test_const_int_bound(expr, expected):
    assert bound(expr) == expected


def test_unbound_var_has_dtype_range():
    b = arith.Analyzer().const_int_bound(tir.Var("v"))
    assert (b.min_value, b.max_value) == (-(2**31), 2**31 - 1)
    b = arith.Analyzer().const_int_bound(tir.Var("w", "int64"))
    assert (b.min_value, b.max_value) == (arith.NEG_INF, arith.POS_INF)


def test_guard_proved_by_bounds():
    ana = arith.Analyzer()
    io = tir.Var("io")
    ana.bind(io, tir.Range.from_min_extent(0, 32))
    ana.bind(ii, tir.Range.from_min_extent(0, 32))
    assert ana.can_prove(io * 32 + ii < 1024)
    assert not ana.can_prove(io * 32 + ii < 1023)
    assert ana.can_prove(io * 32 + ii >= 0)


def test_int_set_symbolic():
    ana = _ana()
    s = ana.int_set(i * 32 + ii)
    assert structural_equal(s.min_value, const(0))
    assert structural_equal(s.max_value, n * 32 - 1)
    s = ana.int_set(i * 32 + ii, {i: tir.Range.from_min_extent(0, 4)})
    assert (s.min_value.value, s.max_value.value) == (0, 127)
    s = ana.int_set(tir.floordiv(i, 4) + x)
    assert structural_equal(s.min_value, const(-4))
    assert structural_equal(s.max_value, tir.floordiv(n + 3, 4) + 2)  # == (n-1)//4 + 3


def test_int_set_free_var_is_a_point():
    z = tir.Var("z")
    s = _ana().int_set(z + ii)
    assert structural_equal(s.min_value, z)
    assert structural_equal(s.max_value, z + 31)


def test_int_set_unbounded_side():
    s = _ana().int_set(n * ii)
    assert s.has_lower_bound() and structural_equal(s.min_value, const(0))
    v = tir.Var("v")
    s2 = _ana().int_set(v * ii)
    assert not s2.is_everything() or s2.max_value.value == 2**31 - 1


def test_int_set_rejects_bad_dom():
    with pytest.raises(MiniTVMError, match=r"dom_map\['x'\] must be a tir.Range"):
        _ana().int_set(x, {x: (0, 4)})


def test_symbolic_proof_j_less_than_n():
    ana = arith.Analyzer()
    j = tir.Var("j")
    ana.bind(j, tir.Range.from_min_extent(0, n))
    assert ana.can_prove(j < n)
    assert ana.can_prove(tir.LT(j, n + 1))
    assert not ana.can_prove(j < n - 1)


def test_update_records_constant_bounds():
    ana = arith.Analyzer()
    v = tir.Var("v")
    ana.update(v, arith.ConstIntBound(0, 9))
    assert ana.can_prove(v < 10)
    ana.update(v, arith.ConstIntBound(2, 20))
    assert (ana.const_int_bound(v).min_value, ana.const_int_bound(v).max_value) == (2, 9)
    ana.update(v, arith.ConstIntBound(0, 100), override=True)
    assert ana.const_int_bound(v).max_value == 100
    with pytest.raises(MiniTVMError, match=r"expects \(tir.Var, arith.ConstIntBound\)"):
        ana.update(v, (0, 4))


def test_int_set_of_a_narrowing_cast_keeps_bounds_that_fit():
    """int32(f // 48) over f in [0, int64(m) * 48 - 1] is [0, m - 1] (it sized a compacted
    buffer at the whole int32 range); an operand that may not fit keeps the type's range."""
    m = tir.Var("m", "int32")
    f = tir.Var("f", "int64")
    ana = arith.Analyzer()
    e = tir.Cast("int32", tir.floordiv(f, tir.IntImm("int64", 48)))
    dom = {f: arith.IntervalSet(tir.IntImm("int64", 0), tir.Cast("int64", m) * 48 - 1)}
    s = ana.int_set(e, dom)
    assert ana.can_prove_equal(s.min_value, 0)
    for size in (1, 100, 2**31 - 1):
        at = tir.stmt_functor.substitute(s.max_value, {m: tir.IntImm("int32", size)})
        assert int(ana.simplify(at)) == size - 1
    g = tir.Var("g", "int64")
    wide = arith.IntervalSet(tir.IntImm("int64", 0), tir.IntImm("int64", 1 << 40))
    s = ana.int_set(tir.Cast("int32", g), {g: wide})
    assert (int(s.min_value), int(s.max_value)) == (-(2**31), 2**31 - 1)
