"""relay.frontend.from_onnx / from_pytorch (TVM's classic importer signatures) as thin front
ends onto the relax importers, run the way TVM's from_onnx.py / from_pytorch.py tutorials run
them; checked against ONNX Runtime and torch."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.error import FrontendError

torch = pytest.importorskip("torch", reason="relay.frontend.from_pytorch needs torch")


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean((2, 3)))


def _net():
    torch.manual_seed(0)
    net = _Net().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
    return net


def test_from_pytorch_runs_like_the_tutorial():
    net = _net()
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype("float32")
    traced = torch.jit.trace(net, torch.from_numpy(x)).eval()
    mod, params = relay.frontend.from_pytorch(traced, [("input0", x.shape)])
    assert params and all(isinstance(v, tvm.nd.NDArray) for v in params.values())
    assert mod["main"].params[0].name_hint == "input0"
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("input0", tvm.nd.array(x))
    m.run()
    want = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)


def test_from_pytorch_input_dtype_and_errors():
    net = _net()
    traced = torch.jit.trace(net, torch.zeros(1, 3, 8, 8)).eval()
    mod, _ = relay.frontend.from_pytorch(traced, [("x", ((1, 3, 8, 8), "float32"))])
    assert str(mod["main"].params[0].struct_info.dtype) == "float32"
    with pytest.raises(FrontendError, match="TorchScript module"):
        relay.frontend.from_pytorch(net, [("x", (1, 3, 8, 8))])
    with pytest.raises(FrontendError, match="list of ints"):
        relay.frontend.from_pytorch(traced, [("x", (1, "n", 8, 8))])
    with pytest.raises(FrontendError, match="input_infos"):
        relay.frontend.from_pytorch(traced, "x")
    with pytest.raises(FrontendError, match="could not convert"):
        relay.frontend.from_pytorch(traced, [("x", (1, 5, 8, 8))])  # 5 channels for a 3-channel conv


def _onnx_model():
    onnx = pytest.importorskip("onnx", reason="relay.frontend.from_onnx needs onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    fc = rng.standard_normal((4, 2)).astype("float32")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["data:0", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("GlobalAveragePool", ["r"], ["g"]),
            helper.make_node("Flatten", ["g"], ["f"]),
            helper.make_node("MatMul", ["f", "fc"], ["out"]),
        ],
        "net",
        [helper.make_tensor_value_info("data:0", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(fc, "fc")],
    )
    return onnx, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("freeze", [True, False])
def test_from_onnx_runs_like_the_tutorial(freeze):
    onnx, model = _onnx_model()
    ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")
    x = np.random.default_rng(2).standard_normal((1, 3, 6, 6)).astype("float32")
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"data:0": x})[0]
    mod, params = relay.frontend.from_onnx(model, {"data:0": x.shape}, freeze_params=freeze)
    assert sorted(params) == ([] if freeze else ["fc", "w"])
    with tvm.transform.PassContext(opt_level=1):
        run = relay.build_module.create_executor(
            "graph", mod, tvm.cpu(0), "llvm", params
        ).evaluate()
    np.testing.assert_allclose(run(tvm.nd.array(x)).numpy(), want, rtol=1e-4, atol=1e-5)


def test_from_onnx_refuses_what_it_cannot_honour():
    _, model = _onnx_model()
    with pytest.raises(FrontendError, match="convert_config"):
        relay.frontend.from_onnx(model, convert_config={"use_nt_batch_matmul": False})
    with pytest.raises(FrontendError, match="freeze_params"):
        relay.frontend.from_onnx(model, freeze_params="yes")


def test_relay_any_runs_on_the_vm_executor():
    """relay.Any() dims are independent run-time sizes; the "vm" executor runs them, the
    graph executor asks for static shapes."""
    from minitvm.error import BuildError

    a, b = relay.Any(), relay.Any()
    assert not a.same_as(b)
    x = relay.var("x", shape=(a, 3))
    y = relay.var("y", shape=(b, 3))
    f = relay.Function([x, y], relay.concatenate([relay.nn.relu(x), y * relay.const(2.0)], 0))
    mod = tvm.IRModule.from_expr(f)
    run = relay.create_executor("vm", mod, tvm.cpu(), "llvm").evaluate()
    rng = np.random.default_rng(3)
    for n, m in ((2, 5), (4, 1)):
        xv = rng.standard_normal((n, 3)).astype("float32")
        yv = rng.standard_normal((m, 3)).astype("float32")
        want = np.concatenate([np.maximum(xv, 0), yv * 2])
        np.testing.assert_allclose(run(xv, yv).numpy(), want, rtol=1e-6)
    with pytest.raises(BuildError, match="static input shapes"):
        relay.create_executor("graph", mod, tvm.cpu(), "llvm").evaluate()
