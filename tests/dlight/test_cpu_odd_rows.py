"""Row reductions over lengths no vector width divides (ViT's 197 tokens): the default CPU
schedule keeps vector partial results with a guarded last vector (rfactor of a guarded split,
the guard in the partial value), and softmax / layer_norm still match numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import dlight as dl
from minitvm import te, tir, topi
from minitvm.script import tir as T

ODD_ROWS = (7, 13, 49, 197, 1000)


def _build(outs, ins):
    mod = tvm.IRModule({"main": te.create_prim_func([*ins, *outs])})
    mod = dl.ApplyDefaultSchedule(*dl.cpu.DEFAULT_RULES)(mod)
    return mod, tvm.build(mod, target="llvm")


def _has_partials(mod, name):
    """Block `name` was factored into vector partial results (its `_rf` block, decomposed)."""
    names = []
    tir.stmt_functor.post_order_visit(
        mod["main"].body, lambda n: names.append(n.name_hint) if isinstance(n, tir.Block) else None
    )
    # (a loop partition of the whole vectors renames the block with a suffix)
    return any(n.startswith(f"{name}_rf_update") for n in names)


def _softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("n", ODD_ROWS)
def test_softmax_over_odd_rows_matches_numpy(n):
    x = te.placeholder((3, 5, n), name="x")
    mod, lib = _build([topi.nn.softmax(x)], [x])
    a = np.random.default_rng(n).standard_normal((3, 5, n)).astype("float32") * 4
    out = tvm.nd.array(np.zeros_like(a))
    lib(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), _softmax_ref(a), rtol=2e-6, atol=1e-7)
    # a row of two vectors or more reduces in vector partial results, guarded or not (1000)
    assert _has_partials(mod, "T_softmax_maxelem") == (n >= 32)
    assert _has_partials(mod, "T_softmax_expsum") == (n >= 32)


@pytest.mark.parametrize("n", ODD_ROWS)
def test_layer_norm_over_odd_rows_matches_numpy(n):
    x = te.placeholder((6, n), name="x")
    g = te.placeholder((n,), name="g")
    b = te.placeholder((n,), name="b")
    _, lib = _build([topi.nn.layer_norm(x, g, b, axis=-1, epsilon=1e-5)], [x, g, b])
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((6, n)) * 3 + 1).astype("float32")
    gv, bv = (rng.standard_normal(n).astype("float32") for _ in range(2))
    out = tvm.nd.array(np.zeros_like(a))
    lib(tvm.nd.array(a), tvm.nd.array(gv), tvm.nd.array(bv), out)
    a64 = a.astype(np.float64)
    mean, var = a64.mean(-1, keepdims=True), a64.var(-1, keepdims=True)
    ref = (a64 - mean) / np.sqrt(var + 1e-5) * gv + bv
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_guarded_row_max_is_bit_exact_and_padding_never_wins():
    # all values below -1e30: a lane past the row's end left at 0 (not -inf) would win the max
    n = 197
    x = te.placeholder((4, n), name="x")
    k = te.reduce_axis((0, n), "k")
    m = te.compute((4,), lambda i: te.max(x[i, k], axis=k), name="m")
    mod, lib = _build([m], [x])
    assert _has_partials(mod, "m")
    a = -np.random.default_rng(1).uniform(1e31, 1e32, (4, n)).astype("float32")
    a[:, 196] = -1e30  # the maximum sits in the guarded last vector
    out = tvm.nd.array(np.zeros(4, "float32"))
    lib(tvm.nd.array(a), out)
    np.testing.assert_array_equal(out.numpy(), a.max(-1))


def test_guarded_row_sum_matches_numpy_within_rounding():
    n = 1001  # 62 vectors and a tail of 9
    x = te.placeholder((8, n), name="x")
    k = te.reduce_axis((0, n), "k")
    s = te.compute((8,), lambda i: te.sum(x[i, k], axis=k), name="s")
    mod, lib = _build([s], [x])
    assert _has_partials(mod, "s")
    a = np.random.default_rng(2).standard_normal((8, n)).astype("float32")
    out = tvm.nd.array(np.zeros(8, "float32"))
    lib(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.astype(np.float64).sum(-1), rtol=1e-5, atol=1e-4)


@T.prim_func
def _row_sum(A: T.Buffer((4, 40), "float32"), S: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 40):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]


def _run_row_sum(func):
    lib = tvm.build(func, target="llvm")
    a = np.random.default_rng(3).standard_normal((4, 40)).astype("float32")
    out = tvm.nd.array(np.zeros(4, "float32"))
    lib(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.sum(-1), rtol=1e-5, atol=1e-5)


def test_rfactor_of_the_lanes_of_a_guarded_split_guards_the_partial_value():
    sch = tir.Schedule(_row_sum)
    _, k = sch.get_loops(sch.get_block("S"))
    _, ki = sch.split(k, [None, 16])  # 3 * 16 > 40
    rf = sch.rfactor(ki, 1)
    script = sch.mod["main"].script()
    # lanes past the row's end add the identity, so compute_at may drop the predicate, which
    # stays on the partial block only (for loop partitioning: every lane's init still runs)
    assert "T.if_then_else(vk_0 * 16 + vk_1 < 40" in script
    assert script.count("T.where(k_0 * 16 + k_1 < 40)") == 1
    sch.vectorize(sch.get_loops(rf)[-1])
    _run_row_sum(sch.mod["main"])


@pytest.mark.parametrize("slots", [6, 9])
def test_rfactor_of_the_outer_part_of_a_guarded_split_matches_numpy(slots):
    # 9 slots of 5: slot 8 covers k = 40..44 only and keeps the identity
    sch = tir.Schedule(_row_sum)
    _, k = sch.get_loops(sch.get_block("S"))
    ko, _ = sch.split(k, [slots, None])
    sch.rfactor(ko, 1)
    _run_row_sum(sch.mod["main"])


def test_compute_at_of_a_guarded_partial_block_stays_in_bounds():
    # compute_at rebuilds the partial block's loops from its iterators' box (3 x 16 > 40):
    # the guard lives in the value, so the rows still sum to numpy's
    sch = tir.Schedule(_row_sum_then_center)
    s = sch.get_block("S")
    _, k = sch.get_loops(s)
    _, ki = sch.split(k, [None, 16])
    rf = sch.rfactor(ki, 1)
    row = sch.get_loops(sch.get_block("B"))[0]
    sch.compute_at(sch.get_block("S"), row)
    sch.compute_at(rf, row)
    lib = tvm.build(sch.mod["main"], target="llvm")
    a = np.random.default_rng(4).standard_normal((4, 40)).astype("float32")
    out = tvm.nd.array(np.zeros_like(a))
    lib(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a - a.sum(-1, keepdims=True), rtol=1e-5, atol=1e-5)


@T.prim_func
def _row_sum_then_center(A: T.Buffer((4, 40), "float32"), B: T.Buffer((4, 40), "float32")):
    S = T.alloc_buffer((4,), "float32")
    for i, k in T.grid(4, 40):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]
    for i, j in T.grid(4, 40):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] - S[vi]
