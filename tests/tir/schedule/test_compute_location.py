"""compute_at, reverse_compute_at, compute_inline, reverse_compute_inline."""

import pytest
from sched_workloads import build_and_run, chain, conv2d, matmul, softmax

from minitvm import te, tir
from minitvm.error import ScheduleError


def _names(sch, block):
    return [sch.get(lp).loop_var.name for lp in sch.get_loops(block)]


def test_compute_at_elementwise_covers_one_row():
    wl = chain()
    sch = tir.Schedule(wl.func())
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    sch.compute_at(sch.get_block("B"), i)
    b = sch.get_block("B")
    assert _names(sch, b) == ["i", "ax0"]  # the unit row loop is dropped
    assert int(sch.get(sch.get_loops(b)[1]).extent) == 10
    build_and_run(sch, wl)


def test_compute_at_preserve_unit_loops_keeps_a_loop_per_iterator():
    wl = chain()
    sch = tir.Schedule(wl.func())
    i, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), j, preserve_unit_loops=True)
    assert _names(sch, sch.get_block("B")) == ["i", "j", "ax0", "ax1"]
    build_and_run(sch, wl)


def test_compute_at_split_non_divisible_clips_with_predicate():
    wl = chain()  # 12 x 10
    sch = tir.Schedule(wl.func())
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    j0, j1 = sch.split(j, [None, 4])
    sch.compute_at(sch.get_block("B"), j0)
    text = sch.mod.script()
    assert "j_0 * 4 + ax0 < 10" in text
    build_and_run(sch, wl)


def test_compute_at_conv_padding_region_uses_halo():
    wl = conv2d()
    sch = tir.Schedule(wl.func())
    y = sch.get_block("Y")
    b, o, yy, xx, rc, ry, rx = sch.get_loops(y)
    sch.compute_at(sch.get_block("P"), yy)
    loops = sch.get_loops(sch.get_block("P"))
    extents = [int(sch.get(lp).extent) for lp in loops[3:]]
    assert extents == [2, 3, 8]  # channels, 3 rows of halo, the padded width
    build_and_run(sch, wl)


def test_compute_at_reduction_producer_softmax():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    y = sch.get_block("Y")
    i, j = sch.get_loops(y)
    sch.compute_at(sch.get_block("S"), i)
    sch.compute_at(sch.get_block("E"), i)
    sch.compute_at(sch.get_block("mx"), i)
    build_and_run(sch, wl)


def test_compute_at_with_consumer_outside_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    # D reads C; B's consumer is C. Put C's loops to the test: B at D's loop has no consumer.
    i, _ = sch.get_loops(sch.get_block("D"))
    with pytest.raises(
        ScheduleError,
        match=r"compute_at\(block 'B', loop 'i'\): no block under loop 'i' reads what 'B' writes",
    ):
        sch.compute_at(sch.get_block("B"), i)


def test_compute_at_partial_consumers_raise():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    sch = tir.Schedule(te.create_prim_func([A, D]))
    (i,) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(
        ScheduleError, match=r"block 'D' outside the loop also reads what 'B' writes"
    ):
        sch.compute_at(sch.get_block("B"), i)


def test_compute_at_own_ancestor_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"block 'B' is already inside loop 'i'"):
        sch.compute_at(sch.get_block("B"), i)


def test_compute_at_after_the_loop_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"compute_at\(block 'C', loop 'i'\): no block under"):
        sch.compute_at(sch.get_block("C"), i)


def test_reverse_compute_at_consumer_under_producer_tile():
    wl = chain()
    sch = tir.Schedule(wl.func())
    b = sch.get_block("B")
    i, j = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, 5])
    sch.reverse_compute_at(sch.get_block("C"), i0)
    text = sch.mod.script()
    assert "i_0 * 5 + ax0 < 12" in text
    build_and_run(sch, wl)


def test_reverse_compute_at_reduction_along_producer_adds_one_term_per_iteration():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    i, j = sch.get_loops(sch.get_block("E"))
    # each iteration of j produces one E[i, j]; S adds it (its init runs at j == 0)
    sch.reverse_compute_at(sch.get_block("S"), j)
    build_and_run(sch, wl)


