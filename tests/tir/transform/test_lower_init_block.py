import numpy as np
import pytest
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.error import BuildError
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.tir import EQ, IfThenElse, SeqStmt
from minitvm.tir.transform import LowerInitBlock, lower_init_block


def _blocks(func):
    found = []
    tir.post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, tir.Block) else None)
    return {b.name_hint: b for b in found}


def _realizes(stmt):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, tir.BlockRealize) else None)
    return found


def test_init_is_hoisted_in_front_of_the_reduction_loop():
    func = tb.matmul()
    before = _blocks(func)["C"]
    out = lower_init_block(func)
    after = _blocks(out)
    assert after["C"].init is None and after["C_init"].init is None
    j_loop = out.body.block.body.body  # for i: for j: {C_init; for k: C}
    assert isinstance(j_loop.body, SeqStmt)
    init, k_loop = j_loop.body.seq
    assert isinstance(init, tir.BlockRealize) and isinstance(k_loop, tir.For)
    assert [iv.var.name for iv in init.block.iter_vars] == [iv.var.name for iv in before.iter_vars[:2]]
    assert_structural_equal(init.block.body, before.init, map_free_vars=True)


def test_several_reduction_vars_hoist_in_front_of_the_outermost():
    A = tir.decl_buffer((4, 3, 2), "float32", "A")
    S = tir.decl_buffer((4,), "float32", "S")

    def body(i, k0, k1):
        return tb.block(
            "S",
            [(tb.DP, 4, i), (tb.RED, 3, k0), (tb.RED, 2, k1)],
            lambda vi, a, b: tir.BufferStore(S, S[vi] + A[vi, a, b], (vi,)),
            init_fn=lambda vi, a, b: tir.BufferStore(S, 1.0, (vi,)),
        )

    func = tb.func_of([A, S], tb.loops([("i", 4), ("k0", 3), ("k1", 2)], body))
    out = lower_init_block(func)
    init, k0_loop = out.body.block.body.body.seq
    assert init.block.name_hint == "S_init" and k0_loop.loop_var.name == "k0"
    data = np.random.default_rng(0).random((4, 3, 2), "float32")
    res = run_prim_func(out, data, np.zeros(4, "float32"))[1]
    np.testing.assert_allclose(res, data.sum((1, 2)) + 1, rtol=1e-6)


def test_spatial_loops_inside_the_reduction_loop_are_copied_for_the_init():
    A = tir.decl_buffer((3, 5), "float32", "A")
    S = tir.decl_buffer((5,), "float32", "S")

    def body(k, j):  # k outside j, as after reorder(k, j)
        return tb.block(
            "S",
            [(tb.DP, 5, j), (tb.RED, 3, k)],
            lambda vj, vk: tir.BufferStore(S, S[vj] + A[vk, vj], (vj,)),
            init_fn=lambda vj, vk: tir.BufferStore(S, 0.0, (vj,)),
        )

    out = lower_init_block(tb.func_of([A, S], tb.loops([("k", 3), ("j", 5)], body)))
    init_loop, k_loop = out.body.block.body.seq
    assert init_loop.loop_var.name == "j" and k_loop.loop_var.name == "k"
    assert init_loop.loop_var is not k_loop.body.loop_var  # a fresh copy of j
    data = np.random.default_rng(2).random((3, 5), "float32")
    res = run_prim_func(out, data, np.full(5, 9.0, "float32"))[1]
    np.testing.assert_allclose(res, data.sum(0), rtol=1e-6)


def test_spatial_predicate_guards_the_init_and_reduction_predicate_does_not():
    out = lower_init_block(tb.split_sum(n=3, k=10, factor=4))
    init = [r for r in _realizes(out.body) if r.block.name_hint == "S_init"]
    assert len(init) == 1 and init[0].predicate.value == 1  # `ko * 4 + ki < 10` stays behind
    data = np.random.default_rng(3).random((3, 10), "float32")
    res = run_prim_func(out, data, np.full(3, 5.0, "float32"))[1]
    np.testing.assert_allclose(res, data.sum(1), rtol=1e-5)


def _fused_sum(k_extent):
    """S[i] = sum_k A[i, k] over one loop fused from i and k (spatial and reduction mixed)."""
    A = tir.decl_buffer((4, k_extent), "float32", "A")
    S = tir.decl_buffer((4,), "float32", "S")

    def body(f):
        return tb.block(
            "S",
            [(tb.DP, 4, f // k_extent), (tb.RED, k_extent, f % k_extent)],
            lambda vi, vk: tir.BufferStore(S, S[vi] + A[vi, vk], (vi,)),
            init_fn=lambda vi, vk: tir.BufferStore(S, 0.0, (vi,)),
        )

    return tb.func_of([A, S], tb.loops([("f", 4 * k_extent)], body))


def test_fused_spatial_and_reduction_loop_keeps_the_first_iteration_guard():
    out = lower_init_block(_fused_sum(3))
    guard = _blocks(out)["S"].body.seq[0]
    assert isinstance(guard, IfThenElse) and isinstance(guard.condition, EQ)
    data = np.random.default_rng(4).random((4, 3), "float32")
    res = run_prim_func(out, data, np.full(4, 5.0, "float32"))[1]
    np.testing.assert_allclose(res, data.sum(1), rtol=1e-6)


def test_fused_loop_over_a_reduction_that_may_be_empty_is_refused():
    with pytest.raises(BuildError, match=r"block 'S'.*may be empty.*decompose_reduction"):
        lower_init_block(_fused_sum(tir.Var("K")))


def test_block_without_init_is_unchanged():
    func = tb.elementwise()
    assert lower_init_block(func) is func


def test_pass_object_applies_to_every_primfunc_of_a_module():
    mod = IRModule({"mm": tb.matmul(), "sum": tb.split_sum()})
    out = LowerInitBlock()(mod)
    for name in ("mm", "sum"):
        assert all(b.init is None for b in _blocks(out[name]).values())
    assert all(b.init is not None for b in _blocks(mod["mm"]).values() if b.name_hint == "C")


def test_numerics_unchanged():
    rng = np.random.default_rng(1)
    a, b = rng.random((4, 3), "float32"), rng.random((3, 5), "float32")
    c = np.full((4, 5), 7.0, "float32")  # garbage in the output: the init must overwrite it
    out = run_prim_func(lower_init_block(tb.matmul()), a, b, c)[2]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
