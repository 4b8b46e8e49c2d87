"""Valid ONNX models with symbolic dims build and match ONNX Runtime: shape-only chains,
Flatten of several symbolic dims (its fused loop split needs `x % m < m` for symbolic m)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs onnx")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")
from onnx import TensorProto, helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import from_onnx  # noqa: E402


def _check(nodes, inputs, outputs, feeds, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    session = ort.InferenceSession(model.SerializeToString())
    for feed in feeds:  # one build, several sizes of the symbolic dims
        want = session.run(None, feed)[0]
        got = vm["main"](*feed.values())
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_flatten_of_symbolic_dims():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "A", "B", 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None])
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.random((1, a, b, 32), dtype=np.float32)} for a, b in ((3, 4), (1, 7))]
    _check([helper.make_node("Flatten", ["x"], ["y"], axis=1)], [x], [y], feeds)


def test_shape_gather_expand_chain_on_a_symbolic_dim():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["A", 3])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["A", 3])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i"], ["d"], axis=0),
        helper.make_node("Unsqueeze", ["d", "ax"], ["d1"]),
        helper.make_node("Concat", ["d1", "three"], ["shp"], axis=0),
        helper.make_node("Expand", ["one", "shp"], ["e"]),
        helper.make_node("Mul", ["x", "e"], ["z"]),
    ]
    inits = [
        helper.make_tensor("i", TensorProto.INT64, [], [0]),
        helper.make_tensor("ax", TensorProto.INT64, [1], [0]),
        helper.make_tensor("three", TensorProto.INT64, [1], [3]),
        helper.make_tensor("one", TensorProto.FLOAT, [1], [1.5]),
    ]
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.random((n, 3), dtype=np.float32)} for n in (5, 2)]
    _check(nodes, [x], [z], feeds, inits)
