"""Relay's gather, arange, sparse_reshape, take modes, image.resize1d/2d and build_config,
built through relay.build and checked against numpy / torch / TensorFlow's documented
sparse_reshape."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.topi.testing
from minitvm import relay, topi
from minitvm.contrib import graph_executor
from minitvm.error import ArgumentError, MiniTVMError, OpNotImplemented

RNG = np.random.default_rng(21)


def _run(outs, params, inputs):
    body = outs if isinstance(outs, relay.Expr) else relay.Tuple(list(outs))
    func = relay.Function(params, body)
    with relay.build_config(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(func), "llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for p, value in zip(params, inputs):
        m.set_input(p.name_hint, value)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def test_build_config_is_pass_context():
    assert relay.build_config is tvm.transform.PassContext
    with relay.build_config(opt_level=1, required_pass=["FoldConstant"], disabled_pass=["X"]):
        ctx = tvm.transform.PassContext.current()
        assert ctx.opt_level == 1
        assert "FoldConstant" in ctx.required_pass and "X" in ctx.disabled_pass


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_matches_take_along_axis_with_negative_indices(axis):
    data = RNG.standard_normal((3, 4, 5)).astype("float32")
    ishape = list(data.shape)
    ishape[axis] = 6
    dim = data.shape[axis]
    idx = RNG.integers(-dim, dim, size=ishape).astype("int64")
    x = relay.var("x", shape=data.shape)
    i = relay.var("i", shape=idx.shape, dtype="int64")
    (got,) = _run(relay.gather(x, axis, i), [x, i], [data, idx])
    np.testing.assert_array_equal(got, np.take_along_axis(data, idx % dim, axis))


def test_gather_matches_torch_gather():
    import torch

    data = RNG.standard_normal((4, 3)).astype("float32")
    idx = RNG.integers(0, 4, size=(2, 3)).astype("int32")
    x = relay.var("x", shape=data.shape)
    i = relay.var("i", shape=idx.shape, dtype="int32")
    (got,) = _run(relay.gather(x, 0, i), [x, i], [data, idx])
    expected = torch.gather(torch.from_numpy(data), 0, torch.from_numpy(idx).long()).numpy()
    np.testing.assert_array_equal(got, expected)


def test_gather_index_outside_the_axis_is_an_error_not_a_wrong_value():
    x = relay.var("x", shape=(3, 4))
    i = relay.var("i", shape=(3, 4), dtype="int64")
    idx = np.zeros((3, 4), "int64")
    idx[1, 2] = 3
    with pytest.raises(MiniTVMError, match="index out of bounds"):
        _run(relay.gather(x, 0, i), [x, i], [np.ones((3, 4), "float32"), idx])


def test_gather_rank_mismatch_is_named():
    x = relay.var("x", shape=(3, 4))
    i = relay.var("i", shape=(3,), dtype="int64")
    with pytest.raises(MiniTVMError, match="same rank"):
        _run(relay.gather(x, 0, i), [x, i], [np.ones((3, 4), "float32"), np.zeros(3, "int64")])


@pytest.mark.parametrize(
    "args,kw,expected",
    [
        ((relay.const(1.0), relay.const(9.0), relay.const(2.0)), {}, np.arange(1.0, 9.0, 2.0)),
        ((relay.const(5),), {"dtype": "int32"}, np.arange(5, dtype="int32")),
        ((10, 0, -3), {"dtype": "int64"}, np.arange(10, 0, -3)),
        ((0.0, 1.0, 0.1), {}, np.arange(0.0, 1.0, 0.1, dtype="float64").astype("float32")),
        ((3, 3), {}, np.arange(3, 3, dtype="float32")),
    ],
)
def test_arange_matches_numpy(args, kw, expected):
    x = relay.var("x", shape=(1,))
    (got,) = _run(relay.Tuple([relay.arange(*args, **kw), x]), [x], [np.zeros(1, "float32")])[:1]
    assert got.dtype == np.dtype(kw.get("dtype", "float32"))
    np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=1e-6)


def test_arange_refuses_non_constant_bounds_and_zero_step():
    with pytest.raises(ArgumentError, match="stop must be a number"):
        relay.arange(0, relay.var("n", shape=()))
    with pytest.raises(ArgumentError, match="step must not be 0"):
        relay.arange(0, 5, 0)


def _tf_sparse_reshape(indices, prev, new):
    """TensorFlow's documented semantics: ravel each index in prev, unravel in the new shape."""
    new = list(new)
    if -1 in new:
        new[new.index(-1)] = int(np.prod(prev)) // -int(np.prod(new))
    flat = np.ravel_multi_index(tuple(indices.T), prev)
    return np.stack(np.unravel_index(flat, new), 1), np.asarray(new)


