import numpy as np
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.tir import Allocate, BufferStore, DeclBuffer, For, ForKind
from minitvm.tir.transform import (
    convert_blocks_to_loops,
    lower_init_block,
    plan_and_update_buffer_allocation_location,
)


def _loops_only(func):
    return convert_blocks_to_loops(lower_init_block(func))


def test_allocation_moves_into_the_common_loop_of_its_uses():
    func = plan_and_update_buffer_allocation_location(_loops_only(tb.softmax(fused=True)))
    loop = func.body
    assert isinstance(loop, For) and loop.loop_var.name == "i"
    assert isinstance(loop.body, Allocate) and loop.body.body.buffer.name == "E"
    assert isinstance(loop.body.body.body, Allocate) and loop.body.body.body.body.buffer.name == "S"


def test_allocation_used_by_separate_nests_stays_at_the_top():
    func = plan_and_update_buffer_allocation_location(_loops_only(tb.softmax(fused=False)))
    assert isinstance(func.body, Allocate) and isinstance(func.body.body, DeclBuffer)


def _local_accumulator():
    """for io: for ii: acc[0] = A[io*4+ii]; B[io*4+ii] = acc[0] * 2 — acc allocated at the root."""
    A = tir.decl_buffer((16,), "float32", "A")
    B = tir.decl_buffer((16,), "float32", "B")
    acc = tir.decl_buffer((1,), "float32", "acc", scope="local")

    def body(io, ii):
        return tir.SeqStmt(
            (
                tb.block("acc", [(tb.DP, 16, io * 4 + ii)], lambda v: BufferStore(acc, A[v], (0,))),
                tb.block(
                    "B", [(tb.DP, 16, io * 4 + ii)], lambda v: BufferStore(B, acc[0] * 2.0, (v,))
                ),
            )
        )

    return tb.func_of([A, B], tb.loops([("io", 4), ("ii", 4)], body), allocs=[acc])


def test_local_cache_is_allocated_inside_the_tile_with_local_scope():
    func = plan_and_update_buffer_allocation_location(_loops_only(_local_accumulator()))
    inner = func.body.body
    assert inner.loop_var.name == "ii" and isinstance(inner.body, Allocate)
    assert inner.body.annotations["storage_scope"] == "local"
    a = np.arange(16, dtype="float32")
    np.testing.assert_allclose(run_prim_func(func, a, a * 0)[1], a * 2)


def test_never_placed_inside_a_vectorized_loop():
    func = _local_accumulator()
    body = func.body.block.body
    func = func.replace(
        body=func.body.replace(
            block=func.body.block.replace(
                body=body.replace(body=body.body.replace(kind=ForKind.VECTORIZED))
            )
        )
    )
    out = plan_and_update_buffer_allocation_location(_loops_only(func))
    assert isinstance(out.body, For) and isinstance(out.body.body, Allocate)


def test_unused_allocation_is_dropped():
    A = tir.decl_buffer((4,), "float32", "A")
    unused = tir.decl_buffer((4,), "float32", "unused")
    body = tb.loops(
        [("i", 4)], lambda i: tb.block("A", [(tb.DP, 4, i)], lambda v: BufferStore(A, 0.0, (v,)))
    )
    out = plan_and_update_buffer_allocation_location(
        _loops_only(tb.func_of([A], body, allocs=[unused]))
    )
    assert isinstance(out.body, For)


def test_function_without_allocations_is_returned_as_is():
    func = _loops_only(tb.matmul())
    assert plan_and_update_buffer_allocation_location(func) is func
