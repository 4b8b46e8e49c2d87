"""relax.frontend.nn (TVM's nn.Module API): exported modules built and run on the VM, checked
against the same network in PyTorch with the weights copied over, and against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend import nn

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def _bind_random(module: nn.Module, scale: float = 0.2) -> None:
    for _, param in module.named_parameters():
        param.data = (RNG.standard_normal(param.shape) * scale).astype(param.dtype)


def _run(module: nn.Module, spec: dict, *inputs: np.ndarray, method: str = "forward"):
    """Export `module`, build it, run `method` on `inputs` then the bound parameters."""
    mod, params = module.export_tvm({method: spec})
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    args = [tvm.runtime.tensor(x) for x in inputs] + [p.data for _, p in params]
    return vm[method](*args)


def _copy_to_torch(module: nn.Module, torch_module) -> None:
    ours = dict(module.named_parameters())
    theirs = dict(torch_module.named_parameters())
    assert sorted(ours) == sorted(theirs)
    with torch.no_grad():
        for name, p in theirs.items():
            p.copy_(torch.from_numpy(ours[name].data.numpy()))


class MLP(nn.Module):
    def __init__(self):
        self.fc1 = nn.Linear(16, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def test_export_mlp_puts_params_after_inputs_as_tvm_does():
    mod, params = MLP().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 16), "float32")}})
    assert [name for name, _ in params] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [p.shape for _, p in params] == [[32, 16], [32], [4, 32], [4]]
    func = mod["forward"]
    assert func.attrs["num_input"] == 1
    assert len(func.params) == 5
    dims = func.params[0].struct_info.shape
    assert str(dims[0]) == "n" and int(dims[1]) == 16
    assert str(func.ret_struct_info.shape[0]) == "n"  # the symbolic batch reaches the output


def test_mlp_matches_torch_for_two_batch_sizes():
    model = MLP()
    _bind_random(model)
    ref = torch.nn.Sequential()
    ref.fc1, ref.relu, ref.fc2 = torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    _copy_to_torch(model, ref)
    mod, params = model.export_tvm({"forward": {"x": nn.spec.Tensor(("n", 16), "float32")}})
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    weights = [p.data for _, p in params]
    for batch in (1, 5):
        x = RNG.standard_normal((batch, 16)).astype("float32")
        out = vm["forward"](tvm.runtime.tensor(x), *weights).numpy()
        np.testing.assert_allclose(
            out, ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-5
        )


class Block(nn.Module):
    """A pre-norm transformer block: attention and a GELU MLP, both with residuals."""

    def __init__(self, dim=16, heads=2):
        self.heads, self.dim = heads, dim
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = nn.op.split(self.qkv(self.ln1(x)), 3, axis=2)

        def heads(t):  # (b, s, d) -> (b, h, s, d/h)
            return nn.op.permute_dims(nn.op.reshape(t, [b, s, h, d // h]), [0, 2, 1, 3])

        scores = nn.op.matmul(heads(q), nn.op.permute_dims(heads(k), [0, 1, 3, 2]))
        attn = nn.op.softmax(scores * (1.0 / (d // h) ** 0.5), axis=-1)
        ctx = nn.op.reshape(
            nn.op.permute_dims(nn.op.matmul(attn, heads(v)), [0, 2, 1, 3]), [b, s, d]
        )
        x = x + self.drop(self.proj(ctx))
        return x + self.mlp(self.ln2(x))


class TorchBlock(torch.nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim)
        )

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.reshape(b, s, self.heads, -1).permute(0, 2, 1, 3) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((attn @ v).permute(0, 2, 1, 3).reshape(b, s, d))
        return x + self.mlp(self.ln2(x))


def test_transformer_block_matches_torch():
    model = Block()
    _bind_random(model)
    names = [n for n, _ in model.named_parameters()]
    assert "mlp.0.weight" in names and "mlp.2.bias" in names  # Sequential numbers its layers
    ref = TorchBlock().eval()
    _copy_to_torch(model, ref)
    x = RNG.standard_normal((2, 5, 16)).astype("float32")
    out = _run(model, {"x": nn.spec.Tensor((2, 5, 16), "float32")}, x).numpy()
    np.testing.assert_allclose(out, ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-4)


class Layers(nn.Module):
    """Embedding -> RMSNorm -> SiLU, and conv1d / conv2d / group norm branches."""

    def __init__(self):
        self.embed = nn.Embedding(10, 8)
        self.norm = nn.RMSNorm(8, axes=-1, bias=False)
        self.conv1 = nn.Conv1D(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2D(3, 4, 3, stride=2, padding=1)
        self.gn = nn.GroupNorm(2, 4)

    def forward(self, ids, sig, img):
        e = nn.op.silu(self.norm(self.embed(ids)))
        return e, self.conv1(sig), self.gn(self.conv2(img))


def test_layers_match_torch():
    model = Layers()
    _bind_random(model, 0.5)
    ids = RNG.integers(0, 10, (2, 3)).astype("int32")
    sig = RNG.standard_normal((2, 3, 7)).astype("float32")
    img = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    spec = {
        "ids": nn.spec.Tensor((2, 3), "int32"),
        "sig": nn.spec.Tensor((2, 3, 7), "float32"),
        "img": nn.spec.Tensor((1, 3, 8, 8), "float32"),
    }
    e, c1, c2 = (t.numpy() for t in _run(model, spec, ids, sig, img))
    p = {n: torch.from_numpy(q.data.numpy()) for n, q in model.named_parameters()}
    emb = p["embed.weight"][torch.from_numpy(ids).long()]
    rms = emb * torch.rsqrt(emb.pow(2).mean(-1, keepdim=True) + 1e-5) * p["norm.weight"]
    np.testing.assert_allclose(e, torch.nn.functional.silu(rms).numpy(), rtol=1e-5, atol=1e-5)
    ref1 = torch.nn.functional.conv1d(
        torch.from_numpy(sig), p["conv1.weight"], p["conv1.bias"], padding=1
    )
    np.testing.assert_allclose(c1, ref1.numpy(), rtol=1e-4, atol=1e-4)
    conv = torch.nn.functional.conv2d(
        torch.from_numpy(img), p["conv2.weight"], p["conv2.bias"], stride=2, padding=1
    )
    ref2 = torch.nn.functional.group_norm(conv, 2, p["gn.weight"], p["gn.bias"], eps=1e-5)
    np.testing.assert_allclose(c2, ref2.numpy(), rtol=1e-4, atol=1e-4)


class Ops(nn.Module):
    def forward(self, x, y):
        a, b = nn.op.chunk(x, 2, dim=1)
        m = nn.op.maximum(a, b) - nn.op.minimum(a, 0.5)
        w = nn.op.where(x > 0.0, x, x * 2.0)
        s = nn.op.sum(w, axis=1, keepdims=True) + nn.op.mean(w, axis=[0, 1])
        t = nn.op.triu(nn.op.concat([a, b], dim=0), diagonal=1)
        full = nn.op.full([2, 2], 3.0) + nn.op.ones([2, 2]) + nn.op.zeros([2, 2])
        first_row = nn.op.take(y, nn.Tensor.from_const(np.array([0], "int32")), axis=0)
        r = nn.op.arange(0, 6, 2, dtype="float32") + nn.op.cumsum(first_row, axis=1)
        return m, w, s, t, full, nn.op.exp(nn.op.astype(x, "float64")), r


def test_ops_match_numpy():
    x = RNG.standard_normal((2, 6)).astype("float32")
    y = RNG.standard_normal((2, 3)).astype("float32")
    spec = {"x": nn.spec.Tensor((2, 6), "float32"), "y": nn.spec.Tensor((2, 3), "float32")}
    m, w, s, t, full, e, r = (o.numpy() for o in _run(Ops(), spec, x, y))
    a, b = x[:, :3], x[:, 3:]
    np.testing.assert_allclose(m, np.maximum(a, b) - np.minimum(a, 0.5), rtol=1e-6)
    np.testing.assert_allclose(w, np.where(x > 0, x, x * 2), rtol=1e-6)
    np.testing.assert_allclose(s, w.sum(1, keepdims=True) + w.mean(), rtol=1e-5)
    np.testing.assert_allclose(t, np.triu(np.concatenate([a, b]), 1))
    np.testing.assert_allclose(full, np.full((2, 2), 4.0))
    assert e.dtype == np.float64
    np.testing.assert_allclose(e, np.exp(x.astype("float64")), rtol=1e-6)
    np.testing.assert_allclose(r, np.arange(0, 6, 2) + np.cumsum(y[:1], axis=1), rtol=1e-6)
