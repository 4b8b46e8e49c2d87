import numpy as np
import pytest
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.error import BuildError
from minitvm.ir import assert_structural_equal
from minitvm.tir import Allocate, BufferStore, DeclBuffer, For, ForKind, IfThenElse
from minitvm.tir.transform import convert_blocks_to_loops, lower_init_block


def _kinds(stmt):
    found = []
    tir.post_order_visit(stmt, lambda n: found.append(type(n).__name__))
    return found


def test_iter_vars_replaced_by_their_bindings():
    A = tir.decl_buffer((4, 8), "float32", "A")
    B = tir.decl_buffer((4, 8), "float32", "B")

    def body(i, j):
        return tb.block(
            "B",
            [(tb.DP, 4, i), (tb.DP, 8, j)],
            lambda vi, vj: BufferStore(B, A[vi, vj] + 1.0, (vi, vj)),
        )

    func = tb.func_of([A, B], tb.loops([("i", 4), ("j", 8)], body))
    out = convert_blocks_to_loops(func)
    i, j = tir.Var("i"), tir.Var("j")
    expected = For(
        i, 0, 4, ForKind.SERIAL, For(j, 0, 8, ForKind.SERIAL, BufferStore(B, A[i, j] + 1.0, (i, j)))
    )
    assert_structural_equal(out.body, expected)


def test_affine_bindings_are_substituted():
    func = tb.split_sum()
    out = convert_blocks_to_loops(lower_init_block(func))
    assert "Block" not in _kinds(out.body) and "BlockRealize" not in _kinds(out.body)
    loads = []
    tir.post_order_visit(
        out.body,
        lambda n: (
            loads.append(n) if isinstance(n, tir.BufferLoad) and n.buffer.name == "A" else None
        ),
    )
    ko_ki = loads[0].indices[1]  # vk → ko * 4 + ki
    assert isinstance(ko_ki, tir.Add) and isinstance(ko_ki.a, tir.Mul)


def test_predicate_becomes_likely_guard():
    out = convert_blocks_to_loops(lower_init_block(tb.split_sum()))
    guard = out.body.body.seq[1].body.body  # for i: {S[i] = 0; for ko: for ki: if ...}
    assert isinstance(guard, IfThenElse)
    cond = guard.condition
    assert isinstance(cond, tir.Call) and cond.op.name == "tir.likely"
    assert isinstance(cond.args[0], tir.LT)


def test_alloc_buffers_become_allocate_with_decl_buffer():
    out = convert_blocks_to_loops(lower_init_block(tb.softmax(fused=False)))
    alloc = out.body
    assert isinstance(alloc, Allocate) and isinstance(alloc.body, DeclBuffer)
    assert alloc.body.buffer.name == "E" and alloc.annotations["storage_scope"] == "global"
    assert [int(e) for e in alloc.extents] == [3, 6]
    assert isinstance(alloc.body.body, Allocate) and alloc.body.body.body.buffer.name == "S"


def test_pragma_annotation_moves_to_enclosing_loop():
    A = tir.decl_buffer((4,), "float32", "A")

    def body(i):
        realize = tb.block("A", [(tb.DP, 4, i)], lambda vi: BufferStore(A, 1.0, (vi,)))
        blk = realize.block.replace(annotations={"pragma_unroll_explicit": 1, "schedule_rule": "x"})
        return realize.replace(block=blk)

    out = convert_blocks_to_loops(tb.func_of([A], tb.loops([("i", 4)], body)))
    assert dict(out.body.annotations) == {"pragma_unroll_explicit": 1}


def test_match_buffer_that_cannot_view_its_region_is_rejected_with_advice():
    # a 1-element view of the whole 2-D buffer would drop a dimension of extent 128
    func = tb.elementwise()
    realize = func.body.block.body.body.body
    A = func.buffer_params()[0]
    sub = tir.decl_buffer((1,), "float32", "sub")
    mb = tir.MatchBufferRegion(sub, tir.BufferRegion.full_region(A))
    bad = realize.replace(block=realize.block.replace(match_buffers=(mb,)))
    func = func.replace(body=tir.substitute(func.body, {}))
    body = func.body.block.body
    new_inner = body.replace(body=body.body.replace(body=bad))
    func = func.replace(body=func.body.replace(block=func.body.block.replace(body=new_inner)))
    with pytest.raises(BuildError, match="block 'B': T.match_buffer 'sub' of 'A': region dimension 0"):
        convert_blocks_to_loops(func)


@pytest.mark.parametrize("build", [tb.matmul, tb.split_sum, lambda: tb.softmax(fused=True)])
def test_numerics_unchanged(build):
    func = lower_init_block(build())
    rng = np.random.default_rng(0)
    args = [rng.random([int(d) for d in b.shape], "float32") for b in func.buffer_params()]
    expected = run_prim_func(func, *[a.copy() for a in args])
    got = run_prim_func(convert_blocks_to_loops(func), *[a.copy() for a in args])
    for got, want in zip(got, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)
