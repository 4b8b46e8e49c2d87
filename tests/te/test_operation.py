"""te.compute, reductions, axes and the nested-reduction check."""

import numpy as np
import pytest
from minitvm.testing import run_prim_func

from minitvm import te, tir
from minitvm.error import TEError
from minitvm.te import Reduce


def _run(args, *arrays):
    run_prim_func(te.create_prim_func(args), *arrays)


# ----------------------------------------------------------------------------- construction


def test_compute_axes_named_after_lambda_params():
    A = te.placeholder((3, 4), name="A")
    B = te.compute((3, 4), lambda row, col: A[row, col] * 2.0, name="B", tag="elemwise")
    assert [iv.var.name for iv in B.op.axis] == ["row", "col"]
    assert all(iv.iter_type == tir.IterVar.DataPar for iv in B.op.axis)
    assert [int(iv.dom.extent) for iv in B.op.axis] == [3, 4]
    assert B.op.name == "B" and B.op.tag == "elemwise" and B.op.reduce_axis == ()
    assert isinstance(B.op, te.ComputeOp) and len(B.op.body) == 1
    assert B.op.input_tensors == [A]


def test_variadic_lambda_gets_one_index_per_dim():
    A = te.placeholder((2, 3, 4), name="A")
    B = te.compute(A.shape, lambda *i: A(*i) + 1.0, name="B")
    assert [iv.var.name for iv in B.op.axis] == ["i0", "i1", "i2"]
    a = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")
    b = np.zeros_like(a)
    _run([A, B], a, b)
    np.testing.assert_allclose(b, a + 1)


def test_input_tensors_in_first_use_order_without_repeats():
    A = te.placeholder((3,), name="A")
    B = te.placeholder((3,), name="B")
    C = te.compute((3,), lambda i: B[i] * A[i] + B[i], name="C")
    assert C.op.input_tensors == [B, A]


def test_compute_defaults_and_attrs():
    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i], attrs={"layout": "N"})
    assert B.op.name == "compute" and B.op.tag == "" and B.op.attrs["layout"] == "N"


def test_constant_body_and_zero_dim_compute():
    A = te.placeholder((4,), name="A")
    Z = te.compute((4,), lambda i: 0, name="Z")
    assert Z.dtype == "int32"
    S = te.compute((), lambda: A[2] * 3.0, name="S")
    assert S.ndim == 0
    s = np.zeros((), "float32")
    _run([A, S], np.arange(4, dtype="float32"), s)
    assert float(s) == 6.0


def test_multi_output_compute_returns_a_list():
    A = te.placeholder((3,), name="A")
    lo, hi = te.compute((3,), lambda i: (A[i] - 1.0, (A[i] + 1.0).astype("float64")), name="pm")
    assert lo.op is hi.op and lo.value_index == 0 and hi.value_index == 1
    assert lo.dtype == "float32" and hi.dtype == "float64"
    assert lo.name == "pm.v0" and lo.op.num_outputs == 2
    a = np.arange(3, dtype="float32")
    x, y = np.zeros(3, "float32"), np.zeros(3, "float64")
    _run([A, lo, hi], a, x, y)
    np.testing.assert_array_equal(x, a - 1)
    np.testing.assert_array_equal(y, a + 1)


def test_var_size_var_thread_axis():
    n = te.var("n")
    assert isinstance(n, tir.Var) and n.dtype == "int32" and n.name == "n"
    m = te.size_var("m", "int64")
    assert isinstance(m, tir.SizeVar) and m.dtype == "int64"
    assert te.var("x", "float32").dtype == "float32"
    tx = te.thread_axis("threadIdx.x")
    assert tx.iter_type == tir.IterVar.ThreadIndex and tx.thread_tag == "threadIdx.x"
    assert tx.var.name == "threadIdx.x" and tx.dom is None
    bx = te.thread_axis((0, 8), "blockIdx.x")
    assert int(bx.dom.extent) == 8 and bx.thread_tag == "blockIdx.x"


