"""LowerIntrin (integer part): floordiv/floormod become truncating operations, using the
signs the loop ranges and conditions prove; results equal numpy's floor division on
random signed ints of each width."""

import numpy as np
import pytest

from minitvm import IRModule, tir
from minitvm.testing import run_prim_func
from minitvm.tir.transform import LowerIntrin


def _kinds(func):
    out = set()
    tir.post_order_visit(func.body, lambda n: out.add(type(n).__name__))
    return out


def _elementwise(dtype, op, guard=None, divisor=None):
    X = tir.decl_buffer((64,), dtype, "X")
    Y = tir.decl_buffer((64,), dtype, "Y")
    Z = tir.decl_buffer((64,), dtype, "Z")
    i = tir.Var("i", "int32")
    x, y = tir.BufferLoad(X, [i]), tir.BufferLoad(Y, [i])
    y = tir.const(divisor, dtype) if divisor is not None else y
    value = op(x, y)
    if guard is not None:
        value = tir.Select(guard(x, y), value, tir.const(0, dtype))
    body = tir.For(i, 0, 64, tir.ForKind.SERIAL, tir.BufferStore(Z, value, [i]))
    return tir.PrimFunc([X, Y, Z], body)


GUARDS = {
    "none": None,
    "rhs_nonneg": lambda x, y: y >= tir.const(0, y.dtype),
    "both_nonneg": lambda x, y: tir.all(y >= tir.const(0, y.dtype), x >= tir.const(0, x.dtype)),
}


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64"])
@pytest.mark.parametrize("name", ["floordiv", "floormod"])
@pytest.mark.parametrize("guard", list(GUARDS))
def test_floor_ops_lowered_match_numpy(dtype, name, guard):
    op = getattr(tir, name)
    before = _elementwise(dtype, op, GUARDS[guard])
    after = LowerIntrin()(IRModule({"main": before}))["main"]
    assert not {"FloorDiv", "FloorMod"} & _kinds(after)
    rng = np.random.default_rng(0)
    x = rng.integers(-20, 20, 64).astype(dtype)
    y = rng.integers(-9, 10, 64).astype(dtype)
    y[y == 0] = 3
    z = run_prim_func(after, x, y, np.zeros(64, dtype))[2]
    ref = np.floor_divide(x, y) if name == "floordiv" else np.mod(x, y)
    if guard == "rhs_nonneg":
        ref = np.where(y >= 0, ref, 0)
    elif guard == "both_nonneg":
        ref = np.where((y >= 0) & (x >= 0), ref, 0)
    np.testing.assert_array_equal(z, ref)


def test_known_signs_give_plain_truncation():
    Z = tir.decl_buffer((16,), "int32", "Z")
    n = tir.Var("n", "int32")
    i = tir.Var("i", "int32")
    store = tir.BufferStore(Z, tir.floordiv(i - 4, n) + tir.floormod(i, n), [i])
    guarded = tir.IfThenElse(n > 0, store)
    before = tir.PrimFunc([Z, n], tir.For(i, 0, 16, tir.ForKind.SERIAL, guarded))
    after = LowerIntrin()(IRModule({"main": before}))["main"]
    kinds = _kinds(after)
    assert "Mod" in kinds and "Div" in kinds and not {"FloorDiv", "FloorMod"} & kinds
    lets = []
    tir.post_order_visit(
        after.body, lambda e: lets.append(e.var.name) if isinstance(e, tir.Let) else None
    )
    assert sorted(lets) == ["rdiv", "rmod"]  # only i - 4 may be negative: one fix-up, for the division
    for m in (3, 5):
        z = run_prim_func(after, np.zeros(16, "int32"), m)[0]
        i_ = np.arange(16)
        np.testing.assert_array_equal(z, np.floor_divide(i_ - 4, m) + np.mod(i_, m))


@pytest.mark.parametrize("name", ["floordiv", "floormod"])
def test_power_of_two_divisor_becomes_bit_operation(name):
    before = _elementwise("int32", getattr(tir, name), divisor=8)
    after = LowerIntrin()(IRModule({"main": before}))["main"]
    calls = []
    tir.post_order_visit(
        after.body, lambda n: calls.append(n.op.name) if isinstance(n, tir.Call) else None
    )
    assert calls == (["tir.shift_right"] if name == "floordiv" else ["tir.bitwise_and"])
    x = np.arange(-32, 32, dtype="int32")
    z = run_prim_func(after, x, np.ones(64, "int32"), np.zeros(64, "int32"))[2]
    ref = np.floor_divide(x, 8) if name == "floordiv" else np.mod(x, 8)
    np.testing.assert_array_equal(z, ref)


@pytest.mark.parametrize("name", ["floordiv", "floormod"])
def test_float_floor_ops(name):
    before = _elementwise("float32", getattr(tir, name))
    after = LowerIntrin()(IRModule({"main": before}))["main"]
    assert not {"FloorDiv", "FloorMod"} & _kinds(after)
    rng = np.random.default_rng(0)
    x = rng.uniform(-9, 9, 64).astype("float32")
    y = rng.choice([-2.5, -1.0, 0.75, 3.0], 64).astype("float32")
    z = run_prim_func(after, x, y, np.zeros(64, "float32"))[2]
    ref = np.floor(x / y) if name == "floordiv" else x - np.floor(x / y) * y
    np.testing.assert_allclose(z, ref, rtol=1e-5, atol=1e-5)
