"""compute_at / reverse_compute_at / reverse_compute_inline of blocks whose buffer indices are
expressions of their iterators (`9 - vi`, `v // 16`, `vi * 2`), checked against numpy, and the
errors that name why a move is refused."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T


def run(sch, inputs, out_shape):
    f = tvm.build(sch.mod, target="llvm")
    nds = [tvm.nd.array(x) for x in inputs] + [tvm.nd.array(np.zeros(out_shape, "float32"))]
    f(*nds)
    return nds[-1].numpy()


def rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


@T.prim_func
def reversed_producer(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
    Y = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("b0"):
            vi = T.axis.remap("S", [i])
            Y[9 - vi] = A[vi] * 2.0
    for i in range(10):
        with T.block("b1"):
            vi = T.axis.remap("S", [i])
            C[vi] = Y[vi] + 1.0


@T.prim_func
def strided_producer(A: T.Buffer((16,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi * 2] = A[vi * 2] + 1.0
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi * 2] * 3.0


@T.prim_func
def coarse_consumer(A: T.Buffer((4,), "float32"), C: T.Buffer((64,), "float32")):
    temp = T.alloc_buffer((4,))
    for i in range(4):
        with T.block("A2"):
            vi = T.axis.remap("S", [i])
            temp[vi] = A[vi] * 2.0
    for i in range(64):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            C[vi] = temp[vi // 16] + 1.0


def test_compute_at_producer_writing_a_reversed_index():
    sch = tir.Schedule(reversed_producer)
    (i,) = sch.get_loops(sch.get_block("b1"))
    sch.compute_at(sch.get_block("b0"), i)
    a = rand(10)
    np.testing.assert_allclose(run(sch, [a], (10,)), a[::-1] * 2 + 1, rtol=1e-6)


def test_compute_at_producer_writing_a_strided_index():
    sch = tir.Schedule(strided_producer)
    (i,) = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    a = rand(16)
    np.testing.assert_allclose(run(sch, [a], (8,)), (a[::2] + 1) * 3, rtol=1e-6)


def test_reverse_compute_at_consumer_reading_a_coarser_index():
    sch = tir.Schedule(coarse_consumer)
    (i,) = sch.get_loops(sch.get_block("A2"))
    sch.reverse_compute_at(sch.get_block("B"), i)
    loops = sch.get_loops(sch.get_block("B"))
    assert sch.get(loops[-1]).extent.value == 16  # one row of 16 consumers per element of temp
    a = rand(4)
    np.testing.assert_allclose(run(sch, [a], (64,)), np.repeat(a * 2, 16) + 1, rtol=1e-6)


@T.prim_func
def two_stage(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def split_writer(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    for i in range(8):
        for j in range(4):
            with T.block("B_0"):
                vi = T.axis.spatial(8, i)
                vj = T.axis.spatial(8, j)
                B[vi, vj] = A[vi, vj] * 2.0
        for j in range(4):
            with T.block("B_1"):
                vi = T.axis.spatial(8, i)
                vj = T.axis.spatial(8, j + 4)
                B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


def test_compute_at_of_an_output_block_raises():
    sch = tir.Schedule(two_stage)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"'C' is an output block \(no block of its scope"):
        sch.compute_at(sch.get_block("C"), i)


def test_compute_at_into_own_loop_names_the_ancestor():
    sch = tir.Schedule(two_stage)
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"the loop is an ancestor of block 'B'"):
        sch.compute_at(sch.get_block("B"), i)


def test_compute_at_of_one_of_two_writers_raises():
    sch = tir.Schedule(split_writer)
    i, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(
        ScheduleError, match=r"block 'B_0' is not a complete block: block 'B_1' also writes B"
    ):
        sch.compute_at(sch.get_block("B_0"), i)
