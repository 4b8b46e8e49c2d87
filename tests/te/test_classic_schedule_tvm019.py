"""Classic TE schedule names that TVM v0.19's TE tests and tutorials use: rfactor, store
predicates, InferBound for attached stages, multi-output compute_at, cache_write after
loop transformations, and the Stage annotations. Checked against numpy or exact ranges."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import ScheduleError, TargetError, TEError

RNG = np.random.default_rng(11)


def _run(s, args, *arrays):
    f = tvm.build(s, args)
    nd = [tvm.nd.array(a) for a in arrays]
    f(*nd)
    return [x.numpy() for x in nd]


def _row_sum(rows=5, cols=37):
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return A, B


# ----------------------------------------------------------------------------- rfactor


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_partial_sums_add_up_to_row_sums(factor_axis):
    A, B = _row_sum()
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=16)  # 37 is not a multiple of 16
    BF = s.rfactor(B, ki, factor_axis=factor_axis)
    expected_shape = (16, 5) if factor_axis == 0 else (5, 16)
    assert tuple(int(d) for d in BF.shape) == expected_shape
    a = RNG.random((5, 37), dtype=np.float32)
    _, b = _run(s, [A, B], a, np.zeros(5, "float32"))
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_rfactor_stage_can_be_computed_at_the_combining_loop():
    A, B = _row_sum()
    s = te.create_schedule(B.op)
    ko, _ki = s[B].split(B.op.reduce_axis[0], nparts=4)
    BF = s.rfactor(B, ko)
    _xo, _xi = s[B].split(s[B].op.axis[0], factor=2)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    a = RNG.random((5, 37), dtype=np.float32)
    _, b = _run(s, [A, B], a, np.zeros(5, "float32"))
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    # the combining stage now reduces over the factored loop
    assert s[B].op.reduce_axis[0].dom.extent.value == 4


def test_rfactor_of_a_tuple_reducer_keeps_argmax_semantics():
    def fcombine(x, y):
        take = x[1] >= y[1]
        return tvm.tir.Select(take, x[0], y[0]), tvm.tir.Select(take, x[1], y[1])

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    idx = te.placeholder((4, 24), name="idx", dtype="int32")
    val = te.placeholder((4, 24), name="val", dtype="float32")
    k = te.reduce_axis((0, 24), "k")
    T0, T1 = te.compute((4,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    _, ki = s[T0].split(k, factor=8)
    parts = s.rfactor(T0, ki)
    assert len(parts) == 2
    v = RNG.permutation(96).reshape(4, 24).astype("float32")  # distinct: one argmax
    ix = np.tile(np.arange(24, dtype="int32"), (4, 1))
    _, _, i_out, v_out = _run(
        s, [idx, val, T0, T1], ix, v, np.zeros(4, "int32"), np.zeros(4, "float32")
    )
    np.testing.assert_array_equal(i_out, v.argmax(axis=1))
    np.testing.assert_array_equal(v_out, v.max(axis=1))


def test_rfactor_of_a_spatial_loop_is_an_error():
    _, B = _row_sum()
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="data-parallel loop"):
        s.rfactor(B, B.op.axis[0])


def test_rfactor_with_init_is_an_error():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, init=1.0), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(k, factor=4)
    with pytest.raises(ScheduleError, match="init="):
        s.rfactor(B, ki)


def test_rfactor_after_cache_write_is_an_error():
    _, B = _row_sum()
    s = te.create_schedule(B.op)
    s.cache_write(B, "local")
    with pytest.raises(ScheduleError, match="call rfactor first"):
        s.rfactor(B, B.op.reduce_axis[0])


def test_rfactor_consumer_reads_the_combined_result():
    A, B = _row_sum()
    C = te.compute((5,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    s.rfactor(B, ki)
    a = RNG.random((5, 37), dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros(5, "float32"))
    np.testing.assert_allclose(c, 2 * a.sum(axis=1), rtol=1e-5)


def test_binding_a_reduction_loop_to_a_thread_needs_a_gpu():
    A, B = _row_sum()
    s = te.create_schedule(B.op)
    s[B].bind(B.op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    with pytest.raises(TargetError, match="cross-thread reduction"):
        tvm.lower(s, [A, B])


# ----------------------------------------------------------------------------- store predicate


def test_store_predicate_skips_the_elements_where_it_is_false():
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].set_store_predicate(tvm.tir.any(xi < 2, B.op.axis[0] >= 18))
    a = RNG.random(20, dtype=np.float32)
    _, b = _run(s, [A, B], a, np.full(20, -1, "float32"))
    i = np.arange(20)
    np.testing.assert_allclose(b, np.where((i % 8 < 2) | (i >= 18), 2 * a, -1))


def test_store_predicate_must_be_a_condition():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="not a condition"):
        s[B].set_store_predicate(B.op.axis[0] + 1)


def test_store_predicate_over_a_reduction_loop_is_an_error():
    A, B = _row_sum()
    s = te.create_schedule(B.op)
    s[B].set_store_predicate(B.op.reduce_axis[0] < 3)
    with pytest.raises(ScheduleError, match="reduction loop 'k'"):
        tvm.lower(s, [A, B])


def test_store_predicate_on_an_unbound_thread_axis_is_an_error():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    tx = te.thread_axis("threadIdx.x")
    s[B].set_store_predicate(tx.var.equal(0))
    with pytest.raises(ScheduleError, match="no loop of 'B'"):
        tvm.lower(s, [A, B])


# ----------------------------------------------------------------------------- InferBound


def _chain(shape):
    A = te.placeholder(shape, name="A")
    A1 = te.compute(shape, lambda *i: A(*i) * 2, name="A1")
    A2 = te.compute(shape, lambda *i: A1(*i) + 1, name="A2")
    return A, A1, A2


def test_infer_bound_of_a_stage_at_a_split_loop_is_one_tile():
    _, A1, A2 = _chain((te.var("m"), 10))
    s = te.create_schedule(A2.op)
    xo, _ = s[A2].split(A2.op.axis[0], 8)
    s[A1].compute_at(s[A2], xo)
    b = te.schedule.InferBound(s)
    assert b[A1.op.axis[0]].extent.value == 8
    assert b[A1.op.axis[1]].extent.value == 10
    ana = tvm.arith.Analyzer()
    assert ana.can_prove_equal(b[A1.op.axis[0]].min, xo.var * 8)


def test_infer_bound_shrinks_a_factor_larger_than_the_extent():
    _, A1, A2 = _chain((8,))
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(A2.op.axis[0], factor=32)
    s[A1].compute_at(s[A2], xo)
    b = te.schedule.InferBound(s)
    assert b[xi].extent.value == 8 and b[xo].extent.value == 1
    assert b[A1.op.axis[0]].extent.value == 8


def test_infer_bound_through_fuse_then_split():
    # 4 x 6 fused, split by 3: each outer step covers half a row, never two rows
    _, A1, A2 = _chain((4, 6))
    s = te.create_schedule(A2.op)
    fused = s[A2].fuse(*A2.op.axis)
    xo, _ = s[A2].split(fused, 3)
    s[A1].compute_at(s[A2], xo)
    b = te.schedule.InferBound(s)
    ana = tvm.arith.Analyzer()
    for step in range(8):
        at = {xo.var: tvm.tir.const(step, "int32")}
        row = tvm.tir.functor.substitute(b[A1.op.axis[0]].min, at)
        col = tvm.tir.functor.substitute(b[A1.op.axis[1]].min, at)
        assert ana.simplify(row).value == step * 3 // 6
        assert ana.simplify(col).value == step * 3 % 6
    assert b[A1.op.axis[1]].extent.value == 3


def test_infer_bound_of_a_stencil_producer_is_its_window():
    A = te.compute((12, 12), lambda i, j: i + j, name="A")
    B = te.compute((10, 10), lambda i, j: A[i, j] + A[i + 2, j + 1], name="B")
    s = te.create_schedule(B.op)
    s[A].compute_at(s[B], B.op.axis[1])
    b = te.schedule.InferBound(s)
    assert b[A.op.axis[0]].extent.value == 3
    assert b[A.op.axis[1]].extent.value == 2


def test_infer_bound_relaxes_threads_that_share_memory():
    _, A1, A2 = _chain((te.var("m"), 64))
    s = te.create_schedule(A2.op)
    s[A1].set_scope("shared")
    xo, xi = s[A2].split(A2.op.axis[0], 32)
    t, xii = s[A2].split(xi, nparts=16)
    s[A2].bind(t, te.thread_axis("threadIdx.x"))
    yo, yi = s[A2].split(A2.op.axis[1], 16)
    s[A2].reorder(xo, t, yo, xii, yi)
    s[A1].compute_at(s[A2], yo)
    b = te.schedule.InferBound(s)
    # shared: every thread's rows (16 threads x 2) are needed; local would need 2
    assert b[A1.op.axis[0]].extent.value == 32
    assert b[A1.op.axis[1]].extent.value == 16


def test_infer_bound_of_a_root_stage_is_what_its_consumers_read():
    A = te.placeholder((4, 10), name="A")
    P = te.compute((4, 10), lambda i, j: A[i, j] + 1, name="P")
    C = te.compute((4, 3), lambda i, j: P[i, j + 2], name="C")
    s = te.create_schedule(C.op)
    b = te.schedule.InferBound(s)
    assert (b[P.op.axis[1]].min.value, b[P.op.axis[1]].extent.value) == (2, 3)
    assert b[C.op.axis[1]].extent.value == 3


def test_infer_bound_of_the_rfactor_stage():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    kf, _ = s[B].split(k, nparts=4)
    BF = s.rfactor(B, kf)
    b = te.schedule.InferBound(s)
    assert b[BF.op.axis[0]].extent.value == 4
    assert b[BF.op.axis[1]].extent.value == 1


def test_infer_bound_sees_through_an_inlined_consumer():
    n = 32
    A = te.placeholder((n,), name="A")
    A1 = te.compute((n,), lambda i: A[i] + 1, name="A1")
    A2 = te.compute((n,), lambda i: A1[i + 0] * 2, name="A2")
    C = te.compute((n - 1,), lambda i: A2[i] + A2[i + 1], name="C")
    s = te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], factor=8)
    s[A1].compute_at(s[C], xo)
    s[A2].compute_inline()
    b = te.schedule.InferBound(s)
    assert b[A1.op.axis[0]].extent.value == 9  # 8 outputs read 9 neighbours
    a = RNG.random(n, dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros(n - 1, "float32"))
    np.testing.assert_allclose(c, 2 * (a[:-1] + 1) + 2 * (a[1:] + 1), rtol=1e-6)


# ----------------------------------------------------------------------------- cache_write


def test_cache_write_after_reorder_caches_in_the_loop_layout():
    A = te.placeholder((6, 5), name="A")
    C = te.compute((6, 5), lambda i, j: A[i, j] * 3, name="C")
    s = te.create_schedule(C.op)
    s[C].reorder(C.op.axis[1], C.op.axis[0])
    CC = s.cache_write(C, "global")
    assert tuple(int(d) for d in CC.shape) == (5, 6)  # transposed, as the loops run
    a = RNG.random((6, 5), dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros((6, 5), "float32"))
    np.testing.assert_allclose(c, 3 * a, rtol=1e-6)


def test_cache_write_after_an_uneven_split_guards_the_tail():
    A = te.placeholder((10,), name="A")
    C = te.compute((10,), lambda i: A[i] + 1, name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    CC = s.cache_write(C, "local")
    assert tuple(int(d) for d in CC.shape) == (3, 4)
    xo, _ = s[C].split(s[C].op.axis[0], factor=4)
    s[CC].compute_at(s[C], xo)
    a = RNG.random(10, dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros(10, "float32"))
    np.testing.assert_allclose(c, a + 1, rtol=1e-6)


def test_cache_write_of_a_split_reduction():
    A = te.placeholder((12, 7), name="A")
    k = te.reduce_axis((0, 7), "k")
    C = te.compute((12,), lambda i: te.sum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    s.cache_write(C, "global")
    a = RNG.random((12, 7), dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros(12, "float32"))
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5)


def test_cache_write_of_every_output_of_a_multi_output_compute():
    A = te.placeholder((4, 6), name="A")
    C1, C2 = te.compute((4, 6), lambda i, j: (A[i, j] + 1, A[i, j] * 2), name="C")
    s = te.create_schedule(C1.op)
    c1, c2 = s.cache_write([C1, C2], "local")
    assert (c1.op is c2.op) and c1.op.name == "C.local"
    a = RNG.random((4, 6), dtype=np.float32)
    _, o1, o2 = _run(s, [A, C1, C2], a, np.zeros((4, 6), "float32"), np.zeros((4, 6), "float32"))
    np.testing.assert_allclose(o1, a + 1, rtol=1e-6)
    np.testing.assert_allclose(o2, 2 * a, rtol=1e-6)


def test_cache_write_list_must_hold_every_output():
    A = te.placeholder((4,), name="A")
    C1, _ = te.compute((4,), lambda i: (A[i] + 1, A[i] * 2), name="C")
    s = te.create_schedule(C1.op)
    with pytest.raises(ScheduleError, match="every output"):
        s.cache_write([C1], "local")


def test_schedule_ops_returns_the_scheduled_loop_nest():
    A = te.placeholder((8,), name="A")
    C = te.compute((8,), lambda i: A[i] + 1, name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    stmt = te.schedule.ScheduleOps(s, te.schedule.InferBound(s))
    loops = []
    tvm.tir.functor.post_order_visit(
        stmt, lambda n: loops.append(n.loop_var.name) if isinstance(n, tvm.tir.For) else None
    )
    assert loops == ["i.inner", "i.outer"]


# ----------------------------------------------------------------------------- stage methods


def test_iter_var_attrs_report_loop_kinds_and_pragmas():
    A = te.placeholder((40,), name="A")
    T = te.compute((40,), lambda i: A[i] + 1, name="T")
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=8)
    s[T].pragma(xo, "my_hint", 3)
    s[T].vectorize(xi)
    attrs = s[T].iter_var_attrs
    assert attrs[xi].iter_type == tvm.tir.IterVar.Vectorized
    assert attrs[xo].pragma_keys[0].value == "my_hint" and attrs[xo].pragma_values == [3]


def test_vectorizing_a_reduction_loop_is_refused_at_once():
    _, B = _row_sum()
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="reduction loop"):
        s[B].vectorize(B.op.reduce_axis[0])


def test_compute_at_a_loop_split_later_attaches_to_its_inner_part():
    A = te.placeholder((10, 10), name="A")
    P = te.compute((10, 10), lambda i, j: A[i, j] * 2, name="P")
    C = te.compute((10, 10), lambda i, j: P[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    s[P].compute_at(s[C], C.op.axis[1])
    _, ji = s[C].split(C.op.axis[1], 2)
    assert s[C]._legal_attach(C.op.axis[1]) is ji
    a = RNG.random((10, 10), dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros((10, 10), "float32"))
    np.testing.assert_allclose(c, 2 * a + 1, rtol=1e-6)


def test_storage_align_asks_for_aligned_rows_and_keeps_values():
    A = te.placeholder((8, 8), name="A")
    P = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="P")
    C = te.compute((8, 8), lambda i, j: P[j, i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[P].storage_align(P.op.axis[0], 16, 1)
    func = s.build_prim_func([A, C])
    assert "buffer_dim_align" in func.script()  # the tir primitive's alignment request
    a = RNG.random((8, 8), dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros((8, 8), "float32"))
    np.testing.assert_allclose(c, 2 * (a.T + 1), rtol=1e-6)


def test_storage_align_needs_a_tensor_dimension():
    A = te.placeholder((8, 8), name="A")
    P = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="P")
    s = te.create_schedule(P.op)
    xo, _ = s[P].split(P.op.axis[0], 2)
    with pytest.raises(ScheduleError, match="op.axis"):
        s[P].storage_align(xo, 16, 1)


def test_env_threads_takes_thread_axes():
    A = te.placeholder((8,), name="A")
    P = te.compute((8,), lambda i: A[i] + 1, name="P")
    s = te.create_schedule(P.op)
    s[P].env_threads([te.thread_axis("threadIdx.x")])
    assert s[P].env_thread_axes[0].thread_tag == "threadIdx.x"
    with pytest.raises(ScheduleError, match="thread_axis"):
        s[P].env_threads([P.op.axis[0]])


def test_rfactor_keeps_untouched_reduce_axes_and_leaf_variables():
    n = 12
    A = te.placeholder((n, n, n), name="A")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k1, factor=4)
    BF = s.rfactor(B, ki)
    axes = BF.op.body[0].axis
    assert axes[0] is k2 and axes[1].var is ko.var
    a = RNG.random((n, n, n), dtype=np.float32)
    _, b = _run(s, [A, B], a, np.zeros(n, "float32"))
    np.testing.assert_allclose(b, a.sum(axis=(1, 2)), rtol=1e-4)


# ----------------------------------------------------------------------------- transform_layout


def test_transform_layout_of_an_input_changes_the_argument_shape():
    A = te.placeholder((24,), name="A")
    B = te.compute((24,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[A].transform_layout(lambda i: [i // 12, i // 4 % 3, i % 4])
    a = np.arange(24, dtype="float32")
    _, b = _run(s, [A, B], a.reshape(2, 3, 4), np.zeros(24, "float32"))
    np.testing.assert_allclose(b, 2 * a)


def test_transform_layout_of_a_compute_returns_loops_over_the_new_layout():
    A = te.placeholder((4, 6), name="A")
    B = te.compute((4, 6), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    axes = s[B].transform_layout(lambda i, j: [j, i])
    assert [int(iv.dom.extent) for iv in axes] == [6, 4]
    s[B].split(axes[0], nparts=2)
    a = RNG.random((4, 6), dtype=np.float32)
    _, b = _run(s, [A, B], a, np.zeros((6, 4), "float32"))
    np.testing.assert_allclose(b, (a + 1).T, rtol=1e-6)


def test_transform_layout_of_a_reduction_keeps_its_reduce_axis():
    A = te.placeholder((3, 5, 7), name="A")
    k = te.reduce_axis((0, 7), name="k")
    B = te.compute((3, 5), lambda i, j: te.sum(A[i, j, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].transform_layout(lambda i, j: [j, i])
    a = RNG.random((3, 5, 7), dtype=np.float32)
    _, b = _run(s, [A, B], a, np.zeros((5, 3), "float32"))
    np.testing.assert_allclose(b, a.sum(axis=2).T, rtol=1e-5)


def test_transform_layout_that_needs_padding_is_refused():
    A = te.placeholder((1, 3, 8, 8), name="A")
    B = te.compute(A.shape, lambda *i: A[i], name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="would need padding"):
        s[B].transform_layout(lambda n, c, h, w: [n, c // 4, h, w, c % 4])


def test_transform_layout_after_split_is_refused():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], 2)
    with pytest.raises(ScheduleError, match="call transform_layout first"):
        s[B].transform_layout(lambda i: [i // 4, i % 4])


def test_infer_bound_of_a_group_placed_at_a_loop():
    x = te.compute((6, 5), lambda i, j: tvm.tir.const(1, "float32") * (i + j), name="x")
    x1 = te.compute((6, 5), lambda i, j: x[i, j] + 1, name="x1")
    x2 = te.compute((6, 5), lambda i, j: x1[i, j] * 2, name="x2")
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    g.compute_at(s[x2], x2.op.axis[0])
    b = te.schedule.InferBound(s)
    assert b[x.op.axis[0]].extent.value == 1 and b[x1.op.axis[0]].extent.value == 1
    assert b[x.op.axis[1]].extent.value == 5


def test_reduction_range_depending_on_the_output_index_is_a_prefix_sum():
    X = te.placeholder((10,), name="X")

    def prefix(n):
        rv = te.reduce_axis((0, n), name="rv")
        return te.sum(X[rv], axis=rv)

    Y = te.compute((10,), prefix, name="Y")
    s = te.create_schedule(Y.op)
    x = RNG.random(10, dtype=np.float32)
    _, y = _run(s, [X, Y], x, np.zeros(10, "float32"))
    np.testing.assert_allclose(y, np.concatenate([[0], np.cumsum(x)[:-1]]), rtol=1e-5)


def test_reduction_range_without_a_constant_bound_is_an_error():
    n = te.var("n")
    X = te.placeholder((n,), name="X")

    def prefix(i):
        rv = te.reduce_axis((0, i), name="rv")
        return te.sum(X[rv], axis=rv)

    Y = te.compute((n,), prefix, name="Y")
    with pytest.raises(TEError, match="no constant bound"):
        te.create_prim_func([X, Y])


def _producer_chain(tag=""):
    A = te.placeholder((4, 5), name="A")
    B = te.placeholder((5,), name="B")
    E = te.compute((4, 5), lambda i, j: A[i, j] * 2, name="E")
    Bc = te.compute((4, 5), lambda i, j: B[j] + 1, name="Bc", tag=tag)
    T = te.compute((4, 5), lambda i, j: E[i, j] + Bc[i, j], name="T")
    return A, B, E, Bc, T


@pytest.mark.parametrize(
    "auto, inlined",
    [
        ("AutoInlineElemWise", {"E"}),
        ("AutoInlineBroadcast", {"E", "Bc"}),
        ("AutoInlineInjective", {"E", "Bc"}),
    ],
)
def test_auto_inline_inlines_the_stages_of_its_kind(auto, inlined):
    A, B, E, _, T = _producer_chain()
    s = te.create_schedule(T.op)
    assert s[E].attach_type == 1
    getattr(te.schedule, auto)(s)
    assert {st.op.name for st in s.stages if st.attach_type == 2} == inlined
    a, b = RNG.random((4, 5), dtype=np.float32), RNG.random(5, dtype=np.float32)
    _, _, t = _run(s, [A, B, T], a, b, np.zeros((4, 5), "float32"))
    np.testing.assert_allclose(t, 2 * a + b + 1, rtol=1e-6)


def test_reducer_whose_identity_uses_the_output_index():
    X = te.placeholder((6,), name="X")
    k = te.reduce_axis((0, 6), name="k")

    def f(i):
        start = lambda dtype: i.astype(dtype)
        total = te.comm_reducer(lambda x, y: x + y, start, name="offset_sum")
        return total(X[k], axis=k)

    Y = te.compute((4,), f, name="Y")
    s = te.create_schedule(Y.op)
    x = RNG.random(6, dtype=np.float32)
    _, y = _run(s, [X, Y], x, np.zeros(4, "float32"))
    np.testing.assert_allclose(y, np.arange(4) + x.sum(), rtol=1e-5)


def test_fusing_no_loops_makes_a_unit_loop():
    # TVM's Singleton: fuse() of a 0-d stage's (no) axes is a loop of extent 1
    X = te.placeholder((10,), name="X")
    k = te.reduce_axis((0, 10))
    Y = te.compute((), lambda: te.sum(X[k], k), name="Y")
    s = te.create_schedule(Y.op)
    unit = s[Y].fuse(*Y.op.axis)
    assert int(unit.dom.extent) == 1
    x = RNG.random(10, dtype=np.float32)
    _, y = _run(s, [X, Y], x, np.zeros((), "float32"))
    np.testing.assert_allclose(y, x.sum(), rtol=1e-5)


# ----------------------------------------------------------------------------- multi-output


def _tuple_stage():
    A = te.placeholder((6, 5), name="A")
    B0, B1 = te.compute((6, 5), lambda i, j: (A[i, j] + 2, A[i, j] * 3), name="B")
    return A, B0, B1


def test_compute_at_of_a_multi_output_compute_feeding_one_consumer():
    A, B0, _ = _tuple_stage()
    A1 = te.placeholder((6, 5), name="A1")
    C = te.compute((6, 5), lambda i, j: A1[i, j] + B0[i, j], name="C")
    s = te.create_schedule(C.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    a, a1 = RNG.random((6, 5), dtype=np.float32), RNG.random((6, 5), dtype=np.float32)
    _, _, c = _run(s, [A, A1, C], a, a1, np.zeros((6, 5), "float32"))
    np.testing.assert_allclose(c, a1 + a + 2, rtol=1e-6)


def test_compute_at_of_a_multi_output_compute_keeps_every_used_output():
    A, B0, B1 = _tuple_stage()
    C = te.compute((6, 5), lambda i, j: B0[i, j] - B1[i, j], name="C")
    s = te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[1], factor=2)
    s[B0].compute_at(s[C], xo)
    a = RNG.random((6, 5), dtype=np.float32)
    _, c = _run(s, [A, C], a, np.zeros((6, 5), "float32"))
    np.testing.assert_allclose(c, (a + 2) - 3 * a, rtol=1e-5)


def test_compute_at_of_a_multi_output_compute_read_outside_the_loop_is_an_error():
    A, B0, B1 = _tuple_stage()
    C = te.compute((6, 5), lambda i, j: B0[i, j] * 2, name="C")
    D = te.compute((6, 5), lambda i, j: C[i, j] + B1[i, j], name="D")
    s = te.create_schedule(D.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ScheduleError, match="no block under loop 'i' reads"):
        tvm.lower(s, [A, D])  # B's second output is read by D, outside C's loop
