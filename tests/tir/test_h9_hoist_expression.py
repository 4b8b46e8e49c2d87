"""HoistExpression: loop-invariant conditions and let bindings move above loops, as far out
as their variables allow; flags in the PassContext config switch kinds off. Each case is
checked structurally and by running before/after through the TIR interpreter vs numpy."""

import numpy as np
import pytest

from minitvm import IRModule, tir, transform
from minitvm.script import tir as T
from minitvm.testing import run_prim_func
from minitvm.tir.analysis import verify_ssa
from minitvm.tir.transform import HoistedConditionals, HoistedLetBindings, HoistExpression


def _hoist(func, conds=HoistedConditionals.All, lets=HoistedLetBindings.All):
    config = {
        "tir.HoistExpression": {
            "hoisted_conditionals": conds.value,
            "hoisted_let_bindings": lets.value,
        }
    }
    with transform.PassContext(config=config):
        return HoistExpression()(IRModule({"main": func}))["main"]


def _same_result(before, after, *scalars):
    a = np.random.default_rng(0).standard_normal((4, 4)).astype("float32")
    want = run_prim_func(before, a.copy(), *scalars)[0]
    got = run_prim_func(after, a.copy(), *scalars)[0]
    np.testing.assert_array_equal(got, want)
    return want, a


@T.prim_func
def _nested_if_else(A: T.Buffer((4, 4), "float32")):
    for i, j, k in T.grid(4, 4, 4):
        if j < 3:
            if i < 2:
                A[i, j] = A[i, j] + 1.0
            else:
                A[i, j] = A[i, j] + 2.0
        else:
            if i < 1:
                A[i, j] = A[i, j] + 3.0
            else:
                A[i, j] = A[i, j] + 4.0


def test_conditions_hoisted_to_their_outermost_loop():
    after = _hoist(_nested_if_else)
    outer = after.body
    assert isinstance(outer, tir.For) and outer.loop_var.name == "i"
    assert isinstance(outer.body, tir.IfThenElse) and str(outer.body.condition) == "i < 2"
    # under i >= 2 the test i < 1 is decided: no branch tests it there
    conds = []
    tir.post_order_visit(
        outer.body.else_case,
        lambda n: conds.append(str(n.condition)) if isinstance(n, tir.IfThenElse) else None,
    )
    assert "i < 1" not in conds and "j < 3" in conds
    assert verify_ssa(after)  # the duplicated loops got their own variables
    want, a = _same_result(_nested_if_else, after)
    i, j = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    add = np.where(j < 3, np.where(i < 2, 1, 2), np.where(i < 1, 3, 4)) * 4.0
    np.testing.assert_allclose(want, a + add, rtol=1e-6)


@T.prim_func
def _guarded_by_param(A: T.Buffer((4, 4), "float32"), n: T.int32):
    for i, j in T.grid(4, 4):
        if n != 0 and j < 2:
            A[i, j] = T.if_then_else(i < 2, 1.0, 2.0, dtype="float32")


def test_boolean_split_and_if_then_else_expression():
    after = _hoist(_guarded_by_param)
    assert isinstance(after.body, tir.IfThenElse) and str(after.body.condition) == "n != 0"
    assert after.body.else_case is None
    calls = []
    tir.post_order_visit(after.body, lambda n: calls.append(n) if isinstance(n, tir.Call) else None)
    assert not calls  # T.if_then_else was turned into two loops
    for n in (0, 3):
        _same_result(_guarded_by_param, after, n)
    whole = _hoist(
        _guarded_by_param, HoistedConditionals.All & ~HoistedConditionals.BooleanExpression
    )
    assert isinstance(whole.body.body, tir.IfThenElse)  # `n != 0 and j < 2` needs j: stays in i
    assert str(whole.body.body.condition) == "i < 2"


@pytest.mark.parametrize(
    "conds, lets",
    [
        (HoistedConditionals.Never, HoistedLetBindings.All),
        (HoistedConditionals.IfElseExpr, HoistedLetBindings.All),
        (HoistedConditionals.All, HoistedLetBindings.Never),
    ],
)
def test_disabled_kinds_stay_inside_the_loop(conds, lets):
    @T.prim_func
    def func(A: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            c = i < 3
            if c:
                A[i, j] = 0.0

    after = _hoist(func, conds, lets)
    inner = after.body.body
    if lets == HoistedLetBindings.Never:
        assert isinstance(inner, tir.For)  # the if needs the let's variable: nothing moves
    else:  # the let leaves the j loop; the if may not, so it stays inside j
        assert isinstance(inner, tir.LetStmt) and isinstance(inner.body, tir.For)
        assert isinstance(inner.body.body, tir.IfThenElse)
    _same_result(func, after)


@T.prim_func
def _reads_memory(A: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        if A[0, 0] < 10.0:
            A[0, 0] = A[0, 0] + 1.0
            A[i, j] = A[i, j] * 2.0


def test_condition_reading_memory_is_not_hoisted():
    after = _hoist(_reads_memory)
    assert isinstance(after.body, tir.For) and isinstance(after.body.body, tir.For)
    want, a = _same_result(_reads_memory, after)
    assert want[0, 0] != a[0, 0]
