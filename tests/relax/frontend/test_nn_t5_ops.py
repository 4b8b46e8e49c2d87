"""nn.op functions added for TVM's nn tests: sorting, resizing, 3-d and transposed convolutions
and timestep embeddings, each run through the VM and compared with torch or numpy; plus the
export forms TVM documents (tir.Var dims in specs, packed parameter names, constants)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError
from minitvm.relax.frontend import nn

RNG = np.random.default_rng(5)


def _run(model, spec, *inputs, params=()):
    mod, _ = model.export_tvm({"forward": spec})
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    args = [tvm.runtime.tensor(a) for a in (*inputs, *params)]
    return vm["forward"](*args)


def _np(out):
    return out.numpy() if hasattr(out, "numpy") else [_np(o) for o in out]


class _Fn(nn.Module):
    def __init__(self, fn):
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def test_sort_argsort_topk_match_numpy():
    x = RNG.permutation(24).reshape(4, 6).astype("float32")  # distinct values: indices are unique
    model = _Fn(
        lambda x: (
            nn.op.sort(x, axis=-1, descending=True),
            nn.op.argsort(x, axis=-1),
            nn.op.topk(x, k=2, axis=-1),
        )
    )
    (srt, idx, (vals, inds)) = _np(_run(model, {"x": nn.spec.Tensor((4, 6), "float32")}, x))
    np.testing.assert_array_equal(srt, -np.sort(-x, axis=-1))
    np.testing.assert_array_equal(idx, np.argsort(x, axis=-1))
    assert idx.dtype == np.int32  # TVM's default index dtype
    np.testing.assert_array_equal(vals, -np.sort(-x, axis=-1)[:, :2])
    np.testing.assert_array_equal(inds, np.argsort(-x, axis=-1)[:, :2])


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolate_matches_torch(mode):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((1, 2, 5, 6)).astype("float32")
    model = _Fn(lambda x: nn.op.interpolate(x, size=(10, 9), mode=mode))
    got = _np(_run(model, {"x": nn.spec.Tensor((1, 2, 5, 6), "float32")}, x))
    kwargs = {} if mode == "nearest" else {"align_corners": False}
    ref = torch.nn.functional.interpolate(torch.from_numpy(x), size=(10, 9), mode=mode, **kwargs)
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-5)


def test_interpolate_scale_factor_sets_the_size_and_bad_arguments_are_refused():
    model = _Fn(lambda x: nn.op.interpolate(x, scale_factor=2.0))
    mod, _ = model.export_tvm({"forward": {"x": nn.spec.Tensor((1, 1, 3, 4), "float32")}})
    assert [int(d) for d in mod["forward"].ret_struct_info.shape] == [1, 1, 6, 8]
    both = _Fn(lambda x: nn.op.interpolate(x, size=4, scale_factor=2.0))
    with pytest.raises(ArgumentError, match="exactly one of size and scale_factor"):
        both.export_tvm({"forward": {"x": nn.spec.Tensor((1, 1, 3, 4), "float32")}})
    exact = _Fn(lambda x: nn.op.interpolate(x, size=4, mode="nearest-exact"))
    with pytest.raises(ArgumentError, match="mode 'nearest-exact' is not supported"):
        exact.export_tvm({"forward": {"x": nn.spec.Tensor((1, 1, 3, 4), "float32")}})


def test_conv3d_and_conv_transpose1d_layers_match_torch():
    torch = pytest.importorskip("torch")
    x3 = RNG.standard_normal((1, 2, 5, 5, 5)).astype("float32")
    conv = nn.Conv3D(2, 4, 3, padding=1, bias=True)
    w3 = RNG.standard_normal((4, 2, 3, 3, 3)).astype("float32")
    b3 = RNG.standard_normal(4).astype("float32")
    got = _np(_run(conv, {"x": nn.spec.Tensor(x3.shape, "float32")}, x3, params=(w3, b3)))
    ref = torch.nn.functional.conv3d(*map(torch.from_numpy, (x3, w3, b3)), padding=1)
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)

    x1 = RNG.standard_normal((2, 3, 7)).astype("float32")
    convt = nn.ConvTranspose1D(3, 4, 3, stride=2, bias=True)
    assert convt.weight.shape == [3, 4, 3]  # PyTorch's (in, out / groups, k)
    w1 = RNG.standard_normal((3, 4, 3)).astype("float32")
    b1 = RNG.standard_normal(4).astype("float32")
    got = _np(_run(convt, {"x": nn.spec.Tensor(x1.shape, "float32")}, x1, params=(w1, b1)))
    ref = torch.nn.functional.conv_transpose1d(*map(torch.from_numpy, (x1, w1, b1)), stride=2)
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)


def _timestep_embedding_reference(t, dim, flip, shift, max_period=10000):
    """The sinusoidal embedding of DDPM / diffusers' get_timestep_embedding, in numpy."""
    half = dim // 2
    freqs = np.exp(-math.log(max_period) * np.arange(half, dtype="float64") / (half - shift))
    args = t[:, None].astype("float64") * freqs[None]
    parts = [np.cos(args), np.sin(args)] if flip else [np.sin(args), np.cos(args)]
    emb = np.concatenate(parts, axis=-1)
    return np.pad(emb, ((0, 0), (0, dim % 2)))


