"""compute_inline / reverse_compute_inline on the forms TVM v0.19 accepts or refuses."""

import numpy as np
import pytest
from sched_workloads import same_numbers as _same_numbers

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T


@T.prim_func
def twice_read(
    X: T.Buffer((16, 8), "float32"),
    P: T.Buffer((16, 8), "float32"),
    Q: T.Buffer((16, 8), "float32"),
):
    t = T.alloc_buffer((16, 8), "float32")
    for a, b in T.grid(16, 8):
        with T.block("t"):
            va, vb = T.axis.remap("SS", [a, b])
            t[va, vb] = X[va, vb] - T.float32(3)
    for a, b in T.grid(16, 8):
        with T.block("P"):
            va, vb = T.axis.remap("SS", [a, b])
            P[va, vb] = t[va, vb] * T.float32(0.5)
    for a, b in T.grid(16, 8):
        with T.block("Q"):
            va, vb = T.axis.remap("SS", [a, b])
            Q[va, vb] = t[va, vb] + P[va, vb]


def test_compute_inline_into_two_consumers_keeps_values_and_orders_reads_like_the_body():
    sch = tir.Schedule(twice_read)
    sch.compute_inline(sch.get_block("t"))
    q = sch.get(sch.get_block("Q"))
    # the new read of X takes the place of t, ahead of P, as in the expression
    assert [rg.buffer.name for rg in q.reads] == ["X", "P"]
    _same_numbers(twice_read, sch.mod["main"])


@T.prim_func
def pointer_reader(X: T.Buffer((32,), "float32"), Y: T.Buffer((32,), "float32")):
    t = T.alloc_buffer((32,), "float32")
    for a in range(32):
        with T.block("t"):
            va = T.axis.remap("S", [a])
            t[va] = X[va] + T.float32(1)
    for a in range(32):
        with T.block("Y"):
            va = T.axis.remap("S", [a])
            T.reads(t[0:32])
            T.writes(Y[va])
            T.evaluate(t.access_ptr("r", extent=32))
            Y[va] = t[va] * T.float32(2)


@T.prim_func
def view_reader(X: T.Buffer((8, 4), "float32"), Y: T.Buffer((8, 4), "float32")):
    t = T.alloc_buffer((8, 4), "float32")
    for a, b in T.grid(8, 4):
        with T.block("t"):
            va, vb = T.axis.remap("SS", [a, b])
            t[va, vb] = X[va, vb] + T.float32(1)
    for a, b in T.grid(8, 4):
        with T.block("Y"):
            va, vb = T.axis.remap("SS", [a, b])
            view = T.match_buffer(t[va, vb : vb + 1], (1,))
            Y[va, vb] = view[0] * T.float32(2)


def test_compute_inline_refuses_a_consumer_that_takes_the_buffers_address():
    sch = tir.Schedule(pointer_reader)
    with pytest.raises(
        ScheduleError,
        match=r"block 'Y' takes the address of \(an opaque access to\) t; only element",
    ):
        sch.compute_inline(sch.get_block("t"))


def test_compute_inline_refuses_a_consumer_that_matches_a_view_of_the_buffer():
    sch = tir.Schedule(view_reader)
    with pytest.raises(ScheduleError, match=r"block 'Y' declares a match_buffer view of t"):
        sch.compute_inline(sch.get_block("t"))


@T.prim_func
def split_producer_symbolic(a: T.handle, c: T.handle):
    n = T.int32()
    X = T.match_buffer(a, (n, 64), "float32")
    Y = T.match_buffer(c, (n, 64), "float32")
    t = T.alloc_buffer((n, 64), "float32")
    for r in range(n):
        for j0, j1 in T.grid(8, 8):
            with T.block("t"):
                vz = T.axis.spatial(1, 0)
                vr = T.axis.spatial(n, r)
                vj = T.axis.spatial(64, j0 * 8 + j1)
                t[vr, vj] = X[vr, vj] * T.float32(2) + T.float32(vz)
    for r, j in T.grid(n, 64):
        with T.block("Y"):
            vr, vj = T.axis.remap("SS", [r, j])
            Y[vr, vj] = t[vr, vj] - T.float32(1)


@T.prim_func
def overlapping_producer_symbolic(a: T.handle, c: T.handle):
    n = T.int32()
    X = T.match_buffer(a, (n, 64), "float32")
    Y = T.match_buffer(c, (n, 64), "float32")
    t = T.alloc_buffer((n, 64), "float32")
    for r in range(n):
        for j0, j1 in T.grid(16, 8):
            with T.block("t"):
                vr = T.axis.spatial(n, r)
                vj = T.axis.spatial(64, j0 * 4 + j1)  # j0*4 + j1 reaches some columns twice
                T.where(j0 * 4 + j1 < 64)
                t[vr, vj] = X[vr, vj] * T.float32(2)
    for r, j in T.grid(n, 64):
        with T.block("Y"):
            vr, vj = T.axis.remap("SS", [r, j])
            Y[vr, vj] = t[vr, vj] - T.float32(1)


