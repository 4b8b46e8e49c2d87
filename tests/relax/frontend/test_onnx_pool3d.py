"""3-d MaxPool / AveragePool through from_onnx against ONNX Runtime, relax.nn.max_pool3d /
avg_pool3d against torch (values and gradients), and 2-d dilated averages counting padding."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.frontend.onnx import from_onnx
from minitvm.relax.transform.gradient import gradient


def _model(op, attrs, in_shape, opset=19):
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _run(mod, *xs):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(x) for x in xs])
    return out.numpy() if hasattr(out, "numpy") else [o.numpy() for o in out]


def _check_ort(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    got = _run(from_onnx(model), x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


POOL3D = [
    {"kernel_shape": [3, 2, 3]},
    {"kernel_shape": [3, 2, 3], "strides": [2, 2, 1], "pads": [1, 0, 1, 1, 1, 0]},
    {"kernel_shape": [3, 3, 2], "strides": [2, 3, 2], "pads": [1, 1, 0, 1, 0, 1], "ceil_mode": 1},
    {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 2], "strides": [1, 2, 1]},
    {"kernel_shape": [2, 2, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]},
]


@pytest.mark.parametrize("attrs", POOL3D)
def test_maxpool_3d_matches_onnxruntime(attrs):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6, 5)).astype("float32")
    _check_ort(_model("MaxPool", attrs, x.shape), x)


@pytest.mark.parametrize("include", [0, 1])
@pytest.mark.parametrize("attrs", POOL3D)
def test_averagepool_3d_matches_onnxruntime(attrs, include):
    x = np.random.default_rng(1).standard_normal((1, 2, 7, 6, 5)).astype("float32")
    _check_ort(_model("AveragePool", {**attrs, "count_include_pad": include}, x.shape), x)


@pytest.mark.parametrize("ceil", [0, 1])
def test_averagepool_2d_dilated_counts_taps_inside_the_padding(ceil):
    attrs = {"kernel_shape": [3, 2], "dilations": [2, 3], "pads": [1, 1, 2, 0], "strides": [2, 1],
             "count_include_pad": 1, "ceil_mode": ceil}  # fmt: skip
    x = np.random.default_rng(2).standard_normal((1, 2, 9, 8)).astype("float32")
    _check_ort(_model("AveragePool", attrs, x.shape), x)


def _pool3d_fn(pool, kwargs, shape):
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(R.sum(pool(x, **kwargs)))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_pool3d_gradient_matches_torch(pool):
    torch = pytest.importorskip("torch")
    shape = (2, 2, 6, 5, 7)
    rng = np.random.default_rng(3)
    x = (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.01).astype("float32")  # no ties
    w = rng.standard_normal((2, 2, 4, 5, 4)).astype("float32")
    kwargs = {"pool_size": (2, 3, 2), "strides": (2, 1, 2), "padding": (1, 1, 0), "ceil_mode": True}
    fn = R.nn.max_pool3d if pool == "max" else R.nn.avg_pool3d
    # a weighted sum, so each window's gradient differs
    xv = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    wv = relax.Var("w", relax.TensorStructInfo(w.shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv, wv]):
        with bb.dataflow():
            y = bb.emit(fn(xv, **kwargs))
            out = bb.emit_output(R.sum(R.multiply(y, wv)))
        bb.emit_func_output(out)
    mod = gradient(bb.get(), "main", require_grads=[xv])
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    _, (got,) = vm["main_adjoint"](tvm.nd.array(x), tvm.nd.array(w))
    t = torch.tensor(x, requires_grad=True)
    tf = torch.nn.functional
    if pool == "max":
        y = tf.max_pool3d(t, (2, 3, 2), (2, 1, 2), (1, 1, 0), ceil_mode=True)
    else:
        y = tf.avg_pool3d(t, (2, 3, 2), (2, 1, 2), (1, 1, 0), ceil_mode=True,
                          count_include_pad=False)  # fmt: skip
    assert tuple(y.shape) == w.shape
    (y * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(got.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_pool3d_refuses_a_window_larger_than_the_input():
    with pytest.raises(tvm.error.ShapeError, match=r"output dim 2 is -1: pool_size \[5, 1, 1\]"):
        _pool3d_fn(R.nn.max_pool3d, {"pool_size": (5, 1, 1)}, (1, 1, 3, 4, 4))


def test_pool3d_gradient_refuses_dilated_averages_counting_padding():
    xv = relax.Var("x", relax.TensorStructInfo((1, 1, 4, 5, 5), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            y = bb.emit(R.nn.avg_pool3d(xv, 2, 1, 1, (1, 2, 1), count_include_pad=True))
            out = bb.emit_output(R.sum(y))
        bb.emit_func_output(out)
    with pytest.raises(tvm.error.MiniTVMError, match=r"count_include_pad and dilation \[1, 2, 1\]"):
        gradient(bb.get(), "main")