@pytest.mark.parametrize("dim,flip,shift", [(8, False, 1), (7, True, 0)])
def test_timesteps_match_the_sinusoidal_formula(dim, flip, shift):
    t = np.array([0, 3, 50, 999], dtype="int32")
    layer = nn.modules.Timesteps(dim, flip_sin_to_cos=flip, downscale_freq_shift=shift)
    got = _np(_run(layer, {"x": nn.spec.Tensor((4,), "int32")}, t))
    assert got.shape == (4, dim)
    ref = _timestep_embedding_reference(t, dim, flip, shift)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_timestep_embedding_is_linear_silu_linear():
    x = RNG.standard_normal((2, 4)).astype("float32")
    w1, b1 = RNG.standard_normal((6, 4)).astype("float32"), RNG.standard_normal(6).astype("float32")
    w2, b2 = RNG.standard_normal((3, 6)).astype("float32"), RNG.standard_normal(3).astype("float32")
    layer = nn.modules.TimestepEmbedding(4, 6, out_dim=3)
    got = _np(
        _run(layer, {"sample": nn.spec.Tensor((2, 4), "float32")}, x, params=(w1, b1, w2, b2))
    )
    h = x @ w1.T + b1
    h = h / (1 + np.exp(-h))
    np.testing.assert_allclose(got, h @ w2.T + b2, rtol=1e-4, atol=1e-5)
    with pytest.raises(ArgumentError, match="'gelu' is not supported"):
        nn.modules.TimestepEmbedding(4, 6, act_fn="gelu")


def test_attention_layer_matches_torch_sdpa():
    torch = pytest.importorskip("torch")
    heads, dim_head, qdim, cdim = 2, 4, 8, 6
    layer = nn.modules.Attention(qdim, cross_attention_dim=cdim, heads=heads, dim_head=dim_head)
    hs = RNG.standard_normal((2, 5, qdim)).astype("float32")
    ctx = RNG.standard_normal((2, 3, cdim)).astype("float32")
    wq = RNG.standard_normal((8, qdim)).astype("float32")
    wk, wv = (RNG.standard_normal((8, cdim)).astype("float32") for _ in range(2))
    wo, bo = RNG.standard_normal((qdim, 8)).astype("float32"), RNG.standard_normal(qdim)
    bo = bo.astype("float32")
    spec = {
        "hidden_states": nn.spec.Tensor(hs.shape, "float32"),
        "encoder_hidden_states": nn.spec.Tensor(ctx.shape, "float32"),
    }
    got = _np(_run(layer, spec, hs, ctx, params=(wq, wk, wv, wo, bo)))
    t = torch.from_numpy

    def split(x):  # (b, s, heads*d) -> (b, heads, s, d)
        return x.reshape(x.shape[0], x.shape[1], heads, dim_head).transpose(1, 2)

    q, k, v = split(t(hs) @ t(wq).T), split(t(ctx) @ t(wk).T), split(t(ctx) @ t(wv).T)
    att = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    ref = att.transpose(1, 2).reshape(2, 5, 8) @ t(wo).T + t(bo)
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)


