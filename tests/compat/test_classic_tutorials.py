"""Names the classic TE tutorials call (tensor_expr_get_started, opt_gemm, intro_topi,
schedule_primitives), written in our own words and checked against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, topi
from minitvm.error import TEError
from minitvm.tir.functor import substitute


def _run(outs, args, *arrays):
    """Build a default schedule of `outs` and run it on numpy `arrays` (inputs, then outputs)."""
    s = te.create_schedule([o.op for o in outs])
    f = tvm.build(s, args)
    nds = [tvm.nd.array(a) for a in arrays]
    f(*nds)
    return [n.numpy() for n in nds]


# --- 1. float shape entries --------------------------------------------------------------
def test_integral_float_shape_entries_become_ints():
    # Python 3's `/` makes `rows / block` a float; TVM accepts it when it is whole.
    rows, cols, block = 16, 6, 4
    A = te.placeholder((rows, cols), name="A")
    packed = te.compute(
        (rows / block, cols, block), lambda i, k, j: A[i * block + j, k], name="packed"
    )
    assert [int(d) for d in packed.shape] == [4, 6, 4]
    assert all(isinstance(d.value, int) for d in packed.shape)
    a = np.random.rand(rows, cols).astype("float32")
    _, out = _run([packed], [A, packed], a, np.zeros((4, 6, 4), "float32"))
    np.testing.assert_array_equal(out, a.reshape(4, 4, 6).transpose(0, 2, 1))


def test_numpy_integer_shape_entries_become_ints():
    assert [int(d) for d in te.placeholder((np.int64(3), 2.0), name="A").shape] == [3, 2]


def test_fractional_float_shape_entry_is_a_clear_error():
    A = te.placeholder((10,), name="A")
    with pytest.raises(
        TEError,
        match=r"compute 'half': shape entry 0 is 3.3333333333333335, a "
        r"float that is not a whole number.*use // for integer division",
    ):
        te.compute((10 / 3,), lambda i: A[i], name="half")


# --- 2. whole-tensor arithmetic, argmax/argmin, elemwise_sum --------------------------------
OPS = [
    (lambda x, y: x + y, np.add),
    (lambda x, y: x - y, np.subtract),
    (lambda x, y: x * y, np.multiply),
    (lambda x, y: x / y, np.divide),
]


@pytest.mark.parametrize("op,ref", OPS)
def test_tensor_operators_broadcast_like_numpy(op, ref):
    A = te.placeholder((3, 1, 5), name="A")
    B = te.placeholder((4, 1), name="B")
    C = op(A, B)
    assert [int(d) for d in C.shape] == [3, 4, 5] and C.op.tag == "broadcast"
    a = np.random.rand(3, 1, 5).astype("float32") + 0.5
    b = np.random.rand(4, 1).astype("float32") + 0.5
    *_, c = _run([C], [A, B, C], a, b, np.zeros((3, 4, 5), "float32"))
    np.testing.assert_allclose(c, ref(a, b), rtol=1e-6)


@pytest.mark.parametrize("op,ref", OPS)
def test_tensor_operators_with_scalars_on_either_side(op, ref):
    A = te.placeholder((6,), name="A")
    left, right = op(A, 2), op(3.0, A)
    a = np.arange(1, 7, dtype="float32")
    *_, l, r = _run(
        [left, right], [A, left, right], a, np.zeros(6, "float32"), np.zeros(6, "float32")
    )
    np.testing.assert_allclose(l, ref(a, np.float32(2)), rtol=1e-6)
    np.testing.assert_allclose(r, ref(np.float32(3), a), rtol=1e-6)


def test_tensor_operators_chain_into_one_program():
    # intro_topi's shape: (a + b) * a - b / 2, scheduled and built as one function.
    A = te.placeholder((4, 3), name="A")
    B = te.placeholder((3,), name="B")
    D = (A + B) * A - B / 2
    rng = np.random.default_rng(0)
    a, b = rng.random((4, 3), "float32"), rng.random(3, "float32")
    *_, d = _run([D], [A, B, D], a, b, np.zeros((4, 3), "float32"))
    # The difference can cancel to near zero, where a fused multiply-add and
    # numpy's separate rounding differ by an ulp of the operands, not of the
    # result: compare with an absolute floor at the operands' scale.
    np.testing.assert_allclose(d, (a + b) * a - b / 2, rtol=1e-5, atol=1e-6)


def test_mismatched_broadcast_is_a_clear_error():
    A, B = te.placeholder((3, 4), name="A"), te.placeholder((5,), name="B")
    with pytest.raises(TEError, match=r"topi.add: shapes .* do not broadcast at dim 1"):
        A + B


def test_other_whole_tensor_arithmetic_still_says_to_index():
    A = te.placeholder((3,), name="A")
    with pytest.raises(TEError, match="tensor 'A' is used in arithmetic as a whole"):
        A % 2


def test_elemwise_sum_matches_numpy():
    xs = [te.placeholder((2, 3), name=f"X{n}") for n in range(3)]
    S = topi.elemwise_sum(xs)
    arrays = [np.random.rand(2, 3).astype("float32") for _ in xs]
    *_, s = _run([S], [*xs, S], *arrays, np.zeros((2, 3), "float32"))
    np.testing.assert_allclose(s, sum(arrays), rtol=1e-6)


@pytest.mark.parametrize("fn,ref", [(topi.argmax, np.argmax), (topi.argmin, np.argmin)])
@pytest.mark.parametrize("axis", [0, 1, 2, None])
def test_argmax_argmin_match_numpy_with_ties_and_nan(fn, ref, axis):
    A = te.placeholder((3, 4, 5), name="A")
    B = fn(A, axis=axis)
    assert B.dtype == "int32"
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, (3, 4, 5)).astype("float32")  # many ties: the first one wins
    a[1, 2, 3] = a[2, 0, 1] = np.nan  # numpy returns the first NaN
    expect = ref(a, axis=axis)
    *_, out = _run([B], [A, B], a, np.zeros(np.shape(expect), "int32"))
    np.testing.assert_array_equal(out, expect)


def test_argmax_select_last_index_keepdims_and_ints():
    A = te.placeholder((4, 6), "int32", name="A")
    last = topi.argmax(A, axis=1, keepdims=True, select_last_index=True)
    first = topi.argmin(A, axis=0)
    assert [int(d) for d in last.shape] == [4, 1]
    a = np.random.default_rng(1).integers(-2, 2, (4, 6)).astype("int32")
    *_, l, f = _run(
        [last, first], [A, last, first], a, np.zeros((4, 1), "int32"), np.zeros(6, "int32")
    )
    expect_last = 5 - np.argmax(a[:, ::-1], axis=1)
    np.testing.assert_array_equal(l[:, 0], expect_last)
    np.testing.assert_array_equal(f, np.argmin(a, axis=0))


def test_argmax_of_all_negative_infinity_is_index_zero():
    # The reducer's identity is -inf too: its index must lose the tie to a real element.
    A = te.placeholder((2, 3), name="A")
    B = topi.argmax(A, axis=1)
    a = np.full((2, 3), -np.inf, "float32")
    *_, out = _run([B], [A, B], a, np.full(2, 7, "int32"))
    np.testing.assert_array_equal(out, [0, 0])


# --- 3. lowering a schedule: outputs left out, inlined arguments, schedule introspection ---
def _doubled_then_incremented():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    return A, B, C


def test_lower_without_the_output_keeps_the_computation():
    # TVM: the output becomes an internal allocation; the loop nest stays.
    A, _, C = _doubled_then_incremented()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    text = str(tvm.lower(s, [A], simple_mode=True))
    assert "T.evaluate(0)" not in text
    assert "B[i] = A[i] + T.float32(1)" in text
    assert "= B[i_outer * 4 + i_inner] * T.float32(2)" in text
    tvm.build(s, [A])(tvm.nd.array(np.ones(8, "float32")))  # builds and runs


def test_inlined_stage_that_is_an_argument_is_still_written():
    A, B, C = _doubled_then_incremented()
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "C[i] = (A[i] + T.float32(1)) * T.float32(2)" in text  # C reads B's expression
    assert "B[i] = A[i] + T.float32(1)" in text  # and B, an argument, holds its values
    a = np.arange(8, dtype="float32")
    _, b, c = [x.numpy() for x in _build_run(s, [A, B, C], a)]
    np.testing.assert_array_equal(b, a + 1)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def _build_run(s, args, a):
    nds = [tvm.nd.array(a)] + [tvm.nd.empty((8,)) for _ in args[1:]]
    tvm.build(s, args)(*nds)
    return nds


def test_inlined_stage_not_in_the_arguments_is_only_inlined():
    A, B, C = _doubled_then_incremented()
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    text = str(tvm.lower(s, [A, C], simple_mode=True))
    assert "B[" not in text and "B = " not in text
    assert "C[i] = (A[i] + T.float32(1)) * T.float32(2)" in text
    a = np.arange(8, dtype="float32")
    _, c = [x.numpy() for x in _build_run(s, [A, C], a)]
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_normalize_returns_the_schedule_and_changes_nothing():
    A, _, C = _doubled_then_incremented()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=2)
    before = str(tvm.lower(s, [A, C], simple_mode=True))
    assert s.normalize() is s
    assert str(tvm.lower(s, [A, C], simple_mode=True)) == before


def test_stage_relations_and_infer_bound():
    n = te.var("n")
    A = te.placeholder((10, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((10,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=3)
    ko, ki = s[B].split(k, nparts=4)
    fused = s[B].fuse(xo, xi)
    split_i, split_k, fuse = s[B].relations
    assert isinstance(split_i, te.schedule.Split) and split_i.parent is B.op.axis[0]
    assert (split_i.outer, split_i.inner, split_i.factor) == (xo, xi, 3)
    assert (split_k.outer, split_k.inner, split_k.nparts) == (ko, ki, 4)
    assert isinstance(fuse, te.schedule.Fuse) and (fuse.outer, fuse.inner, fuse.fused) == (
        xo,
        xi,
        fused,
    )
    bounds = te.schedule.InferBound(s)
    extents = {iv.var.name: bounds[iv].extent for iv in (xo, xi, ko, fused)}
    assert {name: int(e) for name, e in extents.items()} == {
        "i.outer": 4,
        "i.inner": 3,
        "k.outer": 4,
        "i.outer.i.inner.fused": 12,
    }
    ki_extent = bounds[ki].extent  # ceil(n / 4), symbolic
    for value in (1, 4, 5, 9):
        got = tvm.arith.Analyzer().simplify(substitute(ki_extent, {n: tvm.tir.const(value)}))
        assert int(got) == -(-value // 4)


def test_infer_bound_of_a_stage_computed_at_a_loop_is_what_its_consumer_reads():
    _, B, C = _doubled_then_incremented()
    s = te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    bounds = te.schedule.InferBound(s)
    # per iteration of C's outer loop, C reads 4 elements of B: B's loop covers just those
    assert int(bounds[B.op.axis[0]].extent) == 4
    assert int(bounds[xo].extent) == 2
