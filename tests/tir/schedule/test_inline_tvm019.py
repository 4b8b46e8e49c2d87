"""compute_inline / reverse_compute_inline on the forms TVM v0.19 accepts or refuses."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T


def _same_numbers(before, after, seed=0):
    """Build both functions and run them on the same random data; outputs must agree."""
    rng = np.random.default_rng(seed)
    args = []
    for p in before.params:
        buf = before.buffer_map[p]
        args.append(rng.standard_normal([int(s) for s in buf.shape]).astype(str(buf.dtype)))
    outs = []
    for f in (before, after):
        mod = tvm.build(f, target="llvm")
        nds = [tvm.nd.array(a.copy()) for a in args]
        mod(*nds)
        outs.append([x.numpy() for x in nds])
    for x, y in zip(*outs):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


@T.prim_func
def twice_read(X: T.Buffer((16, 8), "float32"), P: T.Buffer((16, 8), "float32"),
               Q: T.Buffer((16, 8), "float32")):
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
    with pytest.raises(ScheduleError, match=r"block 'Y' takes the address of \(an opaque access to\) t; only element"):
        sch.compute_inline(sch.get_block("t"))


def test_compute_inline_refuses_a_consumer_that_matches_a_view_of_the_buffer():
    sch = tir.Schedule(view_reader)
    with pytest.raises(ScheduleError, match=r"block 'Y' declares a match_buffer view of t"):
        sch.compute_inline(sch.get_block("t"))
