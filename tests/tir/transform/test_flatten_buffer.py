import numpy as np
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.tir import Allocate, BufferStore, For, ForKind
from minitvm.tir.transform import (
    convert_blocks_to_loops,
    flatten_buffer,
    lower_init_block,
    plan_and_update_buffer_allocation_location,
)


def _loops(func):
    return plan_and_update_buffer_allocation_location(
        convert_blocks_to_loops(lower_init_block(func))
    )


def _accesses(stmt):
    found = []
    tir.post_order_visit(
        stmt, lambda n: found.append(n) if isinstance(n, tir.BufferLoad | BufferStore) else None
    )
    return found


def test_row_major_offsets_over_the_same_data_var():
    A = tir.decl_buffer((4, 8), "float32", "A")
    B = tir.decl_buffer((4, 8), "float32", "B")
    i, j = tir.Var("i"), tir.Var("j")
    loop = For(
        i, 0, 4, ForKind.SERIAL, For(j, 0, 8, ForKind.SERIAL, BufferStore(B, A[i, j], (i, j)))
    )
    func = tb.func_of([A, B], loop)
    func = func.replace(body=loop)
    out = flatten_buffer(func)
    store = out.body.body.body
    assert store.buffer.data is B.data and [int(s) for s in store.buffer.shape] == [32]
    assert store.value.buffer.data is A.data
    Af = tir.decl_buffer((32,), "float32", "A", data=A.data)
    Bf = tir.decl_buffer((32,), "float32", "B", data=B.data)
    expected = For(
        i,
        0,
        4,
        ForKind.SERIAL,
        For(j, 0, 8, ForKind.SERIAL, BufferStore(Bf, Af[i * 8 + j], (i * 8 + j,))),
    )
    assert_structural_equal(out.body, expected)
    assert all(out.buffer_map[p] is b for p, b in func.buffer_map.items())  # shapes kept


def test_all_accesses_are_flat_and_allocations_have_one_extent():
    out = flatten_buffer(_loops(tb.softmax(fused=False)))
    assert all(len(a.indices) == 1 for a in _accesses(out.body))
    allocs = []
    tir.post_order_visit(out.body, lambda n: allocs.append(n) if isinstance(n, Allocate) else None)
    assert sorted(int(a.extents[0]) for a in allocs) == [3, 18]
    kinds = []
    tir.post_order_visit(out.body, lambda n: kinds.append(type(n).__name__))
    assert "DeclBuffer" not in kinds


def test_strided_buffer_uses_its_strides():
    A = tir.decl_buffer((4, 3), "float32", "A", strides=(1, 4))  # column-major view
    B = tir.decl_buffer((4, 3), "float32", "B")
    i, j = tir.Var("i"), tir.Var("j")
    loop = For(
        i, 0, 4, ForKind.SERIAL, For(j, 0, 3, ForKind.SERIAL, BufferStore(B, A[i, j], (i, j)))
    )
    func = tb.func_of([A, B], loop).replace(body=loop)
    out = flatten_buffer(func)
    load = out.body.body.body.value
    assert [int(s) for s in load.buffer.shape] == [12]
    a = np.arange(12, dtype="float32").reshape(3, 4)  # memory of a column-major 4x3
    got = run_prim_func(out, a.T, np.zeros((4, 3), "float32"))[1]
    np.testing.assert_array_equal(got, a.T)


def test_flat_buffers_are_left_alone():
    func = flatten_buffer(_loops(tb.matmul()))
    assert flatten_buffer(func).body is func.body


def test_numerics_unchanged():
    func = _loops(tb.softmax(fused=True))
    a = np.random.default_rng(0).random((3, 6), "float32")
    np.testing.assert_allclose(
        run_prim_func(flatten_buffer(func), a, a * 0)[1], run_prim_func(func, a, a * 0)[1]
    )
