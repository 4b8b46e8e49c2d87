"""cache_read / cache_write inside nested block scopes and inside loop nests (TVM's placement),
checked against numpy, and the refusals that keep them sound."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import ScheduleError
from minitvm.script import tir as T


@T.prim_func
def tiles(b: T.handle, c: T.handle) -> None:
    P = T.alloc_buffer((32, 32))
    B = T.match_buffer(b, (32, 32))
    C = T.match_buffer(c, (32, 32))
    for i0, j0 in T.grid(4, 4):
        with T.block("tile"):
            i, j = T.axis.remap("SS", [i0, j0])
            for x, y in T.grid(8, 8):
                with T.block("P"):
                    vi = T.axis.S(32, i * 8 + x)
                    vj = T.axis.S(32, j * 8 + y)
                    P[vi, vj] = T.float32(vi * 32 + vj)
            for x, y in T.grid(8, 8):
                with T.block("B"):
                    vi = T.axis.S(32, i * 8 + x)
                    vj = T.axis.S(32, j * 8 + y)
                    B[vi, vj] = P[vi, vj] * T.float32(3)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = P[vi, vj] + T.float32(1)


@T.prim_func
def chunks(a: T.handle, b: T.handle, c: T.handle) -> None:
    A = T.match_buffer(a, (64,))
    B = T.match_buffer(b, (64,))
    C = T.match_buffer(c, (64,))
    M = T.alloc_buffer((64,))
    for i in range(4):
        for j in range(16):
            with T.block("M"):
                vi = T.axis.S(64, i * 16 + j)
                M[vi] = A[vi] * T.float32(2)
        for j in range(16):
            with T.block("B"):
                vi = T.axis.S(64, i * 16 + j)
                B[vi] = M[vi] + T.float32(1)
    for i in range(64):
        with T.block("C"):
            vi = T.axis.S(64, i)
            C[vi] = M[vi] - T.float32(1)


@T.prim_func
def two_writers(a: T.handle, b: T.handle) -> None:
    A = T.match_buffer(a, (16,))
    B = T.match_buffer(b, (16,))
    M = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("M0"):
            vi = T.axis.S(16, i)
            M[vi] = A[vi]
    for i in range(16):
        with T.block("M1"):
            vi = T.axis.S(16, i)
            M[vi] = M[vi] + T.float32(1)
    for i in range(16):
        with T.block("B"):
            vi = T.axis.S(16, i)
            B[vi] = M[vi]


@T.prim_func
def shifted_reader(a: T.handle, b: T.handle) -> None:
    A = T.match_buffer(a, (64,))
    B = T.match_buffer(b, (64,))
    M = T.alloc_buffer((64,))
    for i in range(4):
        for j in range(16):
            with T.block("M"):
                vi = T.axis.S(64, i * 16 + j)
                M[vi] = A[vi]
        for j in range(16):
            with T.block("B"):
                vi = T.axis.S(64, i * 16 + j)
                B[vi] = M[63 - vi]


def _run(func, shapes, out_index):
    rt = tvm.build(func, target="llvm")
    rng = np.random.default_rng(0)
    arrays = [tvm.nd.array(rng.standard_normal(s).astype("float32")) for s in shapes]
    rt(*arrays)
    return [a.numpy() for a in arrays]


def _same(before, after, shapes):
    ref = _run(before, shapes, None)
    got = _run(after, shapes, None)
    for x, y in zip(ref, got):
        np.testing.assert_allclose(y, x, rtol=1e-6)


def test_cache_read_in_nested_scope_is_compact_and_correct():
    sch = tvm.tir.Schedule(tiles)
    sch.cache_read(sch.get_block("B"), 0, "local")
    sch.cache_read(sch.get_block("C"), 0, "global")
    text = sch.mod["main"].script()
    assert 'P_local = T.alloc_buffer((8, 8), "float32", scope="local")' in text
    _same(tiles, sch.mod["main"], [(32, 32), (32, 32)])
    idx = np.arange(32 * 32, dtype="float32").reshape(32, 32)
    out = _run(sch.mod["main"], [(32, 32), (32, 32)], None)
    np.testing.assert_allclose(out[0], idx * 3)
    np.testing.assert_allclose(out[1], idx + 1)


def test_cache_write_in_nested_scope_and_of_the_scope_block():
    sch = tvm.tir.Schedule(tiles)
    sch.cache_write(sch.get_block("P"), 0, "local")
    sch.cache_write(sch.get_block("B"), 0, "global")
    _same(tiles, sch.mod["main"], [(32, 32), (32, 32)])


def test_cache_read_inside_loop_nest_and_consumer_blocks():
    for consumers in (None, ["C"], ["B", "C"]):
        sch = tvm.tir.Schedule(chunks)
        kw = {} if consumers is None else {"consumer_blocks": [sch.get_block(n) for n in consumers]}
        sch.cache_read(sch.get_block("B"), 0, "global", **kw)
        _same(chunks, sch.mod["main"], [(64,), (64,), (64,)])


def test_cache_write_inside_loop_nest_with_consumer_blocks():
    for consumers in (None, ["B"], ["C"], ["B", "C"]):
        sch = tvm.tir.Schedule(chunks)
        kw = {} if consumers is None else {"consumer_blocks": [sch.get_block(n) for n in consumers]}
        sch.cache_write(sch.get_block("M"), 0, "global", **kw)
        _same(chunks, sch.mod["main"], [(64,), (64,), (64,)])


def test_cache_read_refuses_several_producers():
    sch = tvm.tir.Schedule(two_writers)
    with pytest.raises(ScheduleError, match="written by several blocks.*'M0', 'M1'"):
        sch.cache_read(sch.get_block("B"), 0, "global")


def test_cache_read_refuses_reader_outside_the_copied_window():
    sch = tvm.tir.Schedule(shifted_reader)
    with pytest.raises(
        ScheduleError, match="cannot prove that block 'B' touches only the part of M"
    ):
        sch.cache_read(sch.get_block("B"), 0, "global")


def test_cache_read_refuses_consumer_from_another_scope():
    sch = tvm.tir.Schedule(tiles)
    with pytest.raises(ScheduleError, match="consumer block 'C' is not in the block scope of 'B'"):
        sch.cache_read(sch.get_block("B"), 0, "local", consumer_blocks=[sch.get_block("C")])


@T.prim_func
def read_then_overwrite(a: T.handle, b: T.handle) -> None:
    A = T.match_buffer(a, (32,))
    B = T.match_buffer(b, (32,))
    for i in range(32):
        with T.block("B"):
            vi = T.axis.S(32, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(32):
        with T.block("A"):
            vi = T.axis.S(32, i)
            A[vi] = T.float32(7)
    for i in range(32):
        with T.block("B2"):
            vi = T.axis.S(32, i)
            B[vi] = B[vi] + A[vi]


def test_cache_read_of_consumers_before_the_producer_copies_old_values():
    sch = tvm.tir.Schedule(read_then_overwrite)
    b = sch.get_block("B")
    sch.cache_read(b, 0, "global", consumer_blocks=[b])
    _same(read_then_overwrite, sch.mod["main"], [(32,), (32,)])


def test_cache_read_refuses_consumers_on_both_sides_of_the_producer():
    sch = tvm.tir.Schedule(read_then_overwrite)
    with pytest.raises(ScheduleError, match="reads A before its producer 'A' writes it"):
        sch.cache_read(sch.get_block("B"), 0, "global")


@T.prim_func
def tile_reads_neighbour(b: T.handle, c: T.handle) -> None:
    P = T.alloc_buffer((32,))
    B = T.match_buffer(b, (32,))
    C = T.match_buffer(c, (32,))
    for i0 in range(4):
        with T.block("tile"):
            i = T.axis.remap("S", [i0])
            for x in range(8):
                with T.block("P"):
                    vi = T.axis.S(32, i * 8 + x)
                    P[vi] = T.float32(vi)
            for x in range(8):
                with T.block("B"):
                    vi = T.axis.S(32, i * 8 + x)
                    B[vi] = P[(vi + 8) % 32]
    for i in range(32):
        with T.block("C"):
            vi = T.axis.S(32, i)
            C[vi] = P[vi]


def test_cache_write_of_a_scope_block_that_reads_its_own_writes():
    sch = tvm.tir.Schedule(tiles)
    sch.cache_write(sch.get_block("P"), 0, "local")
    sch.cache_write(sch.get_block("tile"), 0, "global")
    _same(tiles, sch.mod["main"], [(32, 32), (32, 32)])


def test_cache_write_refuses_a_scope_block_reading_values_it_did_not_write():
    sch = tvm.tir.Schedule(tile_reads_neighbour)
    with pytest.raises(ScheduleError, match="block 'tile' reads P before updating it"):
        sch.cache_write(sch.get_block("tile"), 0, "global")


@T.prim_func
def scale_in_place(a: T.handle, b: T.handle) -> None:
    A = T.match_buffer(a, (16,))
    B = T.match_buffer(b, (16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.S(16, i)
            B[vi] = A[vi]
    for i0 in range(1):
        with T.block("scale"):
            T.reads(A[0:16])
            T.writes(A[0:16])
            for j in range(16):
                A[j] = A[j] * T.float32(2) + B[15 - j]


@T.prim_func
def grow_in_place(a: T.handle) -> None:
    A = T.match_buffer(a, (16,))
    for i0 in range(1):
        with T.block("grow"):
            T.reads(A[0:8])
            T.writes(A[0:16])
            for j in range(8):
                A[j + 8] = A[j]


def test_cache_inplace_then_cache_read_and_cache_write_of_its_copies():
    sch = tvm.tir.Schedule(scale_in_place)
    copy_in, copy_out = sch.cache_inplace(sch.get_block("scale"), 0, "local")
    sch.cache_read(copy_in, 0, "global", [copy_in])
    sch.cache_write(copy_out, 0, "global")
    _same(scale_in_place, sch.mod["main"], [(16,), (16,)])


def test_cache_inplace_refuses_writes_outside_what_the_block_reads():
    sch = tvm.tir.Schedule(grow_in_place)
    with pytest.raises(ScheduleError, match="writes only inside the part of A it reads"):
        sch.cache_inplace(sch.get_block("grow"), 0, "local")


@T.prim_func
def read_then_write_per_chunk(m: T.handle, b: T.handle) -> None:
    M = T.match_buffer(m, (64,))
    B = T.match_buffer(b, (64,))
    for i in range(4):
        for j in range(16):
            with T.block("R"):
                vi = T.axis.S(64, i * 16 + j)
                B[vi] = M[(vi + 16) % 64]
        for j in range(16):
            with T.block("M"):
                vi = T.axis.S(64, i * 16 + j)
                M[vi] = T.float32(vi)


def test_cache_write_refuses_an_earlier_reader_inside_a_repeated_loop():
    """R of chunk 1 reads what M wrote in chunk 0, which would still sit in the cache."""
    sch = tvm.tir.Schedule(read_then_write_per_chunk)
    with pytest.raises(ScheduleError, match="block 'R' reads M before 'M' writes it"):
        sch.cache_write(sch.get_block("M"), 0, "global")