@pytest.mark.parametrize(
    "prev,new",
    [((2, 3, 6), (9, -1)), ((2, 3, 6), (3, 2, 6)), ((4, 6), (-1,)), ((12,), (2, 2, 3))],
)
def test_sparse_reshape_matches_tensorflow_semantics(prev, new):
    total = int(np.prod(prev))
    flat = np.sort(RNG.choice(total, size=5, replace=False))
    indices = np.stack(np.unravel_index(flat, prev), 1).astype("int64")
    si = relay.var("si", shape=indices.shape, dtype="int64")
    ps = relay.var("ps", shape=(len(prev),), dtype="int64")
    ns = relay.var("ns", shape=(len(new),), dtype="int64")
    out = relay.sparse_reshape(si, ps, ns)
    got_idx, got_shape = _run(
        [out[0], out[1]],
        [si, ps, ns],
        [indices, np.asarray(prev, "int64"), np.asarray(new, "int64")],
    )
    exp_idx, exp_shape = _tf_sparse_reshape(indices, prev, new)
    np.testing.assert_array_equal(got_shape, exp_shape)
    np.testing.assert_array_equal(got_idx, exp_idx)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("axis", [None, 1])
def test_take_modes_match_numpy(mode, axis):
    data = RNG.standard_normal((3, 5)).astype("float32")
    idx = np.array([[-7, 0, 4], [5, 11, -1]], "int64")
    x = relay.var("x", shape=data.shape)
    i = relay.var("i", shape=idx.shape, dtype="int64")
    (got,) = _run(relay.take(x, i, axis=axis, mode=mode), [x, i], [data, idx])
    np.testing.assert_array_equal(got, np.take(data, idx, axis=axis, mode=mode))


def test_take_fast_mode_with_an_index_outside_is_an_error():
    x = relay.var("x", shape=(3, 5))
    i = relay.var("i", shape=(2,), dtype="int64")
    data = np.ones((3, 5), "float32")
    (got,) = _run(relay.take(x, i, axis=1, mode="fast"), [x, i], [data, np.array([0, 4])])
    np.testing.assert_array_equal(got, data[:, [0, 4]])
    with pytest.raises(MiniTVMError, match="index out of bounds"):
        _run(relay.take(x, i, axis=1, mode="fast"), [x, i], [data, np.array([0, 5])])


@pytest.mark.parametrize(
    "layout,method,mode,torch_mode,align",
    [
        ("NCHW", "linear", "half_pixel", "bilinear", False),
        ("NHWC", "linear", "align_corners", "bilinear", True),
        ("NCHW", "nearest_neighbor", "asymmetric", "nearest", None),
    ],
)
def test_image_resize2d_matches_torch_and_topi_testing(layout, method, mode, torch_mode, align):
    import torch

    nchw = RNG.standard_normal((1, 3, 5, 6)).astype("float32")
    data = nchw if layout == "NCHW" else nchw.transpose(0, 2, 3, 1)
    x = relay.var("x", shape=data.shape)
    kw = {"rounding_method": "floor"} if method == "nearest_neighbor" else {}
    y = relay.image.resize2d(x, (10, 4), None, layout, method, mode, **kw)
    (got,) = _run(y, [x], [data])
    expected = torch.nn.functional.interpolate(
        torch.from_numpy(nchw), size=(10, 4), mode=torch_mode, align_corners=align
    ).numpy()
    if layout == "NHWC":
        expected = expected.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    ref = topi.testing.resize2d_python(data, (2.0, 4 / 6), layout, method, mode)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["NCW", "NWC"])
@pytest.mark.parametrize(
    "method,mode", [("linear", "half_pixel"), ("nearest_neighbor", "asymmetric")]
)
def test_image_resize1d_matches_topi_testing_reference(layout, method, mode):
    data = RNG.standard_normal((2, 3, 7) if layout == "NCW" else (2, 7, 3)).astype("float32")
    x = relay.var("x", shape=data.shape)
    kw = {"rounding_method": "floor"} if method == "nearest_neighbor" else {}
    (got,) = _run(relay.image.resize1d(x, (12,), None, layout, method, mode, **kw), [x], [data])
    ref = topi.testing.resize1d_python(data, (12 / 7,), layout, method, mode)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("alpha,exclude", [(-0.5, 0), (-0.75, 1)])
