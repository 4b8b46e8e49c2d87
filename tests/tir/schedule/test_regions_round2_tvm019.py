"""Round-2 compatibility fixes around block access regions, dtypes handed to numpy and
rolling buffers whose tiles start at a fractional stride."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.ir.dtype import DataType
from minitvm.script import tir as T


def run(func, inputs, out_shape, out_dtype="float32"):
    f = tvm.build(func)
    args = [tvm.nd.array(x) for x in inputs] + [tvm.nd.array(np.zeros(out_shape, out_dtype))]
    f(*args)
    return args[-1].numpy()


# ------------------------------------------------------------- reads of blocks with an init
@T.prim_func
def row_sums(A: T.Buffer((6, 9), "float32"), S: T.Buffer((6,), "float32")):
    for i, k in T.grid(6, 9):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]


@T.prim_func
def running_sums(A: T.Buffer((6, 9), "float32"), S: T.Buffer((6,), "float32")):
    for i, k in T.grid(6, 9):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            S[vi] = S[vi] + A[vi, vk]


def test_block_with_init_leaves_its_accumulator_out_of_its_reads():
    sch = tir.Schedule(row_sums)
    block = sch.get(sch.get_block("S"))
    assert [r.buffer.name for r in block.reads] == ["A"]
    assert [w.buffer.name for w in block.writes] == ["S"]
    a = np.random.rand(6, 9).astype("float32")
    np.testing.assert_allclose(run(row_sums, [a], (6,)), a.sum(1), rtol=1e-5)


def test_block_without_init_keeps_the_buffer_it_updates_in_its_reads():
    sch = tir.Schedule(running_sums)
    block = sch.get(sch.get_block("S"))
    assert sorted(r.buffer.name for r in block.reads) == ["A", "S"]


def test_inferred_reads_survive_a_print_parse_round_trip():
    again = tvm.script.from_source(row_sums.script())
    tvm.ir.assert_structural_equal(again, row_sums)
    assert "T.reads" not in row_sums.script()


def test_reduction_still_schedules_and_computes_after_the_reads_change():
    sch = tir.Schedule(row_sums)
    _, k = sch.get_loops(sch.get_block("S"))
    ko, _ = sch.split(k, factors=[None, 4])
    sch.reorder(ko, sch.get_loops(sch.get_block("S"))[0])
    a = np.random.rand(6, 9).astype("float32")
    np.testing.assert_allclose(run(sch.mod["main"], [a], (6,)), a.sum(1), rtol=1e-5)


# ------------------------------------------------------------- DataType handed to numpy
@pytest.mark.parametrize("name", ["int8", "uint8", "int32", "float16", "float64", "bool"])
def test_numpy_takes_a_buffer_dtype(name):
    buf = tir.decl_buffer((3,), name)
    out = np.zeros((3,)).astype(buf.dtype)
    assert out.dtype == np.dtype(name)
    assert buf.dtype == name and DataType(name) is buf.dtype  # still the interned DataType


def test_numpy_refuses_a_dtype_it_has_no_equivalent_for():
    assert not hasattr(DataType("float32x4"), "dtype")
    with pytest.raises(TypeError):
        np.zeros(2).astype(DataType("float32x4"))
    with pytest.raises(TypeError):
        np.dtype(DataType("handle"))


# ------------------------------------------------------------- rolling_buffer, i * p // q tiles
@T.prim_func
def upscale_max(A: T.Buffer((16,), "float32"), C: T.Buffer((24,), "float32")):
    B = T.alloc_buffer((14,))
    for i, k in T.grid(14, 3):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], A[vi + vk])
    for i, k in T.grid(24, 3):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(-1e30)
            C[vi] = T.max(C[vi], B[vi // 2 + vk])


def expect_upscale_max(a):
    b = np.maximum(np.maximum(a[:-2], a[1:-1]), a[2:])
    return np.array([max(b[i // 2 + k] for k in range(3)) for i in range(24)], "float32")


def test_rolling_buffer_with_tiles_starting_at_a_fractional_stride():
    sch = tir.Schedule(upscale_max)
    i, _ = sch.get_loops(sch.get_block("C"))
    io, _ = sch.split(i, factors=[None, 5])  # B tiles start at io * 5 // 2: steps of 2 and 3
    sch.compute_at(sch.get_block("B"), io)
    sch.rolling_buffer(sch.get_block("B"), 0)
    block = sch.get(sch.get_block("B"))
    assert [int(s) for s in block.writes[0].buffer.shape] == [5]
    assert "2 <= ax0" in sch.mod.script()  # skips ceil(5 / 2) = 3 rows less than the tile
    a = np.random.rand(16).astype("float32")
    np.testing.assert_allclose(run(sch.mod["main"], [a], (24,)), expect_upscale_max(a))


def test_rolling_buffer_with_other_fractional_strides():
    sch = tir.Schedule(upscale_max)
    i, _ = sch.get_loops(sch.get_block("C"))
    io, _ = sch.split(i, factors=[None, 12])  # B tiles of 8 rows: io * 12 // 2 steps 6 < 8
    sch.compute_at(sch.get_block("B"), io)
    sch.rolling_buffer(sch.get_block("B"), 0)
    a = np.random.rand(16).astype("float32")
    np.testing.assert_allclose(run(sch.mod["main"], [a], (24,)), expect_upscale_max(a))
    sch = tir.Schedule(upscale_max)
    i, _ = sch.get_loops(sch.get_block("C"))
    io, _ = sch.split(i, factors=[None, 1])  # one output row: B tiles of 3 rows every 0 or 1
    sch.compute_at(sch.get_block("B"), io)
    sch.rolling_buffer(sch.get_block("B"), 0)
    np.testing.assert_allclose(run(sch.mod["main"], [a], (24,)), expect_upscale_max(a))


@T.prim_func
def halve(A: T.Buffer((8,), "float32"), C: T.Buffer((15,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(15):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi // 2]


def test_rolling_buffer_refuses_fractional_stride_tiles_that_do_not_overlap():
    sch = tir.Schedule(halve)
    i = sch.get_loops(sch.get_block("C"))[0]
    io, _ = sch.split(i, factors=[None, 3])  # B tiles of 2 rows at io * 3 // 2: steps 1 or 2
    sch.compute_at(sch.get_block("B"), io)
    with pytest.raises(ScheduleError, match="no axis of 'B' has tiles that overlap"):
        sch.rolling_buffer(sch.get_block("B"), 0)


# ------------------------------------------------------------- slice extents in T.reads
@T.prim_func
def blur3(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
    for i in range(1, 9):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi - 1 : vi + 2])
            T.writes(C[vi])
            C[vi] = A[vi - 1] + A[vi] + A[vi + 1]


def test_slice_extent_folds_to_a_constant():
    sch = tir.Schedule(blur3)
    region = sch.get(sch.get_block("C")).reads[0].region[0]
    assert isinstance(region.extent, tvm.tir.IntImm) and int(region.extent) == 3
    again = tvm.script.from_source(blur3.script())
    tvm.ir.assert_structural_equal(again, blur3)
    a = np.random.rand(10).astype("float32")
    want = np.zeros(10, "float32")
    want[1:9] = a[:-2] + a[1:-1] + a[2:]
    np.testing.assert_allclose(run(blur3, [a], (10,)), want, rtol=1e-6)


def test_symbolic_slice_extent_stays_as_written():
    @T.prim_func
    def window(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n,), "float32")
        C = T.match_buffer(c, (1,), "float32")
        with T.block("C"):
            T.reads(A[n // 2 : n])
            T.writes(C[0])
            C[0] = A[n - 1]

    sch = tir.Schedule(window)
    extent = sch.get(sch.get_block("C")).reads[0].region[0].extent
    assert not isinstance(extent, tvm.tir.IntImm)
    tvm.ir.assert_structural_equal(tvm.script.from_source(window.script()), window)


# ------------------------------------------------------------- regions relaxed over inner loops
@T.prim_func
def tiles64(A: T.Buffer((T.int64(4), T.int64(32)), "float32"), B: T.Buffer((T.int64(4), T.int64(32)), "float32")):
    for i0, j0 in T.grid(T.int64(1), T.int64(4)):
        with T.block("B_o"):
            vi_o = T.axis.spatial(T.int64(1), i0)
            vj_o = T.axis.spatial(T.int64(4), j0)
            for i1, j1 in T.grid(T.int64(4), T.int64(8)):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i1, j1])
                    B[vi, vj_o * T.int64(8) + vj] = A[vi, vj_o * T.int64(8) + vj] + T.float32(1)


def test_region_over_inner_loops_is_simplified():
    block = tiles64.body.block.body.body.body.block
    (read,) = block.reads
    lo, extent = read.region[1].min, read.region[1].extent
    assert str(lo) == "vj_o * T.int64(8)" and int(extent) == 8
    assert int(read.region[0].min) == 0 and int(read.region[0].extent) == 4
    tvm.ir.assert_structural_equal(tvm.script.from_source(tiles64.script()), tiles64)
    a = np.random.rand(4, 32).astype("float32")
    np.testing.assert_allclose(run(tiles64, [a], (4, 32)), a + 1, rtol=1e-6)
