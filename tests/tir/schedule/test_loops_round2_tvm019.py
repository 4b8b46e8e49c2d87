"""Loop primitives on the forms TVM v0.19 accepts or refuses: loop_partition, reorder's binding
rules, and the unit-loop forms of split/compute_at. Every accepted form runs against the
original program on random data."""

import numpy as np
import pytest
from sched_workloads import same_numbers as _same_numbers

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T


@T.prim_func
def shift_add(A: T.Buffer((30, 12), "float32"), B: T.Buffer((30, 12), "float32")):
    for r, c in T.grid(30, 12):
        with T.block("shift"):
            vr, vc = T.axis.remap("SS", [r, c])
            B[vr, vc] = A[vr, vc] * T.float32(3) + T.float32(1)


@T.prim_func
def row_sums(A: T.Buffer((10, 16), "float32"), S: T.Buffer((10,), "float32")):
    for r, k in T.grid(10, 16):
        with T.block("sum"):
            vr, vk = T.axis.remap("SR", [r, k])
            with T.init():
                S[vr] = T.float32(0)
            S[vr] = S[vr] + A[vr, vk]


@T.prim_func
def symbolic_rows(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("copy"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi]


def _extents(sch, loops):
    return [(int(sch.get(lp).min), int(sch.get(lp).extent)) for lp in loops]


def test_loop_partition_cuts_consecutive_ranges_and_keeps_the_rest_as_a_last_part():
    sch = tir.Schedule(shift_add)
    r, _ = sch.get_loops(sch.get_block("shift"))
    parts = sch.loop_partition(r, factors=[4, 10])
    assert _extents(sch, parts) == [(0, 4), (4, 10), (14, 16)]
    children = sch.get_child_blocks(sch.get_block("shift_r_common"))
    assert [sch.get(b).name_hint for b in children] == [f"shift_r{k}_partition" for k in range(3)]
    assert sch.get(sch.get_block("shift_r1")).iter_vars[0].dom.min.value == 4
    _same_numbers(shift_add, sch.mod["main"])


def test_loop_partition_infers_the_none_factor_and_partitions_a_copy_again():
    sch = tir.Schedule(shift_add)
    r, _ = sch.get_loops(sch.get_block("shift"))
    parts = sch.loop_partition(r, factors=[None, 5])
    assert _extents(sch, parts) == [(0, 25), (25, 5)]
    _, c = sch.get_loops(sch.get_block("shift_r1"))
    inner = sch.loop_partition(c, factors=[1, None, 2])
    assert _extents(sch, inner) == [(0, 1), (1, 9), (10, 2)]
    assert sch.get(sch.get_block("shift_r1_c1")).name_hint == "shift_r1_c1"
    _same_numbers(shift_add, sch.mod["main"])


def test_loop_partition_of_a_reduction_loop_keeps_the_sum():
    sch = tir.Schedule(row_sums)
    _, k = sch.get_loops(sch.get_block("sum"))
    sch.loop_partition(k, factors=[3, None])
    _same_numbers(row_sums, sch.mod["main"])


def test_loop_partition_narrows_regions_to_the_part():
    sch = tir.Schedule(shift_add)
    r, _ = sch.get_loops(sch.get_block("shift"))
    sch.loop_partition(r, factors=[None, 6])
    block = sch.get(sch.get_block("shift_r1"))
    (read,) = block.reads
    assert [(int(x.min), int(x.extent)) for x in read.region] == [(24, 6), (0, 12)]


def test_loop_partition_is_replayed_from_its_trace():
    sch = tir.Schedule(shift_add)
    r, _ = sch.get_loops(sch.get_block("shift"))
    sch.loop_partition(r, factors=[2, None])
    again = tir.Schedule(shift_add)
    sch.trace.apply_to_schedule(again, remove_postproc=False)
    tvm.ir.assert_structural_equal(sch.mod["main"], again.mod["main"])


@pytest.mark.parametrize(
    "factors, match",
    [
        ([20, 10], "add up to 30, which is not smaller than the loop extent 30"),
        ([40, None], "not smaller than the loop extent"),
        ([0, None], "contain 0"),
        ([None, -2], "negative"),
        ([None, None, 3], "more than one None"),
    ],
)
def test_loop_partition_refuses_bad_factors(factors, match):
    sch = tir.Schedule(shift_add)
    r, _ = sch.get_loops(sch.get_block("shift"))
    with pytest.raises(ScheduleError, match=match):
        sch.loop_partition(r, factors=factors)


def test_loop_partition_refuses_a_symbolic_extent():
    sch = tir.Schedule(symbolic_rows)
    (i,) = sch.get_loops(sch.get_block("copy"))
    with pytest.raises(ScheduleError, match="must be constants"):
        sch.loop_partition(i, factors=[4, None])


def test_loop_partition_refuses_annotated_or_bound_loops():
    sch = tir.Schedule(shift_add)
    r, c = sch.get_loops(sch.get_block("shift"))
    sch.annotate(c, "note", 1)
    with pytest.raises(ScheduleError, match="has annotations"):
        sch.loop_partition(c, factors=[4, None])
    sch.bind(r, "blockIdx.x")
    with pytest.raises(ScheduleError, match="is bound to a thread"):
        sch.loop_partition(r, factors=[4, None])


@T.prim_func
def column_major_sums(A: T.Buffer((10, 16), "float32"), S: T.Buffer((10,), "float32")):
    for k, r in T.grid(16, 10):
        with T.block("sum"):
            vr, vk = T.axis.remap("SR", [r, k])
            with T.init():
                S[vr] = T.float32(0)
            S[vr] = S[vr] + A[vr, vk]


@T.prim_func
def fused_sums(A: T.Buffer((10, 16), "float32"), S: T.Buffer((10,), "float32")):
    for f in range(160):
        with T.block("sum"):
            vr = T.axis.spatial(10, f // 16)
            vk = T.axis.reduce(16, f % 16)
            with T.init():
                S[vr] = T.float32(0)
            S[vr] = S[vr] + A[vr, vk]


def test_loop_partition_of_an_outer_reduction_loop_starts_the_sum_once():
    sch = tir.Schedule(column_major_sums)
    k, _ = sch.get_loops(sch.get_block("sum"))
    sch.loop_partition(k, factors=[5, 6])
    assert sch.get(sch.get_block("sum_k0")).init is not None
    assert sch.get(sch.get_block("sum_k2")).init is None
    _same_numbers(column_major_sums, sch.mod["main"])


def test_loop_partition_refuses_a_loop_driving_reduction_and_spatial_iterators():
    sch = tir.Schedule(fused_sums)
    (f,) = sch.get_loops(sch.get_block("sum"))
    with pytest.raises(ScheduleError, match="only a loop that is exactly one reduction iterator"):
        sch.loop_partition(f, factors=[40, None])


@T.prim_func
def squared_rows(A: T.Buffer((30, 4), "float32"), B: T.Buffer((30, 4), "float32")):
    for a, b, c in T.grid(5, 4, 4):
        with T.block("sq"):
            i = T.axis.spatial(30, a * a + b)
            j = T.axis.spatial(4, c)
            B[i, j] = A[i, j] + T.float32(1)


@T.prim_func
def strided_cols(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8, 64), "float32")):
    for i, l in T.grid(8, 4):
        with T.block("st"):
            vi = T.axis.spatial(8, i)
            vl = T.axis.spatial(64, l * 16)
            B[vi, vl] = A[vi, vl] * T.float32(2)


