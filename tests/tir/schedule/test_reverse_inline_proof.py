"""reverse_compute_inline of a consumer reading a row-major buffer with a mixed-radix index
(`rows[i0 * 4 + i2 * 2 + i3, i1]`, the conv gradients' NCHW write-back): accepted exactly
when a brute-force check of the index map says the fold is legal, proven without
enumerating points, and refused (non-injective, out of range, partial coverage) otherwise."""

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T
from minitvm.tir.schedule import inline


def _fold(rows_n, n, c, h, w, strides):
    """A producer `rows` (rows_n x c) and a consumer reading rows[i0*s0 + i2*s2 + i3*s3, i1]."""
    s0, s2, s3 = strides
    a = te.placeholder((rows_n, c), "float32", name="A")
    rows = te.compute((rows_n, c), lambda r, k: a[r, k] * 2.0, name="rows")
    out = te.compute(
        (n, c, h, w),
        lambda i0, i1, i2, i3: rows[i0 * s0 + i2 * s2 + i3 * s3, i1] + 1.0,
        name="out",
    )
    return tir.Schedule(te.create_prim_func([a, out])), out


def _brute_force_legal(rows_n, n, h, w, strides):
    """The fold is legal when the read rows are distinct and all written by the producer."""
    s0, s2, s3 = strides
    read = [
        i0 * s0 + i2 * s2 + i3 * s3
        for i0, i2, i3 in itertools.product(range(n), range(h), range(w))
    ]
    return len(set(read)) == len(read) and all(0 <= r < rows_n for r in read)


def _run(sch, a, shape):
    f = tvm.build(sch.mod, target="llvm")
    out = tvm.nd.array(np.zeros(shape, "float32"))
    f(tvm.nd.array(a), out)
    return out.numpy()


CASES = [
    # rows_n, n, c, h, w, (s0, s2, s3)
    (8, 2, 3, 2, 2, (4, 2, 1)),  # the radix of (n, h, w): legal
    (48, 3, 2, 4, 4, (16, 4, 1)),
    (10, 2, 3, 2, 2, (4, 2, 1)),  # the producer writes rows no one reads: still legal
    (8, 2, 3, 2, 2, (2, 2, 1)),  # i0 and i2 collide: not injective
    (8, 2, 3, 2, 2, (4, 1, 2)),  # the radix of (n, w, h): a transposed read
    (6, 2, 3, 2, 2, (4, 2, 1)),  # reads rows 6 and 7, never written
    (8, 2, 3, 2, 2, (4, 2, 2)),  # i2 and i3 collide
    (16, 2, 3, 2, 2, (8, 2, 1)),  # injective with gaps: legal but not a radix
]


@pytest.mark.parametrize("rows_n,n,c,h,w,strides", CASES)
def test_reverse_inline_radix_read_matches_brute_force(rows_n, n, c, h, w, strides):
    sch, _ = _fold(rows_n, n, c, h, w, strides)
    legal = _brute_force_legal(rows_n, n, h, w, strides)
    try:
        sch.reverse_compute_inline(sch.get_block("out"))
    except ScheduleError:
        accepted = False
    else:
        accepted = True
    assert not accepted or legal, "an illegal fold was accepted"
    radix = strides[2] == 1 and strides[1] == w and strides[0] == h * w
    if legal and radix:
        assert accepted, "a mixed-radix read of a fully written buffer was refused"
    if accepted:
        with pytest.raises(ScheduleError):
            sch.get_block("out")  # folded into the producer
        a = np.random.default_rng(0).standard_normal((rows_n, c)).astype("float32")
        s0, s2, s3 = strides
        i0, i1, i2, i3 = np.indices((n, c, h, w))
        want = a[i0 * s0 + i2 * s2 + i3 * s3, i1] * 2.0 + 1.0
        np.testing.assert_allclose(_run(sch, a, (n, c, h, w)), want, rtol=1e-6)


def test_reverse_inline_radix_read_proven_without_enumeration(monkeypatch):
    # 2 x 8 x 64 x 64 = 65536 points per block, the size the conv gradients' write-back has;
    # the proof must not fall back to evaluating every point
    def enumerate_points(*args):
        raise AssertionError("the mixed-radix round trip was enumerated point by point")

    monkeypatch.setattr(inline, "_check_by_points", enumerate_points)
    sch, _ = _fold(2 * 64 * 64, 2, 8, 64, 64, (64 * 64, 64, 1))
    sch.reverse_compute_inline(sch.get_block("out"))
    a = np.random.default_rng(1).standard_normal((2 * 64 * 64, 8)).astype("float32")
    want = a.reshape(2, 64, 64, 8).transpose(0, 3, 1, 2) * 2.0 + 1.0
    np.testing.assert_allclose(_run(sch, a, (2, 8, 64, 64)), want, rtol=1e-6)


@T.prim_func
def producer_cut_by_where(A: T.Buffer((8, 3), "float32"), C: T.Buffer((2, 3, 2, 2), "float32")):
    rows = T.alloc_buffer((8, 3))
    for r, k in T.grid(8, 3):
        with T.block("rows"):
            vr, vk = T.axis.remap("SS", [r, k])
            T.where(r < 6)
            rows[vr, vk] = A[vr, vk] * 2.0
    for i0, i1, i2, i3 in T.grid(2, 3, 2, 2):
        with T.block("out"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            C[v0, v1, v2, v3] = rows[v0 * 4 + v2 * 2 + v3, v1] + 1.0


def test_reverse_inline_refuses_a_producer_that_writes_part_of_its_domain():
    sch = tir.Schedule(producer_cut_by_where)
    with pytest.raises(ScheduleError, match="reverse_compute_inline.*'out'"):
        sch.reverse_compute_inline(sch.get_block("out"))


def test_radix_round_trip_rejects_a_wrong_digit():
    # the symbolic rule itself: the right digits pass, a swapped pair of digits does not
    i0, i2, i3 = (tir.Var(x, "int32") for x in ("i0", "i2", "i3"))
    ivs = tuple(
        tir.IterVar(tvm.ir.Range(0, e), v, tir.IterVar.DataPar)
        for v, e in ((i0, 2), (i2, 2), (i3, 2))
    )
    at = tir.Var("v0", "int32")
    idx = i0 * 4 + i2 * 2 + i3
    good = {i0: at // 4, i2: at // 2 % 2, i3: at % 2}
    assert inline._is_radix_round_trip(idx, at, good, ivs)
    swapped = {i0: at // 4, i2: at % 2, i3: at // 2 % 2}
    assert not inline._is_radix_round_trip(idx, at, swapped, ivs)
    assert not inline._is_radix_round_trip(i0 * 4 + i2 * 4 + i3, at, good, ivs)
