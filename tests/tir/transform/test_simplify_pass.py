import numpy as np
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.tir import BufferStore, For, ForKind, IfThenElse
from minitvm.tir.transform import simplify


def _guarded(n, factor, guard_bound):
    """for io, ii: if likely(io*factor + ii < guard_bound): B[io*factor+ii] = A[...] + 1."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    io, ii = tir.Var("io"), tir.Var("ii")
    idx = io * factor + ii
    store = BufferStore(B, A[idx] + 1.0, (idx,))
    body = For(
        io,
        0,
        n // factor + (n % factor > 0),
        ForKind.SERIAL,
        For(ii, 0, factor, ForKind.SERIAL, IfThenElse(tir.likely(idx < guard_bound), store)),
    )
    return tb.func_of([A, B], body).replace(body=body), store


def test_provably_true_guard_is_removed():
    func, _ = _guarded(16, 4, 16)
    out = simplify(func)
    assert isinstance(out.body.body.body, BufferStore)


def test_unprovable_guard_is_kept_as_likely():
    func, _ = _guarded(15, 4, 15)
    guard = simplify(func).body.body.body
    assert isinstance(guard, IfThenElse)
    assert isinstance(guard.condition, tir.Call) and guard.condition.op.name == "tir.likely"
    a = np.arange(15, dtype="float32")
    np.testing.assert_array_equal(run_prim_func(simplify(func), a, a * 0)[1], a + 1)


def test_provably_false_guard_removes_the_branch():
    func, _ = _guarded(16, 4, 0)
    out = simplify(func)
    kinds = []
    tir.post_order_visit(out.body, lambda n: kinds.append(type(n).__name__))
    assert "BufferStore" not in kinds


def test_indices_simplified_with_loop_ranges():
    A = tir.decl_buffer((8,), "float32", "A")
    i = tir.Var("i")
    body = For(
        i, 0, 8, ForKind.SERIAL, BufferStore(A, 1.0, (tir.floordiv(i, 8) * 8 + tir.floormod(i, 8),))
    )
    out = simplify(tb.func_of([A], body).replace(body=body))
    assert_structural_equal(out.body.body.indices[0], out.body.loop_var)


def test_single_iteration_loop_is_replaced_by_its_value():
    A = tir.decl_buffer((8,), "float32", "A")
    i, j = tir.Var("i"), tir.Var("j")
    body = For(i, 0, 8, ForKind.SERIAL, For(j, 0, 1, ForKind.SERIAL, BufferStore(A, 1.0, (i + j,))))
    out = simplify(tb.func_of([A], body).replace(body=body))
    assert_structural_equal(out.body, For(i, 0, 8, ForKind.SERIAL, BufferStore(A, 1.0, (i,))))


def test_inner_guard_uses_outer_guard_as_a_fact():
    A = tir.decl_buffer((8,), "float32", "A")
    i = tir.Var("i")
    inner = IfThenElse(i < 6, BufferStore(A, 1.0, (i,)))
    body = For(i, 0, 8, ForKind.SERIAL, IfThenElse(tir.likely(i < 4), inner))
    out = simplify(tb.func_of([A], body).replace(body=body))
    assert isinstance(out.body.body.then_case, BufferStore)