def test_spec_dims_may_be_tir_vars_shared_by_name():
    n = tvm.tir.Var("batch_size", "int64")
    model = _Fn(nn.op.relu)
    mod, _ = model.export_tvm({"forward": {"x": nn.spec.Tensor([n, 8], "float32")}})
    (param,) = mod["forward"].params
    assert param.struct_info.shape[0].name == "batch_size"
    x = RNG.standard_normal((3, 8)).astype("float32")
    got = _np(_run(model, {"x": nn.spec.Tensor([n, 8], "float32")}, x))
    np.testing.assert_array_equal(got, np.maximum(x, 0))
    with pytest.raises(ArgumentError, match="non-negative int or a name"):
        nn.spec.Tensor([tvm.tir.Var("k", "int32"), 8], "float32")


def test_packed_parameters_bind_under_identifier_names():
    class Two(nn.Module):
        def __init__(self):
            self.linear_1 = nn.Linear(3, 2, bias=False)

        def forward(self, x):
            return self.linear_1(x)

    spec = {"x": nn.spec.Tensor((1, 3), "float32"), "$": {"param_mode": "packed"}}
    mod, _ = Two().export_tvm({"forward": spec})
    names = [b.var.name_hint for b in mod["forward"].body.blocks[0].bindings]
    # TVM's names: the packed field binds as linear_1_weight, its transpose as matmul_1_weight
    assert names[:2] == ["linear_1_weight", "matmul_1_weight"]


def test_from_const_narrows_64_bit_numpy_data_like_relax_const():
    assert nn.Tensor.from_const(np.zeros((2,), "float64")).dtype == "float32"
    assert nn.Tensor.from_const(np.zeros((2,), "int64")).dtype == "int32"
    assert nn.Tensor.from_const(np.zeros((2,), "float16")).dtype == "float16"


def test_scalar_on_the_left_keeps_the_tensor_first_and_the_value():
    x = RNG.standard_normal((2, 3)).astype("float32")
    model = _Fn(lambda x: (2 + x, 3 * x, 1 - x))
    mod, _ = model.export_tvm({"forward": {"x": nn.spec.Tensor((2, 3), "float32")}})
    first = mod["forward"].body.blocks[0].bindings[0].value
    assert first.args[0] is mod["forward"].params[0]  # add(x, 2), as TVM emits it
    add, mul, sub = _np(_run(model, {"x": nn.spec.Tensor((2, 3), "float32")}, x))
    np.testing.assert_allclose(add, 2 + x, rtol=1e-6)
    np.testing.assert_allclose(mul, 3 * x, rtol=1e-6)
    np.testing.assert_allclose(sub, 1 - x, rtol=1e-6)


def test_extern_passes_python_ints_as_prim_values():
    seen = {}

    @tvm.register_func("testing.t5.axpb", override=True)
    def _axpb(x, a, b, out):
        seen["scalars"] = (a, b)
        out.copyfrom(x.numpy() * a + b)

    class Model(nn.Module):
        def forward(self, x):
            out = nn.Tensor.placeholder((3,), "float32")
            return nn.op.extern("testing.t5.axpb", [x, 2, 5], out=out)

    x = np.arange(3, dtype="float32")
    got = _np(_run(Model(), {"x": nn.spec.Tensor((3,), "float32")}, x))
    np.testing.assert_allclose(got, x * 2 + 5)
    assert seen["scalars"] == (2, 5)

    class Bad(nn.Module):
        def forward(self, x):
            return nn.op.extern("testing.t5.axpb", [x, {}], out=x)

    with pytest.raises(ArgumentError, match="got dict"):
        Bad().export_tvm({"forward": {"x": nn.spec.Tensor((3,), "float32")}})
