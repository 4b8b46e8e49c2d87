"""autotvm.task.compute_flop: TVM's operation count of a TE schedule, against hand counts."""

import pytest

import minitvm as tvm
from minitvm import autotvm, te
from minitvm.autotvm.task.task import compute_flop
from minitvm.error import TuningError


def _matmul(n, l, m, dtype="float32", acc="float32"):
    A = te.placeholder((n, l), name="A", dtype=dtype)
    B = te.placeholder((l, m), name="B", dtype=dtype)
    k = te.reduce_axis((0, l), name="k")
    return te.compute(
        (n, m), lambda i, j: te.sum(A[i, k].astype(acc) * B[k, j].astype(acc), axis=k), name="C"
    )


@pytest.mark.parametrize("dtype,acc", [("float32", "float32"), ("int8", "int32")])
def test_matmul_is_two_n_l_m(dtype, acc):
    C = _matmul(12, 7, 5, dtype, acc)  # a multiply and an add per reduced point; casts free
    assert compute_flop(te.create_schedule(C.op)) == 2 * 12 * 7 * 5


def test_conv_pool_and_elementwise_hand_counts():
    D = te.placeholder((2, 3, 9, 9), name="D")
    K = te.placeholder((4, 3, 3, 3), name="K")
    ci, kh, kw = (te.reduce_axis((0, e), name=n) for e, n in ((3, "ci"), (3, "kh"), (3, "kw")))
    conv = te.compute(
        (2, 4, 7, 7),
        lambda n, co, h, w: te.sum(D[n, ci, h + kh, w + kw] * K[co, ci, kh, kw], axis=[ci, kh, kw]),
        name="conv",
    )
    assert compute_flop(te.create_schedule(conv.op)) == 2 * 2 * 4 * 7 * 7 * 3 * 3 * 3
    # max pooling: one max per window point; the index additions h + kh are not counted
    rh, rw = te.reduce_axis((0, 2), name="rh"), te.reduce_axis((0, 2), name="rw")
    pool = te.compute(
        (2, 3, 8, 8), lambda n, c, h, w: te.max(D[n, c, h + rh, w + rw], axis=[rh, rw])
    )
    assert compute_flop(te.create_schedule(pool.op)) == 2 * 3 * 8 * 8 * 2 * 2
    # relu(x * 2 + 1) as a select: the comparison plus the costlier side (2 operations)
    A = te.placeholder((10, 6), name="A")
    y = te.compute((10, 6), lambda i, j: tvm.tir.Select(A[i, j] > 0.0, A[i, j] * 2.0 + 1.0, 0.0))
    assert compute_flop(te.create_schedule(y.op)) == 10 * 6 * (1 + 2)


def test_a_shared_producer_is_counted_once():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 3.0, name="B")  # 8 operations
    C = te.compute((8,), lambda i: B[i] + B[7 - i], name="C")  # 8 more, reading B twice
    D = te.compute((8,), lambda i: B[i] - C[i], name="D")  # 8 more; B feeds C and D
    assert compute_flop(te.create_schedule(D.op)) == 24


def test_uncountable_programs_raise_runtime_errors_that_say_what_to_do():
    A = te.placeholder((16,), name="A")
    copy = te.compute((16,), lambda i: A[i], name="copy")
    with pytest.raises(RuntimeError, match="no operation to count.*cfg.add_flop"):
        compute_flop(te.create_schedule(copy.op))
    n = te.var("n")
    V = te.placeholder((n,), name="V")
    sym = te.compute((n,), lambda i: V[i] + 1.0, name="sym")
    with pytest.raises(TuningError, match="'sym' has axis .* not a constant"):
        compute_flop(te.create_schedule(sym.op))
    ext = te.extern(
        (16,), [A], lambda ins, outs: tvm.tir.call_packed("f", ins[0], outs[0]), name="ext"
    )
    with pytest.raises(TuningError, match="'ext' is a ExternOp; only te.compute"):
        compute_flop(te.create_schedule(ext.op))
    with pytest.raises(TuningError, match="needs a te.Schedule"):
        compute_flop(tvm.tir.Schedule(te.create_prim_func([A, copy])))


@autotvm.template("test/compute_flop/axpy")
def axpy(n, declared):
    X = te.placeholder((n,), name="X")
    Y = te.compute((n,), lambda i: X[i] * 2.0 + 1.0, name="Y")
    s = te.create_schedule(Y.op)
    cfg = autotvm.get_config()
    cfg.define_split("t", Y.op.axis[0], num_outputs=2)
    cfg["t"].apply(s, Y, Y.op.axis[0])
    if declared:
        cfg.add_flop(declared)
    return s, [X, Y]


def test_tasks_count_with_compute_flop_unless_the_template_declares_it():
    assert autotvm.task.create("test/compute_flop/axpy", (64, 0), "llvm").flop == 128
    assert autotvm.task.create("test/compute_flop/axpy", (64, 5), "llvm").flop == 5