def test_math_functions_are_reexported():
    A = te.placeholder((3,), name="A")
    ops = [te.exp, te.log, te.sqrt, te.tanh, te.sigmoid, te.abs, te.floor, te.ceil, te.erf]
    for fn in ops:
        assert isinstance(fn(A[0]), tir.PrimExpr)
    assert isinstance(te.power(A[0], 2.0), tir.PrimExpr)
    assert isinstance(te.if_then_else(A[0] > 0.0, A[0], 0.0), tir.PrimExpr)
    assert isinstance(te.select(A[0] > 0.0, A[0], 0.0), tir.Select)
    assert isinstance(te.all(A[0] > 0.0, A[1] > 0.0), tir.PrimExpr)
    assert te.const(1, "float32").dtype == "float32"


def test_elementwise_math_numerics():
    A = te.placeholder((5,), name="A")
    B = te.compute(
        (5,),
        lambda i: (
            te.exp(A[i])
            + te.sqrt(te.abs(A[i]))
            - te.tanh(A[i]) * te.sigmoid(A[i])
            + te.if_then_else(A[i] > 0.0, te.log(A[i] + 1.0), te.power(A[i], 2.0))
        ),
        name="B",
    )
    a = np.linspace(-2, 2, 5).astype("float32")
    b = np.zeros(5, "float32")
    _run([A, B], a, b)
    sig = 1 / (1 + np.exp(-a))
    want = np.exp(a) + np.sqrt(np.abs(a)) - np.tanh(a) * sig
    want += np.where(a > 0, np.log(np.maximum(a, 0) + 1), a**2)
    np.testing.assert_allclose(b, want, rtol=1e-5)


# ----------------------------------------------------------------------------- reductions


def test_reduce_axis_forms():
    k = te.reduce_axis((1, 5), name="k")
    assert k.iter_type == tir.IterVar.CommReduce and k.var.name == "k"
    assert int(k.dom.min) == 1 and int(k.dom.extent) == 4
    r = te.reduce_axis(tir.Range.from_min_extent(0, 3), name="r")
    assert int(r.dom.extent) == 3
    with pytest.raises(TEError, match="reduce_axis 'q': dom must be"):
        te.reduce_axis(7, name="q")


def test_sum_builds_top_level_reduce():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((3,), lambda i: te.sum(A[i, k], axis=k), name="B")
    assert isinstance(B.op.body[0], Reduce)
    assert B.op.reduce_axis == (k,)
    assert B.op.input_tensors == [A]


def test_reduction_over_nonzero_min_axis():
    A = te.placeholder((6,), name="A")
    k = te.reduce_axis((2, 5), name="k")
    B = te.compute((1,), lambda _: te.sum(A[k], axis=k), name="B")
    b = np.zeros(1, "float32")
    _run([A, B], np.arange(6, dtype="float32"), b)
    assert b[0] == 2 + 3 + 4