@T.prim_func
def guarded_grid(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("g"):
            T.where(i * 8 + j < 20)
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_reorder_accepts_a_binding_affine_below_its_non_affine_outer_loop():
    sch = tir.Schedule(squared_rows)
    _, b, c = sch.get_loops(sch.get_block("sq"))
    sch.reorder(c, b)
    _same_numbers(squared_rows, sch.mod["main"])


def test_reorder_refuses_a_non_affine_binding_of_the_reordered_loops():
    sch = tir.Schedule(squared_rows)
    a, b, c = sch.get_loops(sch.get_block("sq"))
    with pytest.raises(ScheduleError, match=r"binds 'i' to a \* a \+ b, which is not an affine"):
        sch.reorder(a, c, b)


def test_reorder_refuses_a_binding_without_a_unit_stride():
    sch = tir.Schedule(strided_cols)
    i, l = sch.get_loops(sch.get_block("st"))
    with pytest.raises(ScheduleError, match="binds 'vl' to l \\* 16"):
        sch.reorder(l, i)


def test_reorder_refuses_a_predicate_that_bounds_no_binding():
    sch = tir.Schedule(guarded_grid)
    i, j = sch.get_loops(sch.get_block("g"))
    with pytest.raises(ScheduleError, match="does not bound one of its bindings"):
        sch.reorder(j, i)


def test_reorder_after_a_non_dividing_split_keeps_the_guard():
    sch = tir.Schedule(shift_add)
    r, c = sch.get_loops(sch.get_block("shift"))
    r0, r1 = sch.split(r, factors=[None, 7])
    sch.reorder(r1, c, r0)
    _same_numbers(shift_add, sch.mod["main"])


@T.prim_func
def to_blocks_of_eight(A: T.Buffer((3, 16), "float32"), C: T.Buffer((6, 8), "float32")):
    B = T.alloc_buffer((3, 16), "float32")
    for i, j in T.grid(3, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for o, l in T.grid(6, 8):
        with T.block("C"):
            vo, vl = T.axis.remap("SS", [o, l])
            C[vo, vl] = B[(vo * 8 + vl) // 16, (vo * 8 + vl) % 16]


def test_reverse_compute_at_solves_a_fused_pair_of_consumer_iterators():
    sch = tir.Schedule(to_blocks_of_eight)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    # one row of B (16 values) is two rows of C: o runs over [2i, 2i + 1]
    loops = sch.get_loops(sch.get_block("C"))
    assert [int(sch.get(lp).extent) for lp in loops] == [3, 2, 8]
    _same_numbers(to_blocks_of_eight, sch.mod["main"])


@T.prim_func
def to_blocks_of_six(A: T.Buffer((3, 16), "float32"), C: T.Buffer((8, 6), "float32")):
    B = T.alloc_buffer((3, 16), "float32")
    for i, j in T.grid(3, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for o, l in T.grid(8, 6):
        with T.block("C"):
            vo, vl = T.axis.remap("SS", [o, l])
            C[vo, vl] = B[(vo * 6 + vl) // 16, (vo * 6 + vl) % 16]


def test_reverse_compute_at_refuses_a_fused_pair_that_straddles_the_rows():
    sch = tir.Schedule(to_blocks_of_six)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="does not produce all of B"):
        sch.reverse_compute_at(sch.get_block("C"), i)


@T.prim_func
def symbolic_fused(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (4, n), "float32")
    C = T.match_buffer(c, (4, n), "float32")
    B = T.alloc_buffer((4, n), "float32")
    for f in range(n * 4):
        with T.block("B"):
            v0 = T.axis.spatial(4, f // n)
            v1 = T.axis.spatial(n, f % n)
            B[v0, v1] = A[v0, v1] * T.float32(2)
    for f in range(n * 4):
        with T.block("C"):
            v0 = T.axis.spatial(4, f // n)
            v1 = T.axis.spatial(n, f % n)
            C[v0, v1] = B[v0, v1] + T.float32(1)


def test_reverse_compute_at_under_a_symbolic_loop_needs_no_guard():
    sch = tir.Schedule(symbolic_fused)
    (f,) = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), f, preserve_unit_loops=True)
    # inside a loop over n * 4 values, n > 0: f // n and f % n stay in their domains
    realize = sch.get_sref(sch.get_block("C")).parent.stmt.body  # under the innermost loop
    assert realize.block.name_hint == "C" and realize.predicate.value == 1
    mod_b = tvm.build(symbolic_fused, target="llvm")
    mod_a = tvm.build(sch.mod["main"], target="llvm")
    a = np.random.default_rng(1).standard_normal((4, 5)).astype("float32")
    outs = []
    for mod in (mod_b, mod_a):
        c = tvm.nd.array(np.zeros((4, 5), "float32"))
        mod(tvm.nd.array(a), c)
        outs.append(c.numpy())
    np.testing.assert_allclose(outs[0], a * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(outs[1], a * 2 + 1, rtol=1e-6)


@T.prim_func
def fill_128(A: T.Buffer((128,), "float32")):
    for i in range(128):
        with T.block("fill"):
            vi = T.axis.spatial(128, i)
            A[vi] = T.float32(1)


def _sve():
    return tvm.target.Target("llvm -mtriple=aarch64-linux-gnu -mattr=+sve")


def test_split_by_a_scalable_factor_is_proved_for_every_sve_vscale():
    with _sve():
        sch = tir.Schedule(fill_128)
        (i,) = sch.get_loops(sch.get_block("fill"))
        outer = tir.floordiv(128 + 4 * tir.vscale() - 1, 4 * tir.vscale())
        _, i1 = sch.split(i, factors=[outer, 4 * tir.vscale()])
    assert "vscale" in str(sch.get(i1).extent)
    # that 4 * vscale divides 128 needs vscale's values, which the guard does not use (TVM)
    assert "T.where" in sch.mod["main"].script()


def test_split_by_a_scalable_factor_without_predication_when_every_vscale_divides():
    with _sve():
        sch = tir.Schedule(fill_128)
        (i,) = sch.get_loops(sch.get_block("fill"))
        outer = tir.floordiv(128 + 4 * tir.vscale() - 1, 4 * tir.vscale())
        sch.split(i, factors=[outer, 4 * tir.vscale()], disable_predication=True)
    assert "T.where" not in sch.mod["main"].script()


def test_split_by_a_scalable_factor_that_does_not_divide_keeps_refusing_no_predication():
    with _sve():
        sch = tir.Schedule(fill_128)
        (i,) = sch.get_loops(sch.get_block("fill"))
        outer = tir.floordiv(128 + 24 * tir.vscale() - 1, 24 * tir.vscale())
        with pytest.raises(ScheduleError, match="cannot prove that the factors' product divides"):
            sch.split(i, factors=[outer, 24 * tir.vscale()], disable_predication=True)


def test_split_by_a_scalable_factor_outside_an_sve_target_is_refused():
    sch = tir.Schedule(fill_128)
    (i,) = sch.get_loops(sch.get_block("fill"))
    outer = tir.floordiv(128 + 4 * tir.vscale() - 1, 4 * tir.vscale())
    with pytest.raises(ScheduleError, match="which does not cover the loop extent 128"):
        sch.split(i, factors=[outer, 4 * tir.vscale()])


def test_a_scalable_split_does_not_build_for_this_machine():
    with _sve():
        sch = tir.Schedule(fill_128)
        (i,) = sch.get_loops(sch.get_block("fill"))
        outer = tir.floordiv(128 + 4 * tir.vscale() - 1, 4 * tir.vscale())
        sch.split(i, factors=[outer, 4 * tir.vscale()])
    with pytest.raises(tvm.error.BuildError, match="vscale"):
        tvm.build(sch.mod["main"], target="llvm")


@T.prim_func
def lower_guard(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("g"):
            T.where(3 <= i * 4 + j)
            vi = T.axis.spatial(16, i * 4 + j)
            B[vi] = A[vi] * T.float32(2)


def test_reorder_accepts_a_lower_bound_on_a_binding():
    sch = tir.Schedule(lower_guard)
    i, j = sch.get_loops(sch.get_block("g"))
    sch.reorder(j, i)
    _same_numbers(lower_guard, sch.mod["main"])


def test_reorder_accepts_a_guard_that_bounds_a_binding_from_below_and_above():
    sch = tir.Schedule(fill_128)
    (i,) = sch.get_loops(sch.get_block("fill"))
    i0, i1 = sch.split(i, factors=[None, 12])
    sch.reorder(i1, i0)  # the guard i_0 * 12 + i_1 < 128 bounds the binding
    func = sch.mod["main"]
    out = tvm.nd.array(np.zeros(128, "float32"))
    tvm.build(func, target="llvm")(out)
    np.testing.assert_allclose(out.numpy(), np.ones(128, "float32"))