def _run_symbolic(f, rows, seed=0):
    x = np.random.default_rng(seed).standard_normal((rows, 64)).astype("float32")
    y = tvm.nd.array(np.zeros_like(x))
    tvm.build(f, target="llvm")(tvm.nd.array(x), y)
    return x, y.numpy()


def test_reverse_compute_inline_into_a_split_producer_with_symbolic_rows():
    sch = tir.Schedule(split_producer_symbolic)
    sch.reverse_compute_inline(sch.get_block("Y"))
    assert [b.name_hint for b in _blocks(sch.mod["main"])] == ["root", "t"]
    x, y = _run_symbolic(sch.mod["main"], 5)
    np.testing.assert_allclose(y, x * 2 - 1, rtol=1e-6)


def test_reverse_compute_inline_refuses_a_producer_whose_loops_repeat_points():
    sch = tir.Schedule(overlapping_producer_symbolic)
    with pytest.raises(
        ScheduleError, match=r"cannot prove which elements of t producer 't' writes"
    ):
        sch.reverse_compute_inline(sch.get_block("Y"))


def _blocks(func):
    from minitvm.tir.functor import post_order_visit
    from minitvm.tir.stmt import Block

    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Block) else None)
    return found[::-1]


@T.prim_func
def flat_reader(X: T.Buffer((16, 32), "float32"), Y: T.Buffer((4, 8, 16), "float32")):
    t = T.alloc_buffer((16, 32), "float32")
    for a, b in T.grid(16, 32):
        with T.block("t"):
            va, vb = T.axis.remap("SS", [a, b])
            t[va, vb] = X[va, vb] * T.float32(3)
    for p, q, r in T.grid(4, 8, 16):
        with T.block("Y"):
            vp, vq, vr = T.axis.remap("SSS", [p, q, r])
            Y[vp, vq, vr] = t[((vp * 8 + vq) * 16 + vr) // 32, ((vp * 8 + vq) * 16 + vr) % 32]


def test_reverse_compute_inline_through_a_flattening_read_writes_the_reshaped_output():
    sch = tir.Schedule(flat_reader)
    sch.reverse_compute_inline(sch.get_block("Y"))
    text = sch.mod["main"].script()
    # the consumer's iterators come back from the flat index low + high * 32, unsimplified
    assert "Y[(vb + va * 32) // 128, (vb + va * 32) // 16 % 8, (vb + va * 32) % 16]" in text
    _same_numbers(flat_reader, sch.mod["main"])


@T.prim_func
def tiled_reader(X: T.Buffer((48, 48), "float32"), Y: T.Buffer((45, 47), "float32")):
    t = T.alloc_buffer((3, 3, 16, 16), "float32")
    for a, b, c, d in T.grid(3, 3, 16, 16):
        with T.block("t"):
            va, vb, vc, vd = T.axis.remap("SSSS", [a, b, c, d])
            t[va, vb, vc, vd] = X[va * 16 + vc, vb * 16 + vd] + T.float32(1)
    for p, q in T.grid(45, 47):
        with T.block("Y"):
            vp, vq = T.axis.remap("SS", [p, q])
            Y[vp, vq] = t[vp // 16, vq // 16, vp % 16, vq % 16] * T.float32(2)


def test_reverse_compute_inline_into_an_overcomputed_tiled_producer_guards_the_tail():
    sch = tir.Schedule(tiled_reader)
    sch.reverse_compute_inline(sch.get_block("Y"))
    text = sch.mod["main"].script()
    assert "T.where(a * 16 + c < 45 and b * 16 + d < 47)" in text
    assert "Y[vc + va * 16, vd + vb * 16]" in text
    _same_numbers(tiled_reader, sch.mod["main"])


@T.prim_func
def fused_overcompute(X: T.Buffer((64, 32), "float32"), Y: T.Buffer((63, 31), "float32")):
    t = T.alloc_buffer((64, 32), "float32")
    for f in range(2048):
        with T.block("t"):
            va = T.axis.spatial(64, f // 32)
            vb = T.axis.spatial(32, f % 32)
            t[va, vb] = X[va, vb] - T.float32(4)
    for p, q in T.grid(63, 31):
        with T.block("Y"):
            vp, vq = T.axis.remap("SS", [p, q])
            Y[vp, vq] = t[vp, vq] * t[vp, vq]


def test_reverse_compute_inline_fused_producer_guard_stops_at_the_last_needed_point():
    sch = tir.Schedule(fused_overcompute)
    sch.reverse_compute_inline(sch.get_block("Y"))
    # f // 32 < 63 alone allows f < 2016; with f % 32 < 31 the last point needed is 2014
    assert "T.where(f < 2015 and f % 32 < 31)" in sch.mod["main"].script()
    _same_numbers(fused_overcompute, sch.mod["main"])
