"""ONNX shape inputs computed at run time (Reshape's shape, Expand's shape, ConstantOfShape's
input fed as graph inputs): imported through R.tensor_to_shape, checked against onnxruntime."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError, ShapeError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper

from minitvm.relax.frontend.onnx import from_onnx


def _model(node, inputs, out_type=TensorProto.FLOAT, opset=17):
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(node.output[0], out_type, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run_both(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    got = vm["main"](*[tvm.nd.array(v) for v in feeds.values()]).numpy()
    return got, want


def _reshape_model(k, allowzero=0, x_shape=(2, 3, 4)):
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=allowzero)
    return _model(node, [("x", TensorProto.FLOAT, x_shape), ("shape", TensorProto.INT64, [k])])


X = np.arange(24, dtype="float32").reshape(2, 3, 4)


@pytest.mark.parametrize(
    "shape",
    [[4, 6], [-1, 2], [0, -1], [0, 0, 4], [2, 0, 2, 2], [24], [-1], [1, 0, 4, 2]],
)
def test_reshape_runtime_shape_matches_onnxruntime(shape):
    got, want = _run_both(_reshape_model(len(shape)), {"x": X, "shape": np.array(shape, "int64")})
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_one_import_serves_several_runtime_shapes():
    vm = relax.VirtualMachine(relax.build(from_onnx(_reshape_model(2)), "llvm"), tvm.cpu())
    for shape in ([4, 6], [3, 8], [-1, 12], [0, 12]):
        got = vm["main"](tvm.nd.array(X), tvm.nd.array(np.array(shape, "int64"))).numpy()
        want = X.reshape([2 if d == 0 else d for d in shape])
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "shape, match",
    [
        ([5, 5], "element count must stay the same"),
        ([-1, -1], "dims must be >= 0"),
        ([-2, 12], "dims must be >= 0"),
        ([7, -1], "element count must stay the same"),
    ],
)
def test_reshape_invalid_runtime_shape_is_a_minitvm_error(shape, match):
    vm = relax.VirtualMachine(relax.build(from_onnx(_reshape_model(2)), "llvm"), tvm.cpu())
    with pytest.raises(ShapeError, match=match):
        vm["main"](tvm.nd.array(X), tvm.nd.array(np.array(shape, "int64")))


def test_reshape_allowzero_keeps_literal_zero():
    got, want = _run_both(
        _reshape_model(3, allowzero=1, x_shape=(0, 3, 4)),
        {"x": np.zeros((0, 3, 4), "float32"), "shape": np.array([3, 4, 0], "int64")},
    )
    assert got.shape == want.shape == (3, 4, 0)


def test_reshape_shape_of_unknown_length_is_refused_naming_the_node():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")
    model = _model(node, [("x", TensorProto.FLOAT, [2, 3]), ("shape", TensorProto.INT64, ["k"])])
    with pytest.raises(MiniTVMError, match="rs"):
        from_onnx(model)


@pytest.mark.parametrize("shape", [[2, 3, 4], [3, 1], [4], [2, 1, 1], [1, 3, 5]])
def test_expand_runtime_shape_matches_onnxruntime(shape):
    node = helper.make_node("Expand", ["x", "shape"], ["y"])
    model = _model(
        node, [("x", TensorProto.FLOAT, [3, 1]), ("shape", TensorProto.INT64, [len(shape)])]
    )
    x = np.arange(3, dtype="float32").reshape(3, 1)
    got, want = _run_both(model, {"x": x, "shape": np.array(shape, "int64")})
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_expand_incompatible_runtime_shape_is_a_minitvm_error():
    node = helper.make_node("Expand", ["x", "shape"], ["y"])
    model = _model(node, [("x", TensorProto.FLOAT, [3, 1]), ("shape", TensorProto.INT64, [2])])
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    with pytest.raises(ShapeError):
        vm["main"](tvm.nd.array(np.ones((3, 1), "float32")), tvm.nd.array(np.array([4, 2])))


@pytest.mark.parametrize("dims", [[2, 3], [0, 4], [5]])
def test_constant_of_shape_runtime_input_matches_onnxruntime(dims):
    value = helper.make_tensor("value", TensorProto.INT32, [1], [7])
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], value=value)
    model = _model(node, [("s", TensorProto.INT64, [len(dims)])], TensorProto.INT32)
    got, want = _run_both(model, {"s": np.array(dims, "int64")})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_constant_of_shape_negative_dim_is_a_minitvm_error():
    node = helper.make_node("ConstantOfShape", ["s"], ["y"])
    model = _model(node, [("s", TensorProto.INT64, [2])])
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    with pytest.raises(ShapeError, match="dims must be >= 0"):
        vm["main"](tvm.nd.array(np.array([2, -3], "int64")))
