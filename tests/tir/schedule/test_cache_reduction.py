"""cache_read, cache_write, decompose_reduction and rfactor."""

import pytest
from sched_workloads import build_and_run, chain, matmul, softmax

from minitvm import te, tir
from minitvm.error import ScheduleError
from minitvm.tir import ForKind


def _mm():
    wl = matmul()
    sch = tir.Schedule(wl.func())
    return wl, sch, sch.get_block("C")


def test_cache_read_adds_copy_block_and_local_buffer():
    wl, sch, c = _mm()
    a_local = sch.cache_read(c, 0, "local")
    block = sch.get(a_local)
    assert block.name_hint == "A_local"
    assert block.writes[0].buffer.scope() == "local"
    assert [r.buffer.name for r in sch.get(c).reads] == ["A_local", "B"]
    build_and_run(sch, wl)


def test_cache_read_then_compute_at_copies_only_the_needed_row():
    wl, sch, c = _mm()
    b_local = sch.cache_read(c, 1, "local")
    i, j, k = sch.get_loops(c)
    sch.compute_at(b_local, k)
    loops = sch.get_loops(b_local)
    assert [sch.get(lp).loop_var.name for lp in loops] == ["i", "j", "k"]  # one element
    build_and_run(sch, wl)


def test_cache_read_index_out_of_range_raises():
    _, sch, c = _mm()
    with pytest.raises(
        ScheduleError,
        match=r"cache_read\(block 'C', read_buffer_index=5, storage_scope='local'\): block 'C' "
        r"reads 2 buffers \(A, B\); use an index in 0\.\.1",
    ):
        sch.cache_read(c, 5, "local")


def test_cache_read_of_intermediate_goes_after_its_producer():
    wl = chain()
    sch = tir.Schedule(wl.func())
    c = sch.get_block("C")
    sch.cache_read(c, 0, "global")
    build_and_run(sch, wl)


def test_cache_write_then_reverse_compute_at():
    wl, sch, c = _mm()
    wb = sch.cache_write(c, 0, "local")
    assert sch.get(wb).name_hint == "C_local"
    assert sch.get(c).writes[0].buffer.name == "C_local"
    i, j, k = sch.get_loops(c)
    sch.reverse_compute_at(wb, i)
    build_and_run(sch, wl)


def test_cache_write_index_out_of_range_raises():
    _, sch, c = _mm()
    with pytest.raises(
        ScheduleError,
        match=r"cache_write\(block 'C', write_buffer_index=1, .*writes 1 buffers \(C\)",
    ):
        sch.cache_write(c, 1, "local")


def test_decompose_reduction_moves_init_before_loop():
    wl, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    init = sch.decompose_reduction(c, k)
    assert sch.get(init).name_hint == "C_init"
    assert sch.get(c).name_hint == "C_update"  # TVM's name; the BlockRV follows the rename
    assert sch.get(sch.get_block("C_update")).init is None
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(init)] == ["i", "j"]
    build_and_run(sch, wl)


def test_decompose_reduction_at_outer_loop_recreates_spatial_loops():
    wl, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, [None, 4])
    sch.vectorize(j1)
    init = sch.decompose_reduction(c, j0)
    loops = [sch.get(lp) for lp in sch.get_loops(init)]
    assert [lp.loop_var.name for lp in loops] == ["i", "j_0_init", "j_1_init"]
    assert loops[-1].kind is ForKind.VECTORIZED
    build_and_run(sch, wl)


def test_decompose_reduction_errors():
    wl = chain()
    sch = tir.Schedule(wl.func())
    b = sch.get_block("B")
    i, _ = sch.get_loops(b)
    with pytest.raises(
        ScheduleError, match=r"decompose_reduction\(block 'B', loop 'i'\): block 'B' has no init"
    ):
        sch.decompose_reduction(b, i)
    _, sch, c = _mm()
    with pytest.raises(ScheduleError, match=r"loop 'ax0' does not enclose block 'C'"):
        sch.decompose_reduction(c, _foreign_loop(sch))


def _foreign_loop(sch):
    """A loop of the same schedule that does not enclose C: one of A_local's copy loops."""
    a_local = sch.cache_read(sch.get_block("C"), 0, "local")
    return sch.get_loops(a_local)[0]


def test_rfactor_inner_reduction_loop():
    wl, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    k0, k1 = sch.split(k, [None, 4])
    rf = sch.rfactor(k1, 0)
    assert sch.get(rf).name_hint == "C_rf"
    rf_buf = sch.get(rf).writes[0].buffer
    assert [int(d) for d in rf_buf.shape] == [4, 16, 12]
    build_and_run(sch, wl)


def test_rfactor_of_a_predicated_reduction_matches_numpy():
    # TVM v0.19 refuses these; the guard goes into the partial block's value, so every slot
    # is written (slot k0 = 4 of the [5, 2] split covers k = 8, 9 only: it keeps the identity)
    for factors in ([3, None], [5, None]):
        wl, sch, c = _mm()  # k = 8
        i, j, k = sch.get_loops(c)
        k0, k1 = sch.split(k, factors)
        sch.rfactor(k0, -1)
        build_and_run(sch, wl)


def test_rfactor_outer_loop_divisible_split_and_parallel():
    wl, sch, c = _mm()  # k = 8
    i, j, k = sch.get_loops(c)
    k0, k1 = sch.split(k, [4, None])
    rf = sch.rfactor(k0, -1)
    loops = sch.get_loops(rf)
    sch.parallel(loops[0])
    build_and_run(sch, wl)


