import numpy as np
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.tir import EQ, IfThenElse, SeqStmt
from minitvm.tir.transform import LowerInitBlock, lower_init_block


def _blocks(func):
    found = []
    tir.post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, tir.Block) else None)
    return {b.name_hint: b for b in found}


def test_init_becomes_guard_on_first_reduction_iteration():
    func = tb.matmul()
    before = _blocks(func)["C"]
    after = _blocks(lower_init_block(func))["C"]
    vk = before.iter_vars[2].var
    expected = SeqStmt((IfThenElse(EQ(vk, 0), before.init), before.body))
    assert after.init is None
    assert_structural_equal(after.body, expected)


def test_several_reduction_vars_all_at_their_min():
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
    blk = _blocks(lower_init_block(func))["S"]
    a, b = (iv.var for iv in _blocks(func)["S"].iter_vars[1:])
    assert_structural_equal(blk.body.seq[0].condition, tir.And(EQ(a, 0), EQ(b, 0)))
    data = np.random.default_rng(0).random((4, 3, 2), "float32")
    out = run_prim_func(lower_init_block(func), data, np.zeros(4, "float32"))[1]
    np.testing.assert_allclose(out, data.sum((1, 2)) + 1, rtol=1e-6)


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
