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