def test_reverse_compute_at_reduction_along_a_parallel_producer_loop_raises():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    i, j = sch.get_loops(sch.get_block("E"))
    sch.parallel(j)
    with pytest.raises(ScheduleError, match=r"a reduction cannot be split across loop iterations"):
        sch.reverse_compute_at(sch.get_block("S"), j)


def test_reverse_compute_at_rows_of_softmax():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    i, j = sch.get_loops(sch.get_block("E"))
    sch.reverse_compute_at(sch.get_block("S"), i)
    build_and_run(sch, wl)


def test_reverse_compute_at_producer_after_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    i, _ = sch.get_loops(sch.get_block("D"))
    with pytest.raises(
        ScheduleError,
        match=r"reverse_compute_at\(block 'B', loop 'i'\): no block under loop 'i' writes what 'B' reads",
    ):
        sch.reverse_compute_at(sch.get_block("B"), i)


def test_compute_inline_removes_block_and_buffer():
    wl = chain()
    sch = tir.Schedule(wl.func())
    sch.compute_inline(sch.get_block("B"))
    sch.compute_inline(sch.get_block("C"))
    text = sch.mod.script()
    assert 'T.block("B")' not in text and "alloc_buffer" not in text
    assert [r.buffer.name for r in sch.get(sch.get_block("D")).reads] == ["A"]
    build_and_run(sch, wl)


def test_compute_inline_padding_into_conv():
    wl = conv2d()
    sch = tir.Schedule(wl.func())
    sch.compute_inline(sch.get_block("P"))
    build_and_run(sch, wl)


def test_compute_inline_reduction_raises():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    with pytest.raises(
        ScheduleError, match=r"compute_inline\(block 'mx'\): block 'mx' is a reduction"
    ):
        sch.compute_inline(sch.get_block("mx"))


def test_compute_inline_output_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    with pytest.raises(
        ScheduleError, match=r"compute_inline\(block 'D'\): it writes D, an output of the function"
    ):
        sch.compute_inline(sch.get_block("D"))


def test_compute_inline_then_stale_block_rv_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    b = sch.get_block("B")
    sch.compute_inline(b)
    with pytest.raises(ScheduleError, match=r"block 'B' no longer exists"):
        sch.get_loops(b)


def test_reverse_compute_inline_into_producer():
    wl = chain()
    sch = tir.Schedule(wl.func())
    sch.reverse_compute_inline(sch.get_block("D"))
    text = sch.mod.script()
    assert 'T.block("D")' not in text
    build_and_run(sch, wl)


def test_reverse_compute_inline_into_reduction_raises():
    wl = matmul()
    A, B, C = wl.args
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1.0, name="D")
    sch = tir.Schedule(te.create_prim_func([A, B, D]))
    with pytest.raises(
        ScheduleError, match=r"reverse_compute_inline\(block 'C'\): block 'C' is a reduction"
    ):
        sch.reverse_compute_inline(sch.get_block("D"))


def test_reverse_compute_inline_two_inputs_raises():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: A[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    sch = tir.Schedule(te.create_prim_func([A, D]))
    with pytest.raises(
        ScheduleError, match=r"reverse_compute_inline\(block 'D'\): it must read exactly one buffer"
    ):
        sch.reverse_compute_inline(sch.get_block("D"))


def test_reverse_compute_inline_transposed_read_raises():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((4, 4), lambda i, j: B[j, i] + B[i, j], name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    with pytest.raises(ScheduleError, match=r"it reads B at more than one place"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_compute_at_inside_producer_reduction_loop_raises():
    wl = matmul()
    sch = tir.Schedule(wl.func())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.reorder(i, k, j)
    cw = sch.cache_write(c, 0, "local")
    with pytest.raises(
        ScheduleError,
        match=r"loop 'k' drives reduction iterator 'v_k' of producer 'C'.*partial sums",
    ):
        sch.reverse_compute_at(cw, j)
    sch.reverse_compute_at(cw, i)
    build_and_run(sch, wl)
