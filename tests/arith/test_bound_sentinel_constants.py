"""Constants equal to the bound sentinels (int64 max) must not collapse a bound: x - max was
given the one-point bound [-max, -max], so floordiv(x - max, 5) folded to a constant."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir


def _eval(expr, x):
    """Evaluate an int64 expression of one var with Python ints (floor division)."""
    if isinstance(expr, tir.IntImm):
        return int(expr.value)
    if isinstance(expr, tir.Var):
        return x
    a, b = _eval(expr.a, x), _eval(expr.b, x)
    ops = {
        tir.Add: lambda: a + b,
        tir.Sub: lambda: a - b,
        tir.Mul: lambda: a * b,
        tir.FloorDiv: lambda: a // b,
        tir.FloorMod: lambda: a % b,
    }
    return ops[type(expr)]()


@pytest.mark.parametrize("op", [tir.floordiv, tir.floormod])
@pytest.mark.parametrize("divisor", [5, 7, 1 << 20])
def test_x_minus_int64_max_keeps_its_value(op, divisor):
    x = tir.Var("x", "int64")
    big = tir.max_value("int64")
    expr = op(x - big, divisor)
    ana = tvm.arith.Analyzer()
    bound = ana.const_int_bound(x - big)
    assert bound.min_value < bound.max_value  # unknown, not one point
    simple = ana.simplify(expr)
    assert not isinstance(simple, tir.IntImm)
    rng = np.random.default_rng(0)
    # x in [0, max]: x - max stays in int64, so the exact integer result is the reference
    for v in [0, 1, 2, 3, 4, 5, 1 << 40, int(big)] + [int(t) for t in rng.integers(0, 1 << 62, 20)]:
        want = (v - int(big)) // divisor if op is tir.floordiv else (v - int(big)) % divisor
        assert _eval(simple, v) == want, (v, simple)


def test_sum_of_opposite_sentinels_is_unbounded_both_ways():
    x = tir.Var("x", "int64")
    ana = tvm.arith.Analyzer()
    b = ana.const_int_bound(x + tir.min_value("int64") + 1)  # -max: the NEG_INF sentinel
    assert (b.min_value, b.max_value) == (b.NEG_INF, b.POS_INF)
    b = ana.const_int_bound(tir.max_value("int64") - x)
    assert (b.min_value, b.max_value) == (b.NEG_INF, b.POS_INF)
