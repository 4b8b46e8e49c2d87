"""Each PyTorch op converter against PyTorch eager on random inputs, through torch.fx and
torch.export (plain and after run_decompositions), evaluated by the graph-level reference
evaluator; a few cases are also compiled and run on the VM."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import minitvm as tvm
from minitvm import relax
from minitvm.relax import eval_ref
from minitvm.relax.frontend.torch import from_exported_program, from_fx


class Fn(nn.Module):
    """A module whose forward is the given function (traced through by fx and export)."""

    def __init__(self, fn, *modules):
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(modules)


class Fn1(Fn):
    def forward(self, x0):
        return self.fn(self, x0)


class Fn2(Fn):
    def forward(self, x0, x1):
        return self.fn(self, x0, x1)


class Fn3(Fn):
    def forward(self, x0, x1, x2):
        return self.fn(self, x0, x1, x2)


class Fn4(Fn):
    def forward(self, x0, x1, x2, x3):
        return self.fn(self, x0, x1, x2, x3)


def _with_arity(model, n):
    """fx traces only named parameters: give the model a forward(self, x0, ..., x{n-1})."""
    model.__class__ = (Fn1, Fn2, Fn3, Fn4)[n - 1]
    return model


def _f(fn):
    return lambda: Fn(lambda self, *xs: fn(*xs))


def _m(factory):
    return lambda: Fn(lambda self, *xs: self.mods[0](*xs), factory())


def _randomize(model, arity):
    if isinstance(model, Fn):
        _with_arity(model, arity)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if "running_var" in name:
                buf.copy_(torch.rand(buf.shape, generator=gen) + 0.5)
            elif "running_mean" in name:
                buf.copy_(torch.randn(buf.shape, generator=gen))
    return model.eval()


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        if isinstance(s, tuple) and s and s[0] == "int":
            out.append(torch.from_numpy(rng.integers(0, s[2], s[1]).astype("int64")))
        else:
            out.append(torch.from_numpy(rng.standard_normal(s).astype("float32")))
    return out


def _flat(value):
    if isinstance(value, list | tuple):
        return [v for item in value for v in _flat(item)]
    return [value]


def _numpy(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _check(mod, xs, want, rtol=1e-4, atol=1e-5):
    got = _flat(eval_ref.evaluate(mod, *[x.numpy() for x in xs]))
    want = [w.detach().numpy() for w in _flat(want)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(_numpy(g), w, rtol=rtol, atol=atol)


def _info(xs):
    return [(tuple(x.shape), str(x.dtype).removeprefix("torch.")) for x in xs]


def _import_both(model, xs):
    """(fx module, export module, decomposed export module)."""
    gm = torch.fx.symbolic_trace(model)
    fx_mod = from_fx(gm, _info(xs))
    ep = torch.export.export(model, tuple(xs))
    return fx_mod, from_exported_program(ep), from_exported_program(ep.run_decompositions())


# (id, model factory, input shapes); ("int", shape, high) makes an int64 index tensor
CASES = [
    ("conv2d", _m(lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1)), [(2, 3, 9, 9)]),
    (
        "conv2d_groups_dilation",
        _m(lambda: nn.Conv2d(4, 8, 3, padding=2, dilation=2, groups=2)),
        [(1, 4, 7, 7)],
    ),
    ("conv2d_nobias", _m(lambda: nn.Conv2d(3, 4, (1, 3), bias=False)), [(1, 3, 5, 5)]),
    (
        "conv2d_same",
        _m(lambda: nn.Conv2d(2, 3, (3, 4), padding="same", dilation=(1, 2))),
        [(1, 2, 6, 7)],
    ),
    ("conv1d_same", _f(lambda x, w: F.conv1d(x, w, padding="same")), [(1, 2, 9), (3, 2, 4)]),
    ("conv1d", _m(lambda: nn.Conv1d(3, 5, 3, stride=2, padding=1)), [(2, 3, 11)]),
    (
        "conv_transpose2d",
        _m(lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)),
        [(1, 4, 5, 5)],
    ),
    ("conv_transpose1d", _m(lambda: nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1)), [(2, 3, 6)]),
    (
        "conv_transpose2d_functional",
        _f(lambda x, w: F.conv_transpose2d(x, w, stride=(1, 2), dilation=2)),
        [(1, 2, 4, 4), (2, 3, 3, 3)],
    ),
    ("linear", _m(lambda: nn.Linear(6, 4)), [(3, 6)]),
    ("linear_3d", _m(lambda: nn.Linear(6, 4)), [(2, 3, 6)]),
    ("matmul", _f(torch.matmul), [(2, 3, 4), (2, 4, 5)]),
    ("matmul_broadcast", _f(lambda a, b: a @ b), [(2, 3, 4), (4, 5)]),
    ("bmm", _f(torch.bmm), [(2, 3, 4), (2, 4, 5)]),
    ("mm", _f(torch.mm), [(3, 4), (4, 5)]),
    ("batch_norm2d", _m(lambda: nn.BatchNorm2d(3)), [(2, 3, 4, 4)]),
    ("batch_norm1d", _m(lambda: nn.BatchNorm1d(3)), [(4, 3)]),
    (
        "batch_norm_functional",
        _f(lambda x: F.batch_norm(x, torch.full((3,), 0.5), torch.full((3,), 2.0))),
        [(2, 3, 4)],
    ),
    ("layer_norm", _m(lambda: nn.LayerNorm(6)), [(2, 3, 6)]),
    ("layer_norm_2d", _m(lambda: nn.LayerNorm((3, 6), elementwise_affine=False)), [(2, 3, 6)]),
    ("group_norm", _m(lambda: nn.GroupNorm(2, 4)), [(2, 4, 3, 3)]),
    ("relu", _f(F.relu), [(3, 4)]),
    ("relu_method", _f(lambda x: x.relu()), [(3, 4)]),
    ("relu6", _m(nn.ReLU6), [(3, 4)]),
    ("gelu", _m(nn.GELU), [(3, 4)]),
    ("gelu_tanh", _f(lambda x: F.gelu(x, approximate="tanh")), [(3, 4)]),
    ("silu", _m(nn.SiLU), [(3, 4)]),
    ("sigmoid", _f(torch.sigmoid), [(3, 4)]),
    ("tanh", _m(nn.Tanh), [(3, 4)]),
    ("hardswish", _m(nn.Hardswish), [(3, 4)]),
    ("hardsigmoid", _f(F.hardsigmoid), [(3, 4)]),
    ("hardtanh", _m(lambda: nn.Hardtanh(-0.5, 0.5)), [(3, 4)]),
    ("leaky_relu", _m(lambda: nn.LeakyReLU(0.2)), [(3, 4)]),
    ("softmax", _m(lambda: nn.Softmax(dim=1)), [(2, 5, 3)]),
    ("log_softmax", _f(lambda x: F.log_softmax(x, dim=-1)), [(2, 5)]),
    ("exp_log_sqrt", _f(lambda x: torch.sqrt(torch.exp(x)) + torch.log(x.abs() + 1)), [(3, 4)]),
    ("rsqrt_pow", _f(lambda x: torch.rsqrt(x * x + 1) + x.pow(2) + x**3), [(3, 4)]),
    ("clamp", _f(lambda x: torch.clamp(x, min=-0.5) + x.clamp(-1, 1)), [(3, 4)]),
    ("max_pool2d", _m(lambda: nn.MaxPool2d(3, stride=2, padding=1)), [(1, 2, 7, 7)]),
    ("max_pool2d_ceil", _f(lambda x: F.max_pool2d(x, 2, ceil_mode=True)), [(1, 2, 5, 5)]),
    ("avg_pool2d", _m(lambda: nn.AvgPool2d(2)), [(1, 2, 6, 6)]),
    (
        "avg_pool2d_pad",
        _f(lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)),
        [(1, 2, 5, 5)],
    ),
    ("max_pool1d", _m(lambda: nn.MaxPool1d(2)), [(2, 3, 8)]),
    ("avg_pool1d", _f(lambda x: F.avg_pool1d(x, 3, 2)), [(2, 3, 9)]),
    ("adaptive_avg_pool2d", _m(lambda: nn.AdaptiveAvgPool2d((2, 3))), [(1, 2, 6, 6)]),
    ("adaptive_avg_pool2d_1", _f(lambda x: F.adaptive_avg_pool2d(x, 1)), [(2, 3, 5, 5)]),
    ("adaptive_avg_pool1d", _m(lambda: nn.AdaptiveAvgPool1d(2)), [(2, 3, 8)]),
    ("add_sub_mul_div", _f(lambda a, b: (a + b) * (a - b) / (b.abs() + 1)), [(2, 3, 4), (3, 4)]),
    ("scalars", _f(lambda a: 2.0 * a - 1 + a / 3 - (1 - a)), [(3, 4)]),
    (
        "torch_add_alpha",
        _f(lambda a, b: torch.add(a, b, alpha=2) + torch.sub(a, b, alpha=3)),
        [(3, 4), (3, 4)],
    ),
    ("int_promotes", _f(lambda i: i * 0.5 + i / 2), [("int", (3, 4), 10)]),
    ("maximum_minimum", _f(lambda a, b: torch.maximum(a, b) + torch.minimum(a, b)), [(3,), (2, 3)]),
    ("flatten", _f(lambda x: torch.flatten(x, 1)), [(2, 3, 4, 5)]),
    ("flatten_module", _m(lambda: nn.Flatten(1, 2)), [(2, 3, 4, 5)]),
    (
        "view_reshape",
        _f(lambda x: x.view(2, -1).reshape(4, 3, 2) + torch.reshape(x, (4, 3, 2))),
        [(2, 3, 4)],
    ),
    ("view_size", _f(lambda x: x.view(x.size(0), -1) + x.reshape(x.shape[0], -1)), [(2, 3, 4)]),
    (
        "permute_transpose",
        _f(lambda x: x.permute(2, 0, 1).transpose(1, 2).contiguous()),
        [(2, 3, 4)],
    ),
    ("torch_permute_t", _f(lambda x, y: torch.permute(x, (1, 0)) + y.t()), [(3, 4), (3, 4)]),
    (
        "unsqueeze_squeeze",
        _f(lambda x: x.unsqueeze(1).squeeze(1).unsqueeze(-1).squeeze()),
        [(2, 3)],
    ),
    ("expand", _f(lambda x: x.expand(2, 3, 4) + x.expand(2, -1, -1)), [(1, 3, 4)]),
    (
        "cat_stack",
        _f(lambda a, b: torch.cat([a, b], dim=1) + torch.stack([a, b], 1).reshape(2, 6)),
        [(2, 3), (2, 3)],
    ),
    (
        "split_chunk",
        _f(lambda x: (x.split(2, dim=1)[0] * 2, x.split(2, 1)[2], torch.chunk(x, 3, -1)[1])),
        [(2, 5, 6)],
    ),
    ("split_sizes", _f(lambda x: torch.split(x, [1, 3], dim=0)), [(4, 3)]),
    ("unbind", _f(lambda x: x.unbind(1)), [(2, 3)]),
    ("getitem_slices", _f(lambda x: x[:, 1:3] + x[:, -2:][..., ::2].sum()), [(3, 4, 4)]),
    (
        "getitem_int_none",
        _f(lambda x: x[0, None, :, 2] + x[-1, ..., 1:2].reshape(1, 4)),
        [(3, 4, 4)],
    ),
    (
        "mean_sum",
        _f(lambda x: x.mean(dim=1) + x.sum(-1, keepdim=True).squeeze(-1) + x.mean()),
        [(2, 3, 3)],
    ),
    (
        "torch_mean_dims",
        _f(
            lambda x: (
                torch.mean(x, (2, 3), keepdim=True)
                + torch.sum(x, dim=[1, 2, 3]).reshape(-1, 1, 1, 1)
            )
        ),
        [(2, 3, 4, 5)],
    ),
    ("amax", _f(lambda x: torch.amax(x, dim=1)), [(2, 3, 4)]),
    ("embedding", _m(lambda: nn.Embedding(10, 4)), [("int", (2, 5), 10)]),
    (
        "embedding_functional",
        lambda: Fn(lambda self, i: F.embedding(i, self.mods[0].weight), nn.Embedding(7, 3)),
        [("int", (4,), 7)],
    ),
    ("dropout", _m(lambda: nn.Dropout(0.5)), [(3, 4)]),
    ("dropout_functional", _f(lambda x: F.dropout(x, 0.1, training=False) + 1), [(3, 4)]),
    ("sdpa", _f(F.scaled_dot_product_attention), [(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3)]),
    (
        "sdpa_causal_scale",
        _f(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)),
        [(1, 2, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4)],
    ),
    (
        "sdpa_float_mask",
        _f(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
        [(1, 2, 5, 4), (1, 2, 6, 4), (1, 2, 6, 4), (5, 6)],
    ),
    (
        "arange_full",
        _f(lambda x: x + torch.arange(4) + torch.ones(3, 4) * 2 + torch.zeros_like(x)),
        [(3, 4)],
    ),
    (
        "rsub_to_other",
        _f(lambda a, b: torch.rsub(a, b, alpha=2) + 1 - a + b.to(a)),
        [(3, 4), ("int", (3, 4), 5)],
    ),
    ("to_float", _f(lambda i: i.float() * 2 + i.to(torch.float32)), [("int", (3,), 5)]),
    (
        "pad",
        _f(
            lambda x: (
                F.pad(x, (1, 2)).sum(-1, keepdim=True)
                + F.pad(x, (1, 1, 2, 0), value=0.5)[:, 2:, 1:5]
            )
        ),
        [(2, 3, 4)],
    ),
    ("zero_pad_module", _m(lambda: nn.ZeroPad2d((1, 0, 2, 1))), [(1, 2, 3, 3)]),
    ("softplus", _m(lambda: nn.Softplus(beta=2.0)), [(3, 4)]),
    (
        "floor_divide_remainder",
        _f(lambda a, b: torch.floor_divide(a, b.abs() + 1) + a % 3 + a // 2),
        [(3, 4), (3, 4)],
    ),
    (
        "baddbmm",
        _f(lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=2)),
        [(2, 3, 5), (2, 3, 4), (2, 4, 5)],
    ),
    ("einsum", _f(lambda a, b: torch.einsum("bij,bjk->bik", a, b)), [(2, 3, 4), (2, 4, 5)]),
    (
        "argmax_argmin",
        _f(lambda x: (x.argmax(-1), torch.argmin(x, dim=1, keepdim=True))),
        [(2, 3, 4)],
    ),
    (
        "max_min_dim",
        _f(lambda x: (torch.max(x, 1)[0], x.min(dim=-1, keepdim=True)[1], x.max())),
        [(2, 3, 4)],
    ),
    ("cumsum", _f(lambda x: torch.cumsum(x, dim=1)), [(2, 3, 4)]),
    ("repeat_tile", _f(lambda x: (x.repeat(2, 1, 3), torch.tile(x, (2,)))), [(2, 3)]),
    ("repeat_interleave", _f(lambda x: x.repeat_interleave(2, dim=1)), [(2, 3)]),
    ("flip", _f(lambda x: torch.flip(x, [0, 2])), [(2, 3, 4)]),
    (
        "var_std",
        _f(lambda x: (x.var(dim=1), torch.std(x, -1, keepdim=True), x.var(unbiased=False))),
        [(2, 3, 4)],
    ),
    ("masked_fill", _f(lambda x: x.masked_fill(x > 0, -1.0)), [(3, 4)]),
    ("index_select", _f(lambda x, i: torch.index_select(x, 1, i)), [(3, 4), ("int", (5,), 4)]),
    (
        "new_ones_full",
        _f(lambda x: x + x.new_ones(3, 4) + x.new_full((3, 4), 2.5) + x.new_zeros((4,))),
        [(3, 4)],
    ),
    (
        "index_tensor",
        _f(lambda x, i: x[i] + x[:, i].sum() + x[:, :, i].sum()),
        [(4, 4, 4), ("int", (3,), 4)],
    ),
    ("reciprocal", _f(lambda x: torch.reciprocal(x.abs() + 1)), [(3, 4)]),
    ("tuple_output", _f(lambda x: (x + 1, (x * 2, x.relu()))), [(3,)]),
]


@pytest.mark.parametrize("name,factory,shapes", CASES, ids=[c[0] for c in CASES])
def test_op_matches_torch_through_fx_and_export(name, factory, shapes):
    model = _randomize(factory(), len(shapes))
    xs = _inputs(shapes)
    with torch.no_grad():
        want = model(*xs)
    gm = torch.fx.symbolic_trace(model)
    _check(from_fx(gm, _info(xs)), xs, want)
    _check(from_exported_program(torch.export.export(model, tuple(xs))), xs, want)


@tvm.testing.slow
@pytest.mark.parametrize("name,factory,shapes", CASES, ids=[c[0] for c in CASES])
def test_op_matches_torch_after_run_decompositions(name, factory, shapes):
    model = _randomize(factory(), len(shapes))
    xs = _inputs(shapes)
    with torch.no_grad():
        want = model(*xs)
    ep = torch.export.export(model, tuple(xs)).run_decompositions()
    _check(from_exported_program(ep), xs, want)


def test_pad_modes_match_torch_through_fx():
    # torch.export turns reflect/replicate padding into advanced indexing (aten.index.Tensor)
    model = _randomize(
        _f(
            lambda x: (
                F.pad(x, (1, 2, 2, 1), mode="reflect") + F.pad(x, (1, 2, 2, 1), mode="replicate")
            )
        )(),
        1,
    )
    xs = _inputs([(1, 2, 4, 5)])
    with torch.no_grad():
        want = model(*xs)
    _check(from_fx(torch.fx.symbolic_trace(model), [((1, 2, 4, 5), "float32")]), xs, want)


def _has(name):
    fn = relax.op
    for part in name.split("."):
        fn = getattr(fn, part, None)
    return fn is not None


NEEDS_OPS = [
    (
        "interpolate_nearest",
        _f(lambda x: F.interpolate(x, scale_factor=2, mode="nearest")),
        [(1, 2, 3, 4)],
        "image.resize2d",
    ),
    (
        "interpolate_bilinear",
        _f(lambda x: F.interpolate(x, size=(5, 7), mode="bilinear")),
        [(1, 2, 3, 4)],
        "image.resize2d",
    ),
    (
        "interpolate_bilinear_corners",
        _f(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)),
        [(1, 2, 3, 4)],
        "image.resize2d",
    ),
    (
        "interpolate_recompute",
        _f(
            lambda x: F.interpolate(
                x, scale_factor=1.5, mode="nearest", recompute_scale_factor=True
            )
        ),
        [(1, 2, 4, 5)],
        "image.resize2d",
    ),
    ("upsample_module", _m(lambda: nn.Upsample(scale_factor=2)), [(1, 2, 3, 3)], "image.resize2d"),
    (
        "sdpa_bool_mask",
        _f(
            lambda q, k, v: F.scaled_dot_product_attention(
                q, k, v, attn_mask=torch.ones(5, 5, dtype=torch.bool).tril()
            )
        ),
        [(1, 2, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4)],
        "where",
    ),
    ("erf", _f(torch.erf), [(3, 4)], "erf"),
    (
        "comparisons",
        _f(lambda a, b: torch.where(a > b, a, b) + (a <= 0).float()),
        [(3, 4), (3, 4)],
        "where",
    ),
]


@pytest.mark.parametrize("name,factory,shapes,op", NEEDS_OPS, ids=[c[0] for c in NEEDS_OPS])
def test_op_needing_new_relax_ops_matches_torch(name, factory, shapes, op):
    if not _has(op):
        pytest.skip(f"relax.op.{op} is not available yet")
    model = _randomize(factory(), len(shapes))
    xs = _inputs(shapes)
    with torch.no_grad():
        want = model(*xs)
    for mod in _import_both(model, xs):
        _check(mod, xs, want)


def test_dynamic_batch_becomes_a_symbolic_dim():
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2)
    ).eval()
    x = torch.randn(3, 3, 6, 6)
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (x,), dynamic_shapes={"input": {0: batch}})
    mod = from_exported_program(ep)
    (param,) = mod["main"].params
    first = param.struct_info.shape[0]
    assert isinstance(first, tvm.tir.Var)
    out_dim = mod["main"].ret_struct_info.fields[0].shape[0]
    assert out_dim is first or tvm.ir.structural_equal(out_dim, first, map_free_vars=False)
    for n in (1, 5):
        xn = torch.randn(n, 3, 6, 6)
        with torch.no_grad():
            _check(mod, [xn], (model(xn),))


def test_fx_symbolic_dim_from_input_info_string():
    model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(-1)).eval()
    mod = from_fx(torch.fx.symbolic_trace(model), [(("n", 4), "float32")])
    assert isinstance(mod["main"].params[0].struct_info.shape[0], tvm.tir.Var)
    for n in (1, 6):
        x = torch.randn(n, 4)
        with torch.no_grad():
            _check(mod, [x], model(x))


def test_imported_ops_compile_and_run_on_the_vm():
    model = Fn(
        lambda self, x: F.gelu(self.mods[1](F.max_pool2d(F.relu(self.mods[0](x)), 2).flatten(1))),
        nn.Conv2d(2, 3, 3, padding=1),
        nn.Linear(3 * 3 * 3, 5),
    )
    model = _randomize(model, 1)
    x = torch.randn(2, 2, 6, 6)
    ep = torch.export.export(model, (x,))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(
        vm["main"](tvm.nd.array(x.numpy())).numpy(), want, rtol=1e-4, atol=1e-5
    )
