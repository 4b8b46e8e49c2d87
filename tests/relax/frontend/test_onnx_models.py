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


nn = torch.nn
F = torch.nn.functional


class SmallCNN(nn.Module):
    """Conv/BatchNorm/Hardswish, nearest and bilinear Resize, ConvTranspose, grouped strided
    conv, SiLU, AveragePool, reflect Pad, Flatten, Gemm, LogSoftmax."""

    def __init__(self):
        super().__init__()
        self.c1, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.c2 = nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=2)
        self.fc = nn.Linear(4 * 8 * 8, 5)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        y = F.hardswish(self.bn(self.c1(x)))
        y = F.interpolate(y, scale_factor=2, mode="nearest")
        y = F.interpolate(y, scale_factor=0.5, mode="bilinear", align_corners=False)
        y = F.avg_pool2d(F.silu(self.c2(F.leaky_relu(self.up(y), 0.1))), 2)
        y = F.pad(y, (1, 1, 1, 1), mode="reflect")
        y = F.interpolate(y, size=(8, 8), mode="bilinear", align_corners=True)
        return F.log_softmax(self.fc(torch.flatten(y, 1)), dim=-1)


class SmallTransformer(nn.Module):
    """Embedding (Gather), LayerNorm, causal scaled_dot_product_attention (Trilu/Where), GELU."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads, self.emb = heads, nn.Embedding(20, dim)
        self.qkv, self.out, self.ln = (
            nn.Linear(dim, 3 * dim),
            nn.Linear(dim, dim),
            nn.LayerNorm(dim),
        )
        self.ff = nn.Sequential(nn.Linear(dim, 32), nn.GELU(), nn.Linear(32, dim))

    def forward(self, tokens):
        x = self.emb(tokens)
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return (x + self.ff(x)).mean(dim=1)


@pytest.mark.parametrize("dynamo", [False, True])
@pytest.mark.parametrize(
    "make, example",
    [
        (SmallCNN, lambda b: torch.randn(b, 3, 16, 16)),
        (SmallTransformer, lambda b: torch.randint(0, 20, (b, 6))),
    ],
)
def test_small_models_with_dynamic_batch_match_ort_and_torch(make, example, dynamo, tmp_path):
    torch.manual_seed(0)
    model = make().eval()
    path = str(tmp_path / "m.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs = (
            {"dynamic_shapes": ({0: torch.export.Dim("batch")},), "verbose": False}
            if dynamo
            else {"dynamic_axes": {"x": {0: "batch"}}}
        )
        torch.onnx.export(model, (example(2),), path, input_names=["x"], dynamo=dynamo, **kwargs)
    mod = from_onnx(onnx.load(path))
    x = example(3)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"x": x.numpy()}
    )
    got = np.asarray(eval_ref.evaluate(mod, x.numpy()))
    np.testing.assert_allclose(got, want[0], rtol=RTOL, atol=ATOL)
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=RTOL, atol=ATOL)
    if make is SmallTransformer and not dynamo:  # one compiled run: masks, gathers, symbolic batch
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
        compiled = vm["main"](tvm.nd.array(x.numpy())).numpy()
        np.testing.assert_allclose(compiled, want[0], rtol=RTOL, atol=ATOL)
