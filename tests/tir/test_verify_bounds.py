"""Provably out-of-bounds accesses are build errors; guarded or data-dependent ones are not
(issue 10, item 5)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import BuildError
from minitvm.script import tir as T
from minitvm.tir.analysis.verify_bounds import verify_bounds


def test_te_constant_offset_read_far_past_the_end_is_a_build_error():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i + 1000000], name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(
        BuildError,
        match=r"buffer 'A' of shape \(64,\) is read out of bounds in block 'B': index "
        r"`v_i \+ 1000000`.*dimension 0 ranges over \[1000000, 1000063\] but the extent is 64",
    ):
        tvm.build(s, [A, B], "llvm")


def test_tvmscript_small_buffer_read_by_larger_loops_is_a_build_error():
    @T.prim_func
    def copy(A: T.Buffer((64, 64), "float32"), B: T.Buffer((128, 128), "float32")):
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]

    with pytest.raises(BuildError, match=r"'A' of shape \(64, 64\) is read.*index `vi`.*"
                       r"\[0, 127\] but the extent is 64 \(it is 127 at i = 127\)"):
        tvm.build(copy, target="llvm")


def test_out_of_bounds_store_and_negative_index_are_reported():
    @T.prim_func
    def shift(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            B[i + 1] = A[i]

    @T.prim_func
    def back(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            B[i] = A[i - 1]

    with pytest.raises(BuildError, match=r"'B' of shape \(64,\) is written out of bounds.*"
                       r"it is 64 at i = 63"):
        verify_bounds(shift)
    with pytest.raises(BuildError, match=r"'A' .* is read out of bounds.*it is -1 at i = 0"):
        verify_bounds(back)


def test_else_branch_of_a_guard_is_checked_under_the_negated_condition():
    @T.prim_func
    def pad(A: T.Buffer((64,), "float32"), B: T.Buffer((128,), "float32")):
        for i in range(128):
            if i < 64:
                B[i] = T.float32(0)
            else:
                B[i] = A[i]

    with pytest.raises(BuildError, match="'A'.*it is 127 at i = 127"):
        verify_bounds(pad)


def test_triangular_loop_bounds_use_the_outer_loop_value():
    @T.prim_func
    def tri(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            for j in range(i):
                B[i] = B[i] + A[j + 1]

    @T.prim_func
    def tri_bad(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            for j in range(i):
                B[i] = B[i] + A[j + 2]

    assert verify_bounds(tri) is tri
    with pytest.raises(BuildError, match="it is 64 at i = 63, j = 62"):
        verify_bounds(tri_bad)


def test_guarded_accesses_build_and_match_numpy():
    @T.prim_func
    def guarded(A: T.Buffer((64, 64), "float32"), B: T.Buffer((128, 128), "float32")):
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(vi < 64 and vj < 64, A[vi, vj], T.float32(-1))

    @T.prim_func
    def where(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for io, ii in T.grid(5, 16):
            with T.block("B"):
                vi = T.axis.spatial(64, io * 16 + ii)
                T.where(io * 16 + ii < 64)
                B[vi] = A[vi] * T.float32(2)

    @T.prim_func
    def branch(A: T.Buffer((64,), "float32"), B: T.Buffer((128,), "float32")):
        for i in range(128):
            if i < 64:
                B[i] = A[i]
            else:
                B[i] = T.float32(0)

    a2 = np.random.default_rng(0).random((64, 64), "float32")
    b2 = np.zeros((128, 128), "float32")
    tvm.build(guarded, target="llvm")(a2, b2)
    expected = np.full((128, 128), -1, "float32")
    expected[:64, :64] = a2
    np.testing.assert_array_equal(b2, expected)

    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    tvm.build(where, target="llvm")(a, b)
    np.testing.assert_array_equal(b, a * 2)
    b = np.ones(128, "float32")
    tvm.build(branch, target="llvm")(a, b)
    np.testing.assert_array_equal(b, np.concatenate([a, np.zeros(64, "float32")]))


def test_symbolic_extents_pass_unless_provably_out_of_bounds():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=8)  # the tail is guarded by a predicate
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B], "llvm")
    a = np.arange(13, dtype="float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)

    @T.prim_func
    def maybe_empty(a: T.handle, B: T.Buffer((64,), "float32")):
        m = T.int32()
        A = T.match_buffer(a, (m,), "float32")
        for i in range(m):
            B[i + 100] = A[i]  # out of bounds, but only if m > 0: not provable, not raised

    assert verify_bounds(maybe_empty) is maybe_empty


def test_gather_index_is_left_to_the_run_time_check():
    @T.prim_func
    def gather(A: T.Buffer((8,), "float32"), I: T.Buffer((4,), "int32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[I[i] + 100]

    assert verify_bounds(gather) is gather


def test_out_of_bounds_point_that_no_corner_reaches_is_found_by_enumeration():
    # the guard excludes every corner where the index is too big, but admits io = 1, ii = 3
    @T.prim_func
    def f(A: T.Buffer((20,), "float32"), C: T.Buffer((20,), "float32")):
        for io in T.serial(3):
            for ii in T.serial(8):
                if io * 8 + ii < 20:
                    C[io * 8 * ii] = A[io * 8 + ii] * T.float32(2)

    with pytest.raises(BuildError, match=r"'C' of shape \(20,\) is written out of bounds.*it is 24"):
        tvm.build(f)


def test_guarded_access_in_bounds_at_every_running_point_builds():
    @T.prim_func
    def f(A: T.Buffer((20,), "float32"), C: T.Buffer((20,), "float32")):
        for io, ii in T.grid(3, 8):
            if io * 8 + ii < 20:
                C[io * 8 + ii] = A[io * 8 + ii] * T.float32(2)

    a = np.arange(20, dtype="float32")
    c = np.zeros(20, "float32")
    tvm.build(f)(a, c)
    np.testing.assert_array_equal(c, a * 2)


def test_padded_read_proven_inside_under_its_guard_needs_no_point_search(monkeypatch):
    # a conv-style padded read: in bounds wherever its guard holds, proven without enumerating
    from minitvm.tir.analysis import verify_bounds as vb

    def no_search(*args):
        raise AssertionError("the witness search ran for an access its guard keeps inside")

    monkeypatch.setattr(vb._BoundsChecker, "_enumerated_witness", no_search)
    A = te.placeholder((16, 16), name="A")
    P = te.compute(
        (18, 18),
        lambda i, j: tvm.tir.if_then_else(
            tvm.tir.all(i >= 1, i < 17, j >= 1, j < 17), A[i - 1, j - 1], 0.0
        ),
        name="P",
    )
    mod = tvm.build(te.create_prim_func([A, P]))
    a = np.random.default_rng(0).standard_normal((16, 16)).astype("float32")
    p = tvm.nd.array(np.zeros((18, 18), "float32"))
    mod(tvm.nd.array(a), p)
    np.testing.assert_array_equal(p.numpy(), np.pad(a, 1))


def test_guard_that_does_not_keep_the_access_inside_is_still_reported():
    # i < 20 guards C[i] of extent 16: i = 16 runs and is outside
    A = te.placeholder((24,), name="A")
    C = te.placeholder((16,), name="C")
    B = te.compute((24,), lambda i: tvm.tir.if_then_else(i < 20, A[i] + C[i], 0.0), name="B")
    with pytest.raises(BuildError, match="'C' of shape \\(16,\\) is read out of bounds"):
        tvm.build(te.create_prim_func([A, C, B]))
