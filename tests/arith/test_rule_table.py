"""The rewrite rule table's filter by operand classes: it only leaves out rules that cannot
match, and caches one rule list per (root class, operand heads)."""

from __future__ import annotations

import itertools

from minitvm import arith, tir
from minitvm.arith.rewrite import TABLE
from minitvm.tir import const


def _operand_samples():
    x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    b = tir.Var("b", "bool")
    return [
        x,
        const(3, "int32"),
        const(0, "int32"),
        x + y,
        x - y,
        x * 4,
        tir.floordiv(x, 8),
        tir.floormod(x, 8),
        tir.min(x, y),
        tir.max(x, 2),
        tir.Select(b, x, y),
    ]


def _roots():
    for a, b in itertools.product(_operand_samples(), repeat=2):
        yield from (a + b, a - b, a * b, tir.floordiv(a, b), tir.floormod(a, b))
        yield from (tir.min(a, b), tir.max(a, b), a < b, a <= b, tir.EQ(a, b))


def test_rules_left_out_never_match() -> None:
    ana = arith.Analyzer()
    ana.bind(tir.Var("z", "int32"), tir.Range.from_min_extent(0, 4))
    left_out = 0
    for e in _roots():
        kept = TABLE.rules_for(e)
        for r in TABLE.by_root.get(type(e), ()):
            if r not in kept:
                left_out += 1
                assert r.apply(e, ana) is None, f"{r.pattern} was left out but matches {e}"
    assert left_out > 0  # the filter does leave rules out


def test_one_rule_list_per_operand_heads() -> None:
    x, y, z = (tir.Var(n, "int32") for n in "xyz")
    first = TABLE.rules_for(x * 4 + 3)
    assert TABLE.rules_for(y * 8 + 5) is first  # hit: same classes (Mul, scalar IntImm)
    other = TABLE.rules_for(x + y)  # miss: (Var, Var) heads
    assert other is not first
    # x + 0 matches only rules with a constant operand, which (Var, Var) leaves out
    assert any(r not in other for r in first)
    assert TABLE.rules_for(z + 0) is TABLE.rules_for(x + 7)
    assert str(arith.Analyzer().simplify(x * 4 + 0 + 3)) == str(
        arith.Analyzer().simplify(x * 4 + 3)
    )
