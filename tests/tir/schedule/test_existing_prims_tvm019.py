"""Existing schedule primitives on the forms TVM v0.19 accepts: tiled producers, clamped
regions, shared-memory relaxation, insertion indices, and the errors TVM raises."""

import numpy as np
import pytest
from sched_workloads import same_numbers as _same_numbers

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T
from minitvm.testing.tir_interp import run_prim_func


@T.prim_func
def tiled_scale(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    B = T.alloc_buffer((64, 64), "float32")
    for to, uo in T.grid(8, 8):
        with T.block("tile"):
            vt, vu = T.axis.remap("SS", [to, uo])
            T.reads(A[vt * 8 : vt * 8 + 8, vu * 8 : vu * 8 + 8])
            T.writes(B[vt * 8 : vt * 8 + 8, vu * 8 : vu * 8 + 8])
            for ti, ui in T.grid(8, 8):
                with T.block("cell"):
                    x = T.axis.spatial(64, vt * 8 + ti)
                    y = T.axis.spatial(64, vu * 8 + ui)
                    B[x, y] = A[x, y] * T.float32(3)
    for p, q in T.grid(4, 64):
        for r in range(16):
            with T.block("out"):
                x = T.axis.spatial(64, p * 16 + r)
                y = T.axis.spatial(64, q)
                C[x, y] = B[x, y] + T.float32(1)


def test_compute_at_tiled_producer_runs_only_the_tiles_a_row_block_needs():
    sch = tir.Schedule(tiled_scale)
    _p, q, _ = sch.get_loops(sch.get_block("out"))
    sch.compute_at(sch.get_block("tile"), q)
    loops = sch.get_loops(sch.get_block("tile"))
    # rows p*16 .. p*16+15 are tiles 2p, 2p+1; column q is tile q // 8
    assert [int(sch.get(lp).extent) for lp in loops] == [4, 64, 2]
    _same_numbers(tiled_scale, sch.mod["main"])


@T.prim_func
def sliced_copy(A: T.Buffer((20,), "float32"), C: T.Buffer((24,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    for i in range(8):
        with T.block("small"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for o in range(1):
        for i in range(24):
            with T.block("pick"):
                vi = T.axis.spatial(24, o * 24 + i)
                C[vi] = T.if_then_else(16 <= vi, B[vi - 16], T.float32(0))


def test_compute_at_cuts_a_region_wider_than_the_domain_to_the_domain():
    sch = tir.Schedule(sliced_copy)
    (o, _) = sch.get_loops(sch.get_block("pick"))
    sch.compute_at(sch.get_block("small"), o)
    block = sch.get_block("small")
    (ax,) = sch.get_loops(block)[1:]
    # the consumer's index vi - 16 spans [-16, 7]; only [0, 7] exists, so no guard is needed
    assert int(sch.get(ax).extent) == 8
    realize = next(
        s
        for s, _ in tvm.tir.schedule.tree.walk(sch.mod["main"].body)
        if isinstance(s, tvm.tir.BlockRealize) and s.block.name_hint == "small"
    )
    assert int(realize.predicate.value) == 1
    _same_numbers(sliced_copy, sch.mod["main"])


def test_compute_at_preserve_unit_loops_keeps_the_unit_loop_in_the_binding():
    @T.prim_func
    def two(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        B = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] * T.float32(2)

    sch = tir.Schedule(two)
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i, preserve_unit_loops=True)
    realize = sch.get(sch.get_loops(sch.get_block("B"))[-1]).body
    ax0 = sch.get(sch.get_loops(sch.get_block("B"))[1]).loop_var
    binding = realize.iter_values[0]
    assert isinstance(binding, tvm.tir.Add) and binding.b is ax0
    _same_numbers(two, sch.mod["main"])


@T.prim_func
def two_producers(
    X: T.Buffer((16, 16), "float32"),
    W: T.Buffer((16,), "float32"),
    Y: T.Buffer((16, 16), "float32"),
):
    P = T.alloc_buffer((16, 16), "float32")
    Q = T.alloc_buffer((16,), "float32")
    for i, j in T.grid(16, 16):
        with T.block("P"):
            vi, vj = T.axis.remap("SS", [i, j])
            P[vi, vj] = X[vi, vj] * T.float32(2)
    for o in range(1):
        for j in range(16):
            with T.block("Q"):
                vj = T.axis.spatial(16, j)
                Q[vj] = W[vj] + T.float32(1)
        for i, j in T.grid(16, 16):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = P[vi, vj] - Q[vj] + T.float32(0) * T.float32(o)


def test_compute_at_index_chooses_the_insertion_point():
    for index, first in ((-1, "Q"), (-2, "P"), (0, "P"), (1, "Q")):
        sch = tir.Schedule(two_producers)
        (o,) = sch.get_loops(sch.get_block("Y"))[:1]
        sch.compute_at(sch.get_block("P"), o, index=index)
        body = sch.get(o).body
        names = [
            s.block.name_hint
            for s, _ in tvm.tir.schedule.tree.walk(body.seq[0])
            if isinstance(s, tvm.tir.BlockRealize)
        ]
        assert names == [first], index
        _same_numbers(two_producers, sch.mod["main"])


def test_compute_at_index_past_a_consumer_is_refused():
    sch = tir.Schedule(two_producers)
    (o,) = sch.get_loops(sch.get_block("Y"))[:1]
    with pytest.raises(ScheduleError, match=r"index=2 is not a valid insertion point"):
        sch.compute_at(sch.get_block("P"), o, index=2)


def test_reverse_compute_at_requires_all_producers_under_the_loop():
    @T.prim_func
    def fan_in(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
        B = T.alloc_buffer((8, 8), "float32")
        C = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + T.float32(1)
        for i, j in T.grid(8, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = B[vi, vj] + C[vi, vj]

    sch = tir.Schedule(fan_in)
    i, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="requires all the producers of 'D'.*block 'B'"):
        sch.reverse_compute_at(sch.get_block("D"), i)


@T.prim_func
def shared_tile(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    S = T.alloc_buffer((64, 64), "float32", scope="shared")
    for i, j in T.grid(64, 64):
        with T.block("S"):
            vi, vj = T.axis.remap("SS", [i, j])
            S[vi, vj] = A[vi, vj]
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            for k in range(4):
                for r in range(4):
                    with T.block("C"):
                        vi = T.axis.spatial(64, bx * 16 + tx * 4 + r)
                        vj = T.axis.spatial(64, k * 16)
                        C[vi, vj] = S[vi, vj] * T.float32(2)


def test_compute_at_shared_buffer_covers_every_thread_of_the_block():
    sch = tir.Schedule(shared_tile)
    _, _, k, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("S"), k)
    loops = sch.get_loops(sch.get_block("S"))
    # the 4 threads of a block share S: one fill covers rows bx*16 .. bx*16+15, not 4 rows
    assert [int(sch.get(lp).extent) for lp in loops[3:]] == [16]
    a = np.random.default_rng(1).standard_normal((64, 64)).astype("float32")
    c = np.zeros((64, 64), "float32")
    (out,) = run_prim_func(sch.mod["main"], a, c)[1:]
    expect = np.zeros((64, 64), "float32")
    expect[:, ::16] = a[:, ::16] * 2
    np.testing.assert_allclose(out, expect, rtol=1e-6)


def _row_sums(kind):
    @T.prim_func
    def row_sums(A: T.Buffer((8, 16), "float32"), S: T.Buffer((8,), "float32")):
        P = T.alloc_buffer((16, 8), "float32")
        for j in range(8):
            for t in range(4):
                for u, k in T.grid(4, 4):
                    with T.block("P"):
                        vi = T.axis.spatial(16, t * 4 + u)
                        vj = T.axis.spatial(8, j)
                        vk = T.axis.reduce(4, k)
                        with T.init():
                            P[vi, vj] = T.float32(0)
                        P[vi, vj] = P[vi, vj] + A[vj, vi] * T.float32(vk + 1)
        for i, k in T.grid(8, 16):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + P[vk, vi]

    sch = tir.Schedule(row_sums)
    _, t, _, _ = sch.get_loops(sch.get_block("P"))
    if kind == "parallel":
        sch.parallel(t)
    return row_sums, sch, t


def test_reverse_compute_at_splits_a_reduction_over_tiles_of_a_serial_loop():
    before, sch, t = _row_sums("serial")
    sch.reverse_compute_at(sch.get_block("S"), t)
    # each iteration of t produces rows t*4 .. t*4+3 of P: S adds exactly those four terms
    (ax,) = sch.get_loops(sch.get_block("S"))[2:]
    assert int(sch.get(ax).extent) == 4
    _same_numbers(before, sch.mod["main"])


def test_reverse_compute_at_refuses_to_split_a_reduction_over_a_parallel_loop():
    _, sch, t = _row_sums("parallel")
    with pytest.raises(ScheduleError, match="piece by piece along reduction iterator 'vk'"):
        sch.reverse_compute_at(sch.get_block("S"), t)


def test_parallel_refuses_a_block_whose_spatial_iterator_does_not_index_its_output():
    @T.prim_func
    def col_sums(A: T.Buffer((32, 8), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(32, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vk] = T.float32(0)
                B[vk] = B[vk] + A[vi, vk]

    sch = tir.Schedule(col_sums)
    i, _ = sch.get_loops(sch.get_block("B"))
    # every i updates all of B: the stores, not the iterator kinds, decide the race
    with pytest.raises(ScheduleError, match=r"parallel\(loop 'i'\): block 'B' .* same elements"):
        sch.parallel(i)


def test_parallel_refuses_a_reduction_with_a_non_affine_binding():
    @T.prim_func
    def odd(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
        for i, k in T.grid(16, 8):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                vk = T.axis.reduce(64, k * k // 2)
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    sch = tir.Schedule(odd)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"binds 'vk' to .* not quasi-affine"):
        sch.parallel(i)


@T.prim_func
def staged_rows(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("outer"):
            vi = T.axis.spatial(8, i)
            S = T.alloc_buffer((1, 16), "float32", scope="shared")
            for c in range(16):
                with T.block("stage"):
                    vc = T.axis.spatial(16, c)
                    S[0, vc] = A[vi, vc]
            for k in range(16):
                with T.block("sum"):
                    vk = T.axis.reduce(16, k)
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + S[0, vk] * T.float32(2)


def test_bind_treats_a_block_local_buffer_as_private_to_each_iteration():
    sch = tir.Schedule(staged_rows)
    (i,) = sch.get_loops(sch.get_block("outer"))
    sch.bind(i, "blockIdx.x")
    loop = sch.get(i)
    assert loop.thread_binding.thread_tag == "blockIdx.x" and loop.thread_binding.dom is None
    a = np.random.default_rng(2).standard_normal((8, 16)).astype("float32")
    (b,) = run_prim_func(sch.mod["main"], a, np.zeros(8, "float32"))[1:]
    np.testing.assert_allclose(b, a.sum(axis=1) * 2, rtol=1e-5)


def test_bind_reduction_loop_to_threadidx_is_a_cross_thread_reduction_not_to_blockidx():
    sch = tir.Schedule(staged_rows)
    (k,) = sch.get_loops(sch.get_block("sum"))
    with pytest.raises(ScheduleError, match=r"drives reduction iterator 'vk'"):
        sch.copy().bind(k, "blockIdx.x")
    sch.bind(k, "threadIdx.x")  # accepted as TVM does; a CPU build refuses the race
    with pytest.raises(ScheduleError, match=r"binding it to threads would race on B"):
        tvm.build(sch.mod, target="llvm")


@T.prim_func
def scale3(A: T.Buffer((4, 6, 8), "float32"), B: T.Buffer((4, 6, 8), "float32")):
    for i, j, k in T.grid(4, 6, 8):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(3)


def _realize(sch, name):
    return next(
        s
        for s, _ in tvm.tir.schedule.tree.walk(sch.mod["main"].body)
        if isinstance(s, tvm.tir.BlockRealize) and s.block.name_hint == name
    )


def test_split_keeps_unit_loops_in_the_binding_and_an_unsimplified_guard():
    sch = tir.Schedule(scale3)
    i, _j, k = sch.get_loops(sch.get_block("B"))
    _i0, i1, _i2 = sch.split(i, [2, 1, 2])
    sch.split(k, [None, 3])  # 8 = 3 * 3 - 1: guarded
    binding = str(_realize(sch, "B").iter_values[0])
    assert sch.get(i1).loop_var.name in binding  # the unit loop stays (preserve_unit_iters)
    assert "< 8" in str(_realize(sch, "B").predicate)
    _same_numbers(scale3, sch.mod["main"])


def test_split_disable_predication_only_when_the_factors_divide():
    sch = tir.Schedule(scale3)
    _, j, k = sch.get_loops(sch.get_block("B"))
    sch.split(j, [2, 3], disable_predication=True)
    with pytest.raises(ScheduleError, match=r"disable_predication=True\): cannot prove"):
        sch.split(k, [None, 3], disable_predication=True)
    _same_numbers(scale3, sch.mod["main"])


def test_fuse_writes_tvm_s_index_form():
    sch = tir.Schedule(scale3)
    fused = sch.fuse(*sch.get_loops(sch.get_block("B")))
    v = sch.get(fused).loop_var.name
    assert str(_realize(sch, "B").iter_values[1]) == f"{v} % 48 // 8"
    _same_numbers(scale3, sch.mod["main"])


def test_split_and_fuse_refuse_annotated_bound_or_offset_loops():
    @T.prim_func
    def odd_loops(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
        for i in T.serial(8, annotations={"note": 1}):
            for j in T.serial(2, 8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj]

    sch = tir.Schedule(odd_loops)
    i, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"loop 'i' has annotations"):
        sch.split(i, [2, 4])
    with pytest.raises(ScheduleError, match=r"loop 'j' starts at 2, not 0"):
        sch.split(j, [2, 3])
    with pytest.raises(ScheduleError, match=r"fuse\(i, j\): loop 'i' has annotations"):
        sch.fuse(i, j)


def test_add_unit_loop_above_a_block_and_above_a_loop():
    sch = tir.Schedule(scale3)
    block = sch.get_block("B")
    i = sch.get_loops(block)[0]
    u = sch.add_unit_loop(block)
    w = sch.add_unit_loop(i)
    loops = sch.get_loops(block)
    assert [int(sch.get(lp).extent) for lp in loops] == [1, 4, 6, 8, 1]
    assert sch.get(loops[0]).loop_var is sch.get(w).loop_var
    assert sch.get(loops[-1]).loop_var is sch.get(u).loop_var
    _same_numbers(scale3, sch.mod["main"])


def test_cache_read_and_write_take_the_buffer_by_name_or_object():
    sch = tir.Schedule(scale3)
    block = sch.get_block("B")
    a_buf = sch.get(block).reads[0].buffer
    sch.cache_read(block, "A", "local")
    sch.cache_write(block, "B", "local")
    assert {"A_local", "B_local"} <= set(tvm.tir.schedule.tree.block_names(sch.mod["main"]))
    sch2 = tir.Schedule(scale3)
    sch2.cache_read(sch2.get_block("B"), a_buf, "local")
    _same_numbers(scale3, sch.mod["main"])
    with pytest.raises(ScheduleError, match=r"reads 1 buffers \(A_local\); use an index in 0..0"):
        sch2.cache_read(sch2.get_block("B"), "Z", "local")
