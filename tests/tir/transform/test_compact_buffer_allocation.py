import numpy as np
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.tir import Allocate, BufferStore, For, ForKind
from minitvm.tir.transform import (
    CompactBufferAllocation,
    compact_buffer_allocation,
    convert_blocks_to_loops,
    lower_init_block,
    plan_and_update_buffer_allocation_location,
)


def _planned(func):
    return plan_and_update_buffer_allocation_location(
        convert_blocks_to_loops(lower_init_block(func))
    )


def _tiled_cache(n=16, tile=4):
    """for io: (for ii: C[io*4+ii] = A[..] * 2) (for ii: B[io*4+ii] = C[io*4+ii] + 1), C full-size."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    C = tir.decl_buffer((n,), "float32", "C_local", scope="local")
    io = tir.Var("io")

    def stage(write):
        ii = tir.Var("ii")
        return For(ii, 0, tile, ForKind.SERIAL, write(io * tile + ii))

    first = stage(
        lambda v: tb.block("C", [(tb.DP, n, v)], lambda x: BufferStore(C, A[x] * 2.0, (x,)))
    )
    second = stage(
        lambda v: tb.block("B", [(tb.DP, n, v)], lambda x: BufferStore(B, C[x] + 1.0, (x,)))
    )
    body = For(io, 0, n // tile, ForKind.SERIAL, tir.SeqStmt((first, second)))
    return tb.func_of([A, B], body, allocs=[C])


def test_tile_cache_shrinks_to_the_tile():
    func = compact_buffer_allocation(_planned(_tiled_cache()))
    alloc = func.body.body
    assert isinstance(alloc, Allocate) and [int(e) for e in alloc.extents] == [4]
    assert alloc.annotations["storage_scope"] == "local"
    stores = []
    tir.post_order_visit(
        func.body,
        lambda n: (
            stores.append(n) if isinstance(n, BufferStore) and n.buffer.name == "C_local" else None
        ),
    )
    assert isinstance(stores[0].indices[0], tir.Var)  # io*4 + ii - io*4 simplified to ii
    a = np.arange(16, dtype="float32")
    np.testing.assert_allclose(run_prim_func(func, a, a * 0)[1], a * 2 + 1)


def test_row_buffer_of_fused_softmax_shrinks_to_one_row():
    func = CompactBufferAllocation()(_planned(tb.softmax(3, 6, fused=True)))
    allocs = []
    tir.post_order_visit(func.body, lambda n: allocs.append(n) if isinstance(n, Allocate) else None)
    assert sorted([int(e) for e in a.extents] for a in allocs) == [[1], [1, 6]]
    a = np.random.default_rng(0).random((3, 6), "float32")
    ref = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    np.testing.assert_allclose(run_prim_func(func, a, a * 0)[1], ref, rtol=1e-6)


def test_buffer_used_by_whole_nests_keeps_its_shape():
    func = _planned(tb.softmax(3, 6, fused=False))
    assert compact_buffer_allocation(func).body is func.body
