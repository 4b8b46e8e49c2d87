import numpy as np
import pytest
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.tir import Broadcast, BufferStore, For, ForKind, IfThenElse, Ramp, Select
from minitvm.tir.transform import VectorizeLoop, vectorize_loop


def _flat(n, body_fn, extent=None, outer=None):
    """A flat function over A, B of `n` elements; `body_fn(A, B, i)` is the VECTORIZED loop body."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i")
    loop = For(i, 0, extent or n, ForKind.VECTORIZED, body_fn(A, B, i))
    return tb.func_of([A, B], loop).replace(body=loop), A, B


def _check_numerics(func, n):
    a = np.random.default_rng(0).random(n, "float32") + 0.5
    want = run_prim_func(func, a, np.zeros(n, "float32"))
    got = run_prim_func(vectorize_loop(func), a, np.zeros(n, "float32"))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_elementwise_becomes_ramp_and_broadcast():
    func, A, B = _flat(8, lambda A, B, i: BufferStore(B, A[i] * 2.0 + 1.0, (i,)))
    out = vectorize_loop(func)
    r = Ramp(0, 1, 8)
    expected = BufferStore(
        B,
        A.vload(r) * Broadcast(tir.const(2.0, "float32"), 8)
        + Broadcast(tir.const(1.0, "float32"), 8),
        (r,),
    )
    assert_structural_equal(out.body, expected)
    _check_numerics(func, 8)


def test_loop_invariant_index_and_intrinsics_vectorize():
    func, _, _ = _flat(
        16, lambda A, B, i: BufferStore(B, tir.exp(A[i + 8]) + A[0], (i + 8,)), extent=8
    )
    out = vectorize_loop(func)
    assert isinstance(out.body, BufferStore) and out.body.value.dtype.lanes == 8
    idx = out.body.indices[0]
    assert isinstance(idx, Ramp) and int(idx.base) == 8
    _check_numerics(func, 16)


def test_scalar_accumulator_is_left_as_vectorized_loop():
    func, _, _ = _flat(8, lambda A, B, i: BufferStore(B, B[0] + A[i], (0,)))
    out = vectorize_loop(func)
    assert isinstance(out.body, For) and out.body.kind == ForKind.VECTORIZED


def test_gather_is_left_as_vectorized_loop():
    func, _, _ = _flat(8, lambda A, B, i: BufferStore(B, A[tir.floordiv(i, 2)], (i,)))
    assert vectorize_loop(func).body.kind == ForKind.VECTORIZED


def test_safe_if_then_else_becomes_select():
    func, _, _ = _flat(
        8, lambda A, B, i: BufferStore(B, tir.if_then_else(i < 4, A[i], A[7 - i]), (i,))
    )
    out = vectorize_loop(func)
    assert isinstance(out.body, BufferStore) and isinstance(out.body.value, Select)
    _check_numerics(func, 8)


def test_guarded_load_that_may_be_out_of_bounds_keeps_the_loop():
    func, _, _ = _flat(
        8, lambda A, B, i: BufferStore(B, tir.if_then_else(i < 4, A[i + 4], 0.0), (i,))
    )
    assert vectorize_loop(func).body.kind == ForKind.VECTORIZED


def test_invariant_condition_stays_an_if_around_vector_code():
    n = tir.Var("n")

    def body(A, B, i):
        return IfThenElse(n > 2, BufferStore(B, A[i], (i,)))

    func, _, _ = _flat(8, body)
    out = vectorize_loop(func)
    assert isinstance(out.body, IfThenElse) and isinstance(out.body.then_case.indices[0], Ramp)


def test_varying_branch_becomes_masked_store_when_in_bounds():
    func, _, _ = _flat(
        8, lambda A, B, i: IfThenElse(i < 5, BufferStore(B, A[i], (i,)), BufferStore(B, A[0], (i,)))
    )
    out = vectorize_loop(func)
    assert isinstance(out.body, tir.SeqStmt) and all(
        isinstance(s.value, Select) for s in out.body.seq
    )
    _check_numerics(func, 8)


def test_long_loop_is_split_into_native_chunks():
    func, _, _ = _flat(128, lambda A, B, i: BufferStore(B, A[i] + 1.0, (i,)))
    out = vectorize_loop(func)
    assert (
        isinstance(out.body, For) and out.body.kind == ForKind.SERIAL and int(out.body.extent) == 8
    )
    assert out.body.body.indices[0].lanes == 16
    _check_numerics(func, 128)


@pytest.mark.parametrize("extent", [0, 1])
def test_trivial_extents(extent):
    func, _, _ = _flat(4, lambda A, B, i: BufferStore(B, A[i], (i,)), extent=extent)
    out = vectorize_loop(func)
    assert not isinstance(out.body, For)


def test_nested_loop_is_left_alone():
    def body(A, B, i):
        j = tir.Var("j")
        return For(j, 0, 2, ForKind.SERIAL, BufferStore(B, A[i * 2 + j], (i * 2 + j,)))

    func, _, _ = _flat(8, body, extent=4)
    out = VectorizeLoop()(func)
    assert out.body.kind == ForKind.VECTORIZED
