"""Loop partitioning keeps `likely` guards of non-divisible splits out of the hot loop."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.tir.transform import loop_partition
from minitvm.tir.transform.pipeline import lower_primfunc


def _vadd_schedule(n, factor):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=factor)
    s[C].vectorize(xi)
    return s, [A, B, C]


def _guards_under(stmt):
    found = []

    def visit(node):
        if isinstance(node, tir.IfThenElse):
            found.append(node)

    tir.post_order_visit(stmt, visit)
    return found


def test_split_tail_guard_leaves_the_main_loop_and_main_loop_is_vector_code():
    s, args = _vadd_schedule(te.var("n"), 16)
    func = lower_primfunc(s.build_prim_func(args, "vadd"))
    main, tail = func.body.seq
    assert not _guards_under(main), main.script()
    assert any(isinstance(n, tir.Ramp) for n in _collect(main))
    assert len(_guards_under(tail)) == 1


def _collect(stmt):
    out = []
    tir.post_order_visit(stmt, out.append)
    return out


@pytest.mark.parametrize("size", [1, 7, 16, 17, 31, 64, 1000])
def test_partitioned_symbolic_split_matches_numpy(size):
    s, args = _vadd_schedule(te.var("n"), 16)
    f = tvm.build(s, args, "llvm", name="vadd")
    rng = np.random.default_rng(size)
    a, b = rng.random(size, dtype=np.float32), rng.random(size, dtype=np.float32)
    c = np.zeros(size, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a + b)


def test_static_non_divisible_split_partitions_into_main_and_tail():
    s, args = _vadd_schedule(100, 16)
    func = lower_primfunc(s.build_prim_func(args, "vadd"))
    main, tail = func.body.seq
    assert int(main.extent) == 6 and not _guards_under(main)
    # the one tail iteration is folded away by simplify: only the last 4 lanes stay guarded
    assert len(_guards_under(tail)) == 1 and tail.kind == tir.ForKind.VECTORIZED


def test_two_dimensional_guards_are_both_partitioned():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    io, jo, ii, ji = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 8)
    s[B].vectorize(ji)
    f = tvm.build(s, [A, B], "llvm", name="scale")
    for shape in [(1, 1), (5, 9), (8, 16), (13, 30)]:
        a = np.random.default_rng(0).random(shape, dtype=np.float32)
        b = np.zeros(shape, np.float32)
        f(a, b)
        np.testing.assert_allclose(b, a * 2)


def test_guard_not_affine_in_loop_is_left_alone():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.if_then_else(i * i < n, A[i], 0.0), name="B")
    s = te.create_schedule(B.op)
    func = s.build_prim_func([A, B], "sq")
    assert loop_partition(func) is func


def test_function_without_likely_guards_is_returned_without_searching(monkeypatch):
    import importlib

    lp = importlib.import_module("minitvm.tir.transform.loop_partition")

    def refuse(self, loop):
        raise AssertionError("searched a loop of a function that has no likely guard")

    monkeypatch.setattr(lp._Partition, "partition", refuse)
    s, args = _vadd_schedule(64, 16)  # divisible: no guard left
    func = lower_primfunc(s.build_prim_func(args, "vadd"))
    assert lp.loop_partition(func) is func
    guarded, gargs = _vadd_schedule(60, 16)
    with pytest.raises(AssertionError, match="no likely guard"):  # a guard is still searched
        lower_primfunc(guarded.build_prim_func(gargs, "vadd"))
