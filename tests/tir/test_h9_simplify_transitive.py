"""Simplify's `transitively_prove_inequalities` option (TVM's PassContext config
{"tir.Simplify": {...}}): comparisons that follow from enclosing if-conditions by
transitivity are decided, and only when the option is on. Before/after agree on random ints."""

import numpy as np
import pytest

from minitvm import IRModule, tir, transform
from minitvm.testing import run_prim_func
from minitvm.tir.transform import Simplify

_ON = {"tir.Simplify": {"transitively_prove_inequalities": True}}


def _guarded(prior, goal):
    """f(A, i, j, k): if prior(i, j, k): A[0] = goal(i, j, k)."""
    A = tir.decl_buffer((1,), "bool", "A")
    i, j, k = (tir.Var(n, "int32") for n in "ijk")
    body = tir.IfThenElse(prior(i, j, k), tir.BufferStore(A, goal(i, j, k), [0]))
    return tir.PrimFunc([A, i, j, k], body)


def _simplify(func, config):
    with transform.PassContext(config=config):
        return Simplify()(IRModule({"main": func}))["main"]


CASES = [  # prior, goal, decided value (None: not provable)
    (lambda i, j, k: tir.all(i < j, j < k), lambda i, j, k: i < k, True),
    (lambda i, j, k: tir.all(i <= j, j == k), lambda i, j, k: i <= k, True),
    (lambda i, j, k: tir.all(i <= j, j <= k), lambda i, j, k: i < k, None),
    (lambda i, j, k: tir.all(i > j, j >= k), lambda i, j, k: i > k, True),
    (lambda i, j, k: tir.all(i > j, j >= k), lambda i, j, k: k >= i, False),
    (lambda i, j, k: tir.all(i == j, j != k), lambda i, j, k: i != k, True),
    (lambda i, j, k: tir.all(i < j + 5, j < k + 7), lambda i, j, k: i < k + 11, True),
    (lambda i, j, k: tir.all(i < j + 5, j < k + 7), lambda i, j, k: i < k + 10, None),
    (lambda i, j, k: tir.all(i <= j * 2, j <= k), lambda i, j, k: i <= k, None),
]


@pytest.mark.parametrize("prior, goal, decided", CASES)
def test_transitive_comparison_decided_only_when_enabled(prior, goal, decided):
    before = _guarded(prior, goal)
    after = _simplify(before, _ON)
    value = after.body.then_case.value
    if decided is None:
        assert not isinstance(value, tir.IntImm)
    else:
        assert isinstance(value, tir.IntImm) and bool(value.value) is decided
    off = _simplify(before, {"tir.Simplify": {"transitively_prove_inequalities": False}})
    assert not isinstance(off.body.then_case.value, tir.IntImm)
    rng = np.random.default_rng(0)
    for i, j, k in rng.integers(-6, 7, size=(200, 3)).tolist():
        want = run_prim_func(before, np.zeros(1, bool), i, j, k)[0]
        got = run_prim_func(after, np.zeros(1, bool), i, j, k)[0]
        np.testing.assert_array_equal(got, want)
