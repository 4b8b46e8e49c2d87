"""The zoo's torch twins exported with torch.onnx.export (dynamic batch), imported with
from_onnx and compared with ONNX Runtime (and PyTorch eager) to rtol 1e-4."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import eval_ref
from minitvm.relax.frontend.onnx import from_onnx
from minitvm.testing import zoo

RTOL, ATOL = 1e-4, 1e-5


def _zoo(name):
    kwargs = (
        {"seq_len": 8}
        if name == "bert_layer"
        else {"image_shape": (1, 28, 28) if name in ("mlp", "lenet") else (3, 16, 16)}
    )
    _, params = zoo.get_model(name, batch_size=2, **kwargs)
    return zoo.torch_model(name, params).eval(), zoo.input_shape(name, 2, **kwargs)


def _export(model, shape, tmp_path, dynamo):
    x = torch.zeros(shape)
    path = tmp_path / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            batch = {0: torch.export.Dim("batch")}
            torch.onnx.export(
                model,
                (x,),
                str(path),
                input_names=["x"],
                dynamic_shapes=(batch,),
                dynamo=True,
                verbose=False,
            )
        else:
            torch.onnx.export(
                model,
                (x,),
                str(path),
                input_names=["x"],
                output_names=["y"],
                dynamic_axes={"x": {0: "batch"}},
                dynamo=False,
            )
    return onnx.load(str(path)), str(path)


def _compare(name, tmp_path, dynamo, compile=False):
    model, shape = _zoo(name)
    proto, path = _export(model, shape, tmp_path, dynamo)
    mod = from_onnx(proto)
    batch = mod["main"].params[0].struct_info.shape[0]
    assert isinstance(batch, tir.Var), "the exported dynamic batch stays symbolic"
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    run = eval_ref.evaluate
    if compile:
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())

        def run(_, x):
            return vm["main"](tvm.nd.array(x)).numpy()

    for b in (1, 3):  # sizes other than the exported one
        x = np.random.default_rng(b).standard_normal((b, *shape[1:])).astype("float32")
        want = sess.run(None, {proto.graph.input[0].name: x})[0]
        got = run(mod, x)
        np.testing.assert_allclose(np.asarray(got), want, rtol=RTOL, atol=ATOL)
        with torch.no_grad():
            eager = model(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(np.asarray(got), eager, rtol=RTOL, atol=ATOL)


# resnet18 also passes (GlobalAveragePool, residual Add); one heavy CNN keeps the suite fast
@pytest.mark.parametrize("name", ["mlp", "lenet", "mobilenet_v2", "bert_layer"])
def test_zoo_model_from_torchscript_exporter_matches_ort(name, tmp_path):
    _compare(name, tmp_path, dynamo=False)


@pytest.mark.parametrize("name", ["lenet"])
def test_zoo_model_from_dynamo_exporter_matches_ort(name, tmp_path):
    _compare(name, tmp_path, dynamo=True)


@pytest.mark.parametrize("name", ["mlp", "lenet"])
def test_zoo_model_compiles_with_symbolic_batch_and_matches_ort(name, tmp_path):
    _compare(name, tmp_path, dynamo=False, compile=True)