def test_image_resize_cubic_matches_topi_testing_reference(ndim, mode, alpha, exclude):
    shape, size = ((2, 3, 7), (12,)) if ndim == 1 else ((1, 2, 5, 6), (9, 4))
    data = RNG.standard_normal(shape).astype("float32")
    x = relay.var("x", shape=data.shape)
    layout = "NCW" if ndim == 1 else "NCHW"
    resize = relay.image.resize1d if ndim == 1 else relay.image.resize2d
    call = resize(x, size, None, layout, "cubic", mode, cubic_alpha=alpha, cubic_exclude=exclude)
    (got,) = _run(call, [x], [data])
    scale = tuple(s / d for s, d in zip(size, shape[2:]))
    ref_fn = topi.testing.resize1d_python if ndim == 1 else topi.testing.resize2d_python
    ref = ref_fn(data, scale, layout, "cubic", mode, cubic_alpha=alpha, cubic_exclude=exclude)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_image_resize2d_cubic_matches_torch_bicubic():
    torch = pytest.importorskip("torch", reason="torch is the outside oracle for bicubic")
    data = RNG.standard_normal((1, 2, 5, 6)).astype("float32")
    x = relay.var("x", shape=data.shape)
    for mode, align in [("half_pixel", False), ("align_corners", True)]:
        call = relay.image.resize2d(x, (9, 4), None, "NCHW", "cubic", mode, cubic_alpha=-0.75)
        (got,) = _run(call, [x], [data])
        want = torch.nn.functional.interpolate(
            torch.from_numpy(data), size=(9, 4), mode="bicubic", align_corners=align
        ).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unsupported_image_and_deformable_conv_are_refused_by_name():
    x = relay.var("x", shape=(1, 1, 4, 4))
    with pytest.raises(OpNotImplemented, match="roi"):
        relay.image.resize2d(x, (8, 8), roi=(0, 0, 1, 1))
    with pytest.raises(OpNotImplemented, match="deformable_conv2d"):
        relay.nn.deformable_conv2d(x, x, x)


def test_relax_index_ops_compiled_kernels_agree_with_their_numpy_column():
    from minitvm import relax
    from minitvm.relax.op import OP_TABLE

    data = RNG.standard_normal((4, 5)).astype("float32")
    idx = RNG.integers(-5, 5, size=(4, 3)).astype("int64")
    sp = np.array([[0, 1, 2], [1, 0, 5]], "int64")
    shapes = [np.array([2, 3, 6], "int64"), np.array([-1, 4], "int64")]
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 5), "float32"))
    i = relax.Var("i", relax.TensorStructInfo((4, 3), "int64"))
    s = relax.Var("s", relax.TensorStructInfo((2, 3), "int64"))
    p = relax.Var("p", relax.TensorStructInfo((3,), "int64"))
    n = relax.Var("n", relax.TensorStructInfo((2,), "int64"))
    with bb.function("main", [x, i, s, p, n]):
        g = bb.emit(relax.op.gather_elements(x, i, 1))
        a = bb.emit(relax.op.arange(2, 11, 3, "int32"))
        r = bb.emit(relax.op.sparse_reshape(s, p, n))
        bb.emit_func_output(relax.Tuple([g, a, relax.TupleGetItem(r, 0), relax.TupleGetItem(r, 1)]))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = [o.numpy() for o in vm["main"](data, idx, sp, *shapes)]
    expected = [
        OP_TABLE["relax.gather_elements"].numpy(data, idx, axis=1),
        OP_TABLE["relax.arange"].numpy(start=2, end=11, step=3, dtype="int32"),
        *OP_TABLE["relax.sparse_reshape"].numpy(sp, *shapes),
    ]
    np.testing.assert_array_equal(expected[0], np.take_along_axis(data, idx % 5, 1))
    np.testing.assert_array_equal(expected[1], np.arange(2, 11, 3))
    np.testing.assert_array_equal(expected[3], [9, 4])
    for g_, e_ in zip(got, expected):
        np.testing.assert_array_equal(g_, e_)