def test_rfactor_softmax_max_reduction():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    mx = sch.get_block("mx")
    i, k = sch.get_loops(mx)
    k0, k1 = sch.split(k, [None, 2])
    sch.rfactor(k1, 1)
    build_and_run(sch, wl)


def test_rfactor_errors():
    _, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    with pytest.raises(
        ScheduleError,
        match=r"rfactor\(loop 'i' of block 'C', factor_axis=0\): loop 'i' does not drive a reduction iterator",
    ):
        sch.rfactor(i, 0)
    with pytest.raises(ScheduleError, match=r"factor_axis must be in \[-3, 2\] for C"):
        sch.rfactor(k, 5)
    wl = chain()
    sch2 = tir.Schedule(wl.func())
    (bi, _) = sch2.get_loops(sch2.get_block("B"))
    with pytest.raises(ScheduleError, match=r"block 'B' is not a reduction"):
        sch2.rfactor(bi, 0)


def test_parallel_after_rfactor_is_legal_on_the_rf_loop():
    wl, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    rf = sch.rfactor(k, 0)
    rf_loops = sch.get_loops(rf)
    sch.parallel(rf_loops[0])
    with pytest.raises(ScheduleError, match=r"parallel\(loop 'k' of block 'C'\)"):
        sch.parallel(sch.get_loops(c)[2])
    build_and_run(sch, wl)


def test_cache_read_symbolic_shape_builds():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * 3.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    cb = sch.cache_read(sch.get_block("B"), 0, "local")
    i, j = sch.get_loops(sch.get_block("B"))
    sch.compute_at(cb, i)
    assert "ax0" in sch.mod.script()


def test_decompose_reduction_below_a_reduction_loop_raises():
    _, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    k0, k1 = sch.split(k, [None, 2])
    with pytest.raises(
        ScheduleError, match=r"loop 'k_0' above it drives reduction iterator\(s\) of 'C'"
    ):
        sch.decompose_reduction(c, k1)


def test_cache_write_of_update_without_init_raises():
    _, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    sch.decompose_reduction(c, i)
    with pytest.raises(ScheduleError, match=r"block 'C_update' reads C before updating it"):
        sch.cache_write(c, 0, "local")


def test_compute_at_of_init_under_its_update_raises():
    _, sch, c = _mm()
    i, j, k = sch.get_loops(c)
    init = sch.decompose_reduction(c, i)
    with pytest.raises(
        ScheduleError, match=r"block 'C_update' under the loop also writes what 'C_init' writes"
    ):
        sch.compute_at(init, sch.get_loops(c)[2])
    with pytest.raises(ScheduleError, match=r"block 'C_update' updates C in place"):
        sch.reverse_compute_at(c, sch.get_loops(init)[0])


def test_rfactor_of_block_computed_at_writes_back_inside_the_shared_loop():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    i, j = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(sch.get_block("S"), i)
    s_loops = sch.get_loops(sch.get_block("S"))
    sch.rfactor(s_loops[-1], 0)
    wb_loops = sch.get_loops(sch.get_block("S"))
    assert sch.get(wb_loops[0]).loop_var is sch.get(i).loop_var  # inside Y's row loop
    build_and_run(sch, wl)


def test_decompose_reduction_above_a_repeating_loop_raises():
    wl = softmax()
    sch = tir.Schedule(wl.func())
    i, j = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(sch.get_block("S"), j)  # S is recomputed for every j
    s = sch.get_block("S")
    with pytest.raises(ScheduleError, match=r"loop 'j' drives no iterator of 'S'"):
        sch.decompose_reduction(s, i)
    sch.decompose_reduction(s, sch.get_loops(s)[-1])
    build_and_run(sch, wl)


def test_set_scope_moves_intermediate_to_local():
    wl = chain()
    sch = tir.Schedule(wl.func())
    sch.set_scope(sch.get_block("B"), 0, "local")
    assert sch.get(sch.get_block("B")).writes[0].buffer.scope() == "local"
    assert 'scope="local"' in sch.mod.script()
    build_and_run(sch, wl)
    with pytest.raises(
        ScheduleError,
        match=r"set_scope\(block 'D', buffer_index=0, storage_scope='local'\): D is a parameter",
    ):
        sch.set_scope(sch.get_block("D"), 0, "local")


def test_decompose_reduction_accepts_a_unit_loop_that_drives_nothing():
    """A batch-1 matmul's `i` loop (extent 1) binds no iterator but repeats nothing either."""
    import numpy as np

    import minitvm as tvm
    from minitvm.script import from_source

    src = """
@T.prim_func
def main(X: T.Buffer((1, 8), "float32"), W: T.Buffer((8, 4), "float32"), Y: T.Buffer((1, 4), "float32")):
    for i, j, k in T.grid(1, 4, 8):
        with T.block("Y"):
            vi = T.axis.spatial(1, 0)
            vj, vk = T.axis.remap("SR", [j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vk, vj]
"""
    sch = tvm.tir.Schedule(from_source(src))
    block = sch.get_block("Y")
    _, _, k = sch.get_loops(block)
    sch.decompose_reduction(block, k)
    x = np.random.default_rng(0).random((1, 8), dtype=np.float32)
    w = np.random.default_rng(1).random((8, 4), dtype=np.float32)
    y = np.full((1, 4), 7.0, np.float32)
    tvm.build(sch.mod)(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
