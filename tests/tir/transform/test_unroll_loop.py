import pytest
import numpy as np
import tir_builders as tb
from minitvm.testing import run_prim_func

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.tir import BufferStore, For, ForKind, SeqStmt
from minitvm.tir.analysis import verify_well_formed
from minitvm.tir.transform import UnrollLoop, unroll_loop
from minitvm.tir.transform.unroll_loop import MAX_UNROLL_EXTENT


def _func(extent, kind=ForKind.UNROLLED, inner=None):
    A = tir.decl_buffer((extent, 3), "float32", "A")
    i = tir.Var("i")
    if inner:
        j = tir.Var("j")
        body = For(j, 0, 3, ForKind.SERIAL, BufferStore(A, tir.Cast("float32", i + j), (i, j)))
    else:
        body = BufferStore(A, tir.Cast("float32", i), (i, 0))
    loop = For(i, 0, extent, kind, body)
    return tb.func_of([A], loop).replace(body=loop), A


def test_short_unrolled_loop_becomes_copies():
    func, A = _func(3)
    out = unroll_loop(func)
    expected = SeqStmt(
        tuple(BufferStore(A, tir.Cast("float32", tir.const(k, "int32")), (k, 0)) for k in range(3))
    )
    assert_structural_equal(out.body, expected)


def test_copies_get_fresh_inner_loop_vars():
    func, _ = _func(4, inner=True)
    out = unroll_loop(func)
    assert len(out.body.seq) == 4
    assert len({id(s.loop_var) for s in out.body.seq}) == 4
    verify_well_formed(out, flat=False)
    got = run_prim_func(out, np.zeros((4, 3), "float32"))[0]
    np.testing.assert_array_equal(got, np.add.outer(np.arange(4), np.arange(3)))


def test_long_or_serial_loops_are_left_alone():
    long_func, _ = _func(MAX_UNROLL_EXTENT + 1)
    out = unroll_loop(long_func)
    assert out.body.kind == ForKind.UNROLLED  # codegen adds LLVM unroll metadata
    serial, _ = _func(3, ForKind.SERIAL)
    assert unroll_loop(serial) is serial


def test_pass_object():
    func, _ = _func(2)
    assert isinstance(UnrollLoop()(func).body, SeqStmt)


def test_unrolling_past_the_statement_limit_is_a_build_error_saying_how_to_split():
    import minitvm as tvm
    from minitvm import te
    from minitvm.error import BuildError

    A = te.placeholder((65536,), name="A")
    B = te.compute((65536,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    with pytest.raises(
        BuildError, match=r"loop 'i' unrolls to 65536 statements.*limit 4096.*split it and unroll "
        r"only the inner part"
    ):
        tvm.build(s, [A, B], "llvm")


def test_unrolled_nest_counts_the_short_inner_loops_llvm_unrolls():
    from minitvm import te
    from minitvm.error import BuildError
    from minitvm.tir.transform.pipeline import lower_primfunc
    import minitvm as tvm

    A = te.placeholder((37, 64), name="A")
    B = te.placeholder((64, 45), name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((37, 45), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].unroll(C.op.axis[0])
    s[C].unroll(C.op.axis[1])
    with pytest.raises(BuildError, match=r"loop 'i' unrolls to 108225 statements"):
        lower_primfunc(tvm.lower(s, [A, B, C])["main"])


def test_unroll_within_the_limit_still_matches_numpy():
    import minitvm as tvm
    from minitvm import te

    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    f = tvm.build(s, [A, B], "llvm")
    a = np.arange(256, dtype="float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)