def test_where_skips_elements_and_init_starts_elsewhere():
    A = te.placeholder((3, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    pos = te.compute((3,), lambda i: te.sum(A[i, k], axis=k, where=A[i, k] > 0.0), name="pos")
    k2 = te.reduce_axis((0, 5), name="k")
    off = te.compute((3,), lambda i: te.sum(A[i, k2], axis=k2, init=10.0), name="off")
    a = np.random.default_rng(1).standard_normal((3, 5)).astype("float32")
    p, o = np.zeros(3, "float32"), np.zeros(3, "float32")
    _run([A, pos, off], a, p, o)
    np.testing.assert_allclose(p, np.where(a > 0, a, 0).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(o, a.sum(axis=1) + 10, rtol=1e-6)


def test_max_min_of_two_expressions_is_elementwise():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: te.max(A[i], 0.0) + te.min(A[i], 0.0), name="B")
    a = np.array([-1, 2, -3, 4], "float32")
    b = np.zeros(4, "float32")
    _run([A, B], a, b)
    np.testing.assert_array_equal(b, a)


def test_comm_reducer_product():
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: tir.const(1, t), name="prod")
    A = te.placeholder((2, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((2,), lambda i: prod(A[i, k], axis=k), name="B")
    assert B.op.body[0].combiner.name == "prod"
    a = np.arange(1, 9, dtype="float32").reshape(2, 4)
    b = np.zeros(2, "float32")
    _run([A, B], a, b)
    np.testing.assert_array_equal(b, a.prod(axis=1))


def test_argmax_tuple_reducer():
    def fcombine(x, y):
        take_x = x[1] >= y[1]
        return te.select(take_x, x[0], y[0]), te.select(take_x, x[1], y[1])

    def fidentity(t0, t1):
        return tir.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    A = te.placeholder((3, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    idx, val = te.compute((3,), lambda i: argmax((k, A[i, k]), axis=k), name="am")
    a = np.random.default_rng(2).standard_normal((3, 5)).astype("float32")
    got_i, got_v = np.zeros(3, "int32"), np.zeros(3, "float32")
    _run([A, idx, val], a, got_i, got_v)
    np.testing.assert_array_equal(got_i, a.argmax(axis=1))
    np.testing.assert_array_equal(got_v, a.max(axis=1))


def test_sum_axis_must_be_a_reduce_axis():
    A = te.placeholder((3, 4), name="A")
    with pytest.raises(TEError, match="te.sum: axis .* is not a reduction axis"):
        te.compute((3,), lambda i: te.sum(A[i, 0], axis=[te.thread_axis("threadIdx.x")]))
    with pytest.raises(TEError, match=r"te.sum\(...\) needs axis="):
        te.sum(A[0, 0])


def test_same_reduce_axis_in_two_computes_is_fine():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    S = te.compute((3,), lambda i: te.sum(A[i, k], axis=k), name="S")
    M = te.compute((3,), lambda i: te.max(A[i, k], axis=k), name="M")
    a = np.random.default_rng(3).standard_normal((3, 4)).astype("float32")
    s, m = np.zeros(3, "float32"), np.zeros(3, "float32")
    _run([A, S, M], a, s, m)
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(m, a.max(axis=1))


# ----------------------------------------------------------------------------- errors


def test_wrong_fcompute_arity_names_the_compute():
    A = te.placeholder((3, 4), name="A")
    with pytest.raises(
        TEError,
        match=r"compute 'C': fcompute takes 1 index argument\(s\) but "
        r"the shape has 2 dimension\(s\); write `lambda i, j",
    ):
        te.compute((3, 4), lambda i: A[i, 0], name="C")
    with pytest.raises(TEError, match="compute 'D': fcompute takes 0 index"):
        te.compute((1,), lambda: A[0, 0], name="D")


@pytest.mark.parametrize("bad", [(3, 4.5), ("n",), (te.const(2.0, "float32"),)])
def test_compute_rejects_non_integer_shape(bad):
    with pytest.raises(TEError, match="compute 'C': shape entry .* must be ints or integer"):
        te.compute(bad, lambda *i: 0.0, name="C")


def test_returning_a_tensor_is_an_error():
    A = te.placeholder((3,), name="A")
    with pytest.raises(TEError, match="compute 'B': fcompute returned the tensor 'A' itself"):
        te.compute((3,), lambda i: A, name="B")


NESTED = "is nested inside another expression; a reduction must be the whole body of a compute"


def test_softmax_with_inline_sum_is_rejected():
    n = te.var("n")
    x = te.placeholder((n, 10), name="x")
    k = te.reduce_axis((0, 10), name="k")
    with pytest.raises(TEError) as info:
        te.compute(
            (n, 10), lambda i, j: te.exp(x[i, j]) / te.sum(te.exp(x[i, k]), axis=k), name="softmax"
        )
    msg = str(info.value)
    assert msg.startswith("compute 'softmax': te.sum over axis 'k' " + NESTED)
    assert (
        "Put the reduction in its own tensor (e.g. S = te.compute((n, 10), lambda i, j: "
        "te.sum(..., axis=k))) and use S[i, j] here." in msg
    )


@pytest.mark.parametrize(
    "body",
    [
        lambda A, k: lambda i: te.sum(A[i, k], axis=k) + 1.0,
        lambda A, k: lambda i: -te.sum(A[i, k], axis=k),  # the dlsys loss written as -sum(...)
        lambda A, k: lambda i: te.log(te.sum(A[i, k], axis=k)),
        lambda A, k: lambda i: te.max(te.sum(A[i, k], axis=k), axis=te.reduce_axis((0, 2))),
        lambda A, k: lambda i: te.sum(A[i, k], axis=k, where=te.sum(A[i, k], axis=k) > 0.0),
        lambda A, k: lambda i: te.sum(A[i, k], axis=k).astype("float64"),
    ],
    ids=["plus_one", "negated", "log_of_sum", "sum_in_max", "sum_in_where", "cast"],
)
def test_nested_reductions_are_rejected(body):
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(TEError, match=f"compute 'B': te.(sum|max) over axis '.*' {NESTED}"):
        te.compute((3,), body(A, k), name="B")


def test_mixed_reduce_and_plain_outputs_are_rejected():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(TEError, match="compute 'B': some outputs are reductions and some are not"):
        te.compute((3,), lambda i: (te.sum(A[i, k], axis=k), A[i, 0]), name="B")


def test_reduce_axis_used_outside_its_reduction():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    S = te.compute((3,), lambda i: te.sum(A[i, k], axis=k), name="S")
    B = te.compute((3,), lambda i: A[i, k] + S[i], name="B")
    with pytest.raises(TEError, match="compute 'B' uses reduce axis 'k' outside its reduction"):
        te.create_prim_func([A, B])
    k2 = te.reduce_axis((0, 4), name="k2")
    C = te.compute((3,), lambda i: A[i, k2], name="C")
    with pytest.raises(
        TEError,
        match="compute 'C' uses the variable 'k2', which is defined "
        "nowhere.*te.reduce_axis, use it inside te.sum",
    ):
        te.create_prim_func([A, C])


def test_reducing_a_whole_tensor_says_to_index_it():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(
        TEError, match=r"te.sum: got the tensor 'A'; .* te.sum\(A\[i, k\], axis=k\)"
    ):
        te.sum(A, axis=k)


def test_reducer_argument_errors():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(TEError, match=r"te.sum: init= has 2 value\(s\) for 1 reduced value"):
        te.sum(A[0, k], axis=k, init=(0.0, 1.0))
    with pytest.raises(TEError, match="te.sum: where= must be a boolean condition"):
        te.sum(A[0, k], axis=k, where=A[0, k])
    with pytest.raises(TEError, match="te.sum: the same reduce axis appears twice"):
        te.sum(A[0, k], axis=[k, k])
    bad = te.comm_reducer(lambda x, y: (x, y), lambda t: te.const(0, t), name="bad")
    with pytest.raises(TEError, match="reducer 'bad': fcombine/fidentity must return 1 values"):
        bad(A[0, k], axis=k)


def test_reduce_axis_arithmetic_in_indices():
    A = te.placeholder((9,), name="A")
    k = te.reduce_axis((0, 3), name="k")
    B = te.compute((3,), lambda i: te.sum(A[k * 3 + i] - A[2 * k] + (k - 1) + (1 + k), axis=k))
    a = np.arange(9, dtype="float32") ** 2
    b = np.zeros(3, "float32")
    _run([A, B], a, b)
    ks = np.arange(3)
    want = [sum(a[ks * 3 + i] - a[2 * ks] + 2 * ks) for i in range(3)]
    np.testing.assert_allclose(b, want)
