"""TVM's op-level gradient interface (`Op.get_attr("FPrimalGradient")`, `relax.grad.no_grad`)
over the op table's rules, grouped conv2d gradients, and the small TVM names the training
tests use. Oracle: torch.autograd (float64) and TVM's documented contract: one gradient Expr
per argument, `no_grad(arg)` for an argument without one, a Tuple for a tuple argument."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.ir.op import Op
from minitvm.relax import op as R

torch = pytest.importorskip("torch")

F64 = "float64"


def _var(name, shape, dtype=F64):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def _run(mod, *arrays):
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a) for a in arrays])
    if isinstance(out, tvm.ir.Array):
        return [o.numpy() if hasattr(o, "numpy") else o for o in out]
    return out.numpy()


def _primal(op_name, call_fn, arrays, weight):
    """Build `call_fn(*params)` and its FPrimalGradient for output gradient `weight`."""
    params = [_var(f"x{i}", a.shape, str(a.dtype)) for i, a in enumerate(arrays)]
    g = _var("g", weight.shape)
    call = call_fn(*params)
    rule = Op.get(op_name).get_attr("FPrimalGradient")
    bb = relax.BlockBuilder()
    with bb.function("main", [*params, g]):
        with bb.dataflow():
            orig = bb.emit(call)
            grads = rule(orig, call, g, bb)
            out = bb.emit_output(relax.Tuple(tuple(grads)))
        bb.emit_func_output(out)
    return grads, _run(bb.get(), *arrays, weight)


def test_primal_gradient_of_a_broadcasting_multiply_matches_torch():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 1, 4)), rng.standard_normal((5, 1))
    w = rng.standard_normal((3, 5, 4))
    _, (ga, gb) = _primal("relax.multiply", R.multiply, [a, b], w)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ea, eb = torch.autograd.grad((ta * tb * torch.tensor(w)).sum(), [ta, tb])
    np.testing.assert_allclose(ga, ea.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gb, eb.numpy(), rtol=1e-10)


def test_arguments_without_a_gradient_get_no_grad():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6))
    w = rng.standard_normal((3, 4))
    grads, (gx, gshape) = _primal("relax.reshape", lambda t: R.reshape(t, (3, 4)), [x], w)
    no_grad = Op.get("relax.grad.no_grad")
    assert grads[1].op is no_grad  # the shape argument
    assert grads[0].op is not no_grad
    np.testing.assert_allclose(gx, w.reshape(2, 6))
    assert tuple(int(v) for v in gshape) == (3, 4)  # a shape's no_grad is the shape itself

    # a comparison is not differentiable: every argument gets no_grad, built as zeros
    y = rng.standard_normal((2, 6))
    grads, built = _primal("relax.less", R.less, [x, y], np.ones((2, 6)))
    assert all(g.op is no_grad for g in grads)
    for arr in built:
        np.testing.assert_array_equal(arr, np.zeros((2, 6)))


def test_tuple_argument_gets_a_tuple_of_gradients():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3))
    params = [_var("a", a.shape), _var("b", b.shape)]
    g = _var("g", (6, 3))
    call = R.concat(relax.Tuple(tuple(params)), axis=0)
    rule = Op.get("relax.concat").get_attr("FPrimalGradient")
    bb = relax.BlockBuilder()
    with bb.function("main", [*params, g]):
        with bb.dataflow():
            grads = rule(bb.emit(call), call, g, bb)
            assert len(grads) == 1 and isinstance(grads[0], relax.Tuple)
            out = bb.emit_output(grads[0])
        bb.emit_func_output(out)
    w = rng.standard_normal((6, 3))
    ga, gb = _run(bb.get(), a, b, w)
    np.testing.assert_allclose(ga, w[:2])
    np.testing.assert_allclose(gb, w[2:])


def test_get_attr_answers_none_where_tvm_has_no_attribute():
    assert Op.get("relax.add").get_attr("NoSuchAttribute") is None
    assert Op.get("relax.layout_transform").get_attr("FPrimalGradient") is None  # no rule yet
    assert Op.get("relax.add").get_attr("TOpPattern") == 1  # kBroadcast in TVM's numbering
    assert Op.get("relax.exp").get_attr("TOpPattern") == 0  # kElemWise
    assert callable(Op.get("relax.add").get_attr("FInferStructInfo"))


@pytest.mark.parametrize(
    "groups, cin, cout, stride, padding", [(2, 4, 6, 1, 1), (3, 6, 3, 2, (1, 0)), (4, 8, 8, 2, 0)]
)
def test_grouped_conv2d_gradient_matches_torch(groups, cin, cout, stride, padding):
    rng = np.random.default_rng(groups)
    x = rng.standard_normal((2, cin, 7, 6))
    w = rng.standard_normal((cout, cin // groups, 3, 2))
    xv, wv = _var("x", x.shape), _var("w", w.shape)
    pad = padding if isinstance(padding, tuple) else (padding, padding)
    cval = rng.standard_normal((2, cout, *_out_hw(x, w, stride, pad)))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv, wv]):
        with bb.dataflow():
            y = bb.emit(R.nn.conv2d(xv, wv, strides=stride, padding=pad, groups=groups))
            c = bb.emit(relax.const(cval, F64))
            out = bb.emit_output(R.sum(R.multiply(y, c)))
        bb.emit_func_output(out)
    mod = relax.transform.Gradient("main")(bb.get())
    mod["main"] = mod["main_adjoint"]
    loss, (gx, gw) = _run(mod, x, w)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, stride=stride, padding=pad, groups=groups)
    tloss = (ty * torch.tensor(cval)).sum()
    ex, ew = torch.autograd.grad(tloss, [tx, tw])
    np.testing.assert_allclose(loss, tloss.item(), rtol=1e-10)
    np.testing.assert_allclose(gx, ex.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gw, ew.numpy(), rtol=1e-9, atol=1e-12)


def _out_hw(x, w, stride, pad):
    return tuple((x.shape[2 + k] + 2 * pad[k] - w.shape[2 + k]) // stride + 1 for k in range(2))


def test_concat_of_a_tuple_variable_builds():
    a, b = _var("a", (3,)), _var("b", (2,))
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b]):
        with bb.dataflow():
            t = bb.emit(relax.Tuple((a, b)))
            out = bb.emit_output(R.multiply(R.concat(t, axis=0), relax.const(2.0, F64)))
        bb.emit_func_output(out)
    x, y = np.arange(3.0), np.array([5.0, 7.0])
    np.testing.assert_allclose(_run(bb.get(), x, y), 2 * np.concatenate([x, y]))


def test_append_loss_gives_the_new_function_its_own_parameters():
    x = _var("x", (3, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(R.add(x, x))
        bb.emit_func_output(out)
    p = _var("p", (3, 3))
    lb = relax.BlockBuilder()
    with lb.function("loss", [p]):
        with lb.dataflow():
            lo = lb.emit_output(R.sum(p))
        lb.emit_func_output(lo)
    mod = relax.training.AppendLoss("main", lb.get()["loss"])(bb.get())
    assert mod["main_loss"].params[0] is not mod["main"].params[0]
    assert relax.analysis.well_formed(mod)
    mod["main"] = mod["main_loss"]
    a = np.random.default_rng(3).standard_normal((3, 3))
    np.testing.assert_allclose(_run(mod, a), 2 * a.sum())


def test_small_tvm_names():
    x = _var("x", (2, 3), "int32")
    assert x.astype("float32").struct_info.dtype == "float32"
    mod = tvm.IRModule({}).with_attr("k", 1).without_attr("k")
    assert "k" not in dict(mod.attrs)
    call = R.nn.max_pool2d(_var("d", (1, 1, 4, 4)), 2, 2, 0, 1, False, True, "NCHW")
    assert call.attrs["layout"] == "NCHW"  # count_include_pad sits before layout, as in TVM
    assert R.matmul(x, x, out_dtype="").attrs["out_dtype"] is None


@pytest.mark.parametrize("axis", [[0, 2, 3], [-1, 1], (3, 0)])
def test_expand_dims_with_several_axes_matches_numpy(axis):
    x = np.random.default_rng(4).standard_normal((2, 3))
    xv = _var("x", x.shape)
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            y = bb.emit(R.expand_dims(xv, axis))
            out = bb.emit_output(R.multiply(y, relax.const(3.0, F64)))
        bb.emit_func_output(out)
    expected = 3.0 * np.expand_dims(x, tuple(axis))
    assert tuple(int(d) for d in y.struct_info.shape) == expected.shape
    np.testing.assert_allclose(_run(bb.get(), x), expected)
    with pytest.raises(tvm.error.TVMError, match="repeat"):
        R.expand_dims(xv, [1, 1]).struct_info  # noqa: B018 - inference raises


def _te_grads():
    from minitvm import te
    from minitvm.relax.training.utils import register_te_gradient

    @register_te_gradient("t_mul_grad")
    def t_mul_grad(output_grad, a, b):
        return [
            te.compute(a.shape, lambda *i: b[i] * output_grad[i], name="ga"),
            te.compute(b.shape, lambda *i: a[i] * output_grad[i], name="gb"),
        ]

    @register_te_gradient("t_scale_grad")
    def t_scale_grad(output_grad, a, k):
        return [te.compute(a.shape, lambda *i: output_grad[i] * k, name="ga")]


def test_call_tir_with_grad_runs_as_call_tir_and_differentiates_with_the_te_rule():
    from minitvm import te

    _te_grads()
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    av, bv = _var("a", a.shape), _var("b", b.shape)
    bb = relax.BlockBuilder()
    with bb.function("main", [av, bv]):
        with bb.dataflow():
            m = bb.emit_te_with_grad(
                lambda x, y: te.compute(x.shape, lambda *i: x[i] * y[i], name="t_mul"),
                av,
                bv,
                te_grad_name="t_mul_grad",
            )
            s = bb.emit_te_with_grad(
                lambda x: te.compute(x.shape, lambda *i: x[i] * 3.0, name="t_scale"),
                m,
                te_grad_name="t_scale_grad",
                te_grad_kwargs={"k": 3.0},
            )
            out = bb.emit_output(R.sum(R.multiply(s, s)))
        bb.emit_func_output(out)
    mod = bb.get()
    # printed and parsed back, the call keeps its gradient's name and arguments
    text = mod.script()
    assert 'te_grad_name="t_scale_grad"' in text and "te_grad_kwargs=" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)
    np.testing.assert_allclose(_run(mod, a, b), ((a * b * 3.0) ** 2).sum())
    grad_mod = relax.transform.Gradient("main")(mod)
    grad_mod["main"] = grad_mod["main_adjoint"]
    loss, (ga, gb) = _run(grad_mod, a, b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tloss = ((ta * tb * 3.0) ** 2).sum()
    ea, eb = torch.autograd.grad(tloss, [ta, tb])
    np.testing.assert_allclose(loss, tloss.item(), rtol=1e-12)
    np.testing.assert_allclose(ga, ea.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb, eb.numpy(), rtol=1e-12)


def _doubled_with_grad(n: int, grad_name: str):
    """sum(2 * a) for a of shape (n,), the doubling a call_tir_with_grad naming `grad_name`."""
    from minitvm import te

    av = _var("a", (n,))
    bb = relax.BlockBuilder()
    with bb.function("main", [av]):
        with bb.dataflow():
            m = bb.emit_te_with_grad(
                lambda x: te.compute(x.shape, lambda i: x[i] * 2.0, name="t_double"),
                av,
                te_grad_name=grad_name,
            )
            out = bb.emit_output(R.sum(m))
        bb.emit_func_output(out)
    return bb.get()


def test_call_tir_with_grad_names_an_unregistered_gradient():
    mod = _doubled_with_grad(2, "nobody_registered_this")
    with pytest.raises(
        tvm.error.TVMError, match="'nobody_registered_this', which is not registered"
    ):
        relax.transform.Gradient("main")(mod)


def _returning(make_out):
    x = _var("x", (3, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            s = bb.emit_output(R.sum(x))
        bb.emit_func_output(make_out(s))
    return bb.get()


@pytest.mark.parametrize(
    "make_out, index, message",
    [
        (lambda s: s, 1, "returns one value, not a tuple"),
        (lambda s: relax.Tuple((s, s)), 2, "returns a tuple of 2 values"),
        (lambda s: relax.Tuple((s, relax.Tuple((s, s)))), 1, "must be a tensor"),
    ],
)
def test_gradient_refuses_a_target_index_that_names_no_scalar(make_out, index, message):
    # TVM: target_index picks one of the returned values, which must be a scalar float tensor
    from minitvm.relax.transform.gradient import GradientError

    with pytest.raises(GradientError, match=message):
        relax.transform.Gradient("main", target_index=index)(_returning(make_out))
    with pytest.raises(ValueError, match="no function 'other'"):  # TVM raises ValueError here
        relax.transform.Gradient("other")(_returning(lambda s: s))


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_embedding_gradient_scatter_adds_rows(mode):
    # axis 0 (an embedding) runs as a scatter-add; repeated and out-of-range indices as take's
    rng = np.random.default_rng(6)
    idx = np.array([[0, 3, 3], [-1, 7, 2]], dtype="int64")
    g = rng.standard_normal((2, 3, 4, 2))
    gv, iv = _var("g", g.shape), _var("i", idx.shape, "int64")
    bb = relax.BlockBuilder()
    with bb.function("main", [gv, iv]):
        with bb.dataflow():
            out = bb.emit_output(R.grad.take_backward(gv, iv, (5, 4, 2), 0, mode))
        bb.emit_func_output(out)
    pos = np.mod(idx, 5) if mode == "wrap" else np.clip(idx, 0, 4)
    expected = np.zeros((5, 4, 2))
    np.add.at(expected, pos.reshape(-1), g.reshape(-1, 4, 2))
    np.testing.assert_allclose(_run(bb.get(), g, idx), expected, rtol=1e-12)


def test_a_te_gradient_of_the_wrong_shape_is_refused():
    from minitvm import te
    from minitvm.relax.training.utils import register_te_gradient

    @register_te_gradient("t_bad_grad")
    def t_bad_grad(output_grad, a):
        return [te.compute((2,), lambda i: output_grad[i], name="ga")]

    mod = _doubled_with_grad(3, "t_bad_grad")
    with pytest.raises(tvm.error.TVMError, match="must have its input's shape"):
        relax.transform.Gradient("main")(mod)
