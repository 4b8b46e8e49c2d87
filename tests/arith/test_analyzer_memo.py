"""The Analyzer keeps its memo across bindings of vars no memoised answer read; a rebinding of a
var some answer did read must never let that answer come back. The oracle is a fresh Analyzer
given the same bindings (no memo at all)."""

import random

import pytest

from minitvm import arith, tir
from minitvm.arith import analyzer as analyzer_module
from minitvm.tir import floordiv, floormod

x, y, z = tir.Var("x"), tir.Var("y"), tir.Var("z")


def _rng(lo, extent):
    return tir.Range.from_min_extent(lo, extent)


def _fresh(bindings):
    ana = arith.Analyzer()
    for var, value in bindings.items():
        ana.bind(var, value)
    return ana


def test_rebinding_a_read_var_drops_the_answer():
    ana = arith.Analyzer()
    ana.bind(x, _rng(0, 8))
    cond = x < 8
    assert ana.can_prove(cond)
    ana.bind(x, _rng(0, 16), allow_override=True)
    assert not ana.can_prove(cond)  # the very same expression object: a memo hit would be stale
    assert str(ana.simplify(cond)) == str(_fresh({x: _rng(0, 16)}).simplify(cond))


def test_binding_an_unread_var_keeps_the_memo_and_answers_stay_right():
    ana = arith.Analyzer()
    ana.bind(x, _rng(0, 8))
    e = floordiv(x, 8)
    assert ana.simplify(e).value == 0
    memo = ana._cache
    ana.bind(y, _rng(0, 4))  # a new loop var: no answer depends on it
    assert ana._cache is memo
    assert ana.simplify(e).value == 0
    assert ana.can_prove(x + y < 11) and not ana.can_prove(x + y < 10)


def test_substitution_rebinding_is_seen():
    ana = arith.Analyzer()
    ana.bind(y, x * 2)
    ana.bind(x, _rng(0, 4))
    e = y + 1
    assert str(ana.simplify(e)) == str(_fresh({y: x * 2, x: _rng(0, 4)}).simplify(e))
    ana.bind(y, x * 3, allow_override=True)
    assert str(ana.simplify(e)) == str(_fresh({y: x * 3, x: _rng(0, 4)}).simplify(e))


def test_rebinding_inside_constraint_scope_invalidates_the_saved_memo():
    ana = arith.Analyzer()
    ana.bind(x, _rng(0, 8))
    cond = x < 8
    assert ana.can_prove(cond)  # memoised in the outer state
    with ana.constraint_scope(y < 3):
        ana.bind(x, _rng(0, 100), allow_override=True)
    # the outer memo that the scope saved read x: it must not come back after the scope
    assert not ana.can_prove(cond)


def test_fresh_var_bound_inside_constraint_scope_keeps_outer_answers_right():
    ana = arith.Analyzer()
    ana.bind(x, _rng(0, 8))
    assert ana.can_prove(x < 8)
    with ana.constraint_scope(x < 4):
        ana.bind(z, _rng(0, 2))
        assert ana.can_prove(x + z < 5)
    assert ana.can_prove(x < 8) and not ana.can_prove(x < 4)


def test_symbolic_range_appearing_drops_the_memo():
    n = tir.Var("n")
    ana = arith.Analyzer()
    ana.bind(x, _rng(0, 8))
    assert ana.simplify(x < 8).value == 1
    memo = ana._cache
    ana.bind(y, _rng(0, n))  # comparisons now also go through symbolic interval bounds
    assert ana._cache is not memo


@pytest.mark.parametrize("cap", [None, 40])
def test_random_bindings_and_queries_match_a_fresh_analyzer(cap, monkeypatch):
    if cap is not None:  # a tiny memo cap: memos dropped mid-scope must not come back either
        monkeypatch.setattr(analyzer_module, "_MAX_CACHED_NODES", cap)
    rnd = random.Random(7)
    vars_ = [x, y, z]
    exprs = [
        x + y,
        floordiv(x * 4 + y, 4),
        floormod(x * 8 + z, 8),
        tir.min(x, y) + z,
        x - y * 2,
        floordiv(z, 3) * 3 + floormod(z, 3),
    ]
    conds = [x < 5, x + y < 9, z * 2 >= y, floormod(x, 4) < 3]
    for _ in range(30):
        ana, bindings = arith.Analyzer(), {}
        for _ in range(12):
            var = rnd.choice(vars_)
            value = _rng(rnd.randint(-3, 3), rnd.randint(1, 9))
            bindings[var] = value
            ana.bind(var, value, allow_override=True)
            oracle = _fresh(bindings)
            for e in rnd.sample(exprs, 3):
                assert str(ana.simplify(e)) == str(oracle.simplify(e)), (e, bindings)
            for c in rnd.sample(conds, 2):
                assert ana.can_prove(c) == oracle.can_prove(c), (c, bindings)
            if rnd.random() < 0.3:
                fact = rnd.choice(conds)
                inner = _fresh(bindings)
                with ana.constraint_scope(fact), inner.constraint_scope(fact):
                    c = rnd.choice(conds)
                    assert ana.can_prove(c) == inner.can_prove(c), (c, fact, bindings)
                    assert str(ana.simplify(exprs[1])) == str(inner.simplify(exprs[1]))
