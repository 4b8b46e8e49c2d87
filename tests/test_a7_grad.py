"""Gradient rules of the importer ops added in relax/op/grad_more.py (transposed and 3-D convs,
einsum, gather_elements, cumprod, 1-D pools, resize2d, attention, prelu, rms_norm), checked in
float64 against torch.autograd, through the reference interpreter and compiled by relax.build."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError
from minitvm.relax import op as R
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.transform.gradient import gradient

torch = pytest.importorskip("torch")
T = torch
F = torch.nn.functional


def _u(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


def _distinct(*shape):
    """No ties inside a pooling window."""
    n = int(np.prod(shape))
    return lambda rng: rng.permutation(n).reshape(shape) * 0.1 - n * 0.05


def _ints(lo, hi, *shape):
    return lambda rng: rng.integers(lo, hi, shape).astype("int64")


def _with_zeros(*shape):
    """Rows of a (.., W) tensor holding no zero, one zero, and two zeros."""

    def gen(rng):
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        x[..., 1, 2] = 0.0
        x[..., 2, 1] = x[..., 2, 3] = 0.0
        return x

    return gen


def _exclusive_cumprod(x, dim):
    ones = T.ones_like(x.narrow(dim, 0, 1))
    return T.cat([ones, x.cumprod(dim).narrow(dim, 0, x.shape[dim] - 1)], dim)


def _sdpa(q, k, v, bias=None, scale=None, causal=None):
    """torch's attention in TVM's BSNH layout; causal "BottomRight" as an explicit mask."""
    qh, kh, vh = (t.permute(0, 2, 1, 3) for t in (q, k, v))
    mask = bias
    if causal == "BottomRight":
        s, t = q.shape[1], k.shape[1]
        keep = T.ones(s, t, dtype=T.bool).tril(t - s)
        mask = T.zeros(s, t, dtype=q.dtype).masked_fill(~keep, float("-inf"))
    out = F.scaled_dot_product_attention(
        qh, kh, vh, attn_mask=mask, is_causal=causal == "TopLeft", scale=scale
    )
    return out.permute(0, 2, 1, 3)


def _resize(method, mode, **kw):
    return lambda x: R.image.resize2d(x, (5, 7), method=method,
                                      coordinate_transformation_mode=mode, **kw)  # fmt: skip


# name -> (relax builder, torch function, float64 input generators, positions to differentiate)
CASES = {
    "conv2d_transpose": (
        lambda x, w: R.nn.conv2d_transpose(x, w, strides=2, padding=1, output_padding=1),
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        [_u(-1, 1, 2, 3, 4, 5), _u(-1, 1, 3, 4, 3, 3)],
    ),
    "conv2d_transpose_groups_dilation": (
        lambda x, w: R.nn.conv2d_transpose(
            x, w, strides=(2, 1), padding=(1, 0), dilation=2, groups=2
        ),
        lambda x, w: F.conv_transpose2d(x, w, stride=(2, 1), padding=(1, 0), dilation=2, groups=2),
        [_u(-1, 1, 1, 4, 3, 4), _u(-1, 1, 4, 3, 2, 3)],
    ),
    "conv2d_transpose_oihw": (
        lambda x, w: R.nn.conv2d_transpose(x, w, strides=2, kernel_layout="OIHW"),
        lambda x, w: F.conv_transpose2d(x, w.transpose(0, 1), stride=2),
        [_u(-1, 1, 2, 3, 3, 4), _u(-1, 1, 2, 3, 2, 3)],
    ),
    "conv1d_transpose": (
        lambda x, w: R.nn.conv1d_transpose(x, w, 2, 1, 1, groups=2),
        lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1, groups=2),
        [_u(-1, 1, 2, 4, 5), _u(-1, 1, 4, 3, 3)],
    ),
    "conv3d": (
        lambda x, w: R.nn.conv3d(x, w, strides=(2, 1, 2), padding=1, dilation=(1, 2, 1)),
        lambda x, w: F.conv3d(x, w, stride=(2, 1, 2), padding=1, dilation=(1, 2, 1)),
        [_u(-1, 1, 2, 3, 5, 4, 6), _u(-1, 1, 4, 3, 3, 2, 3)],
    ),
    "conv3d_groups": (
        lambda x, w: R.nn.conv3d(x, w, strides=2, groups=2),
        lambda x, w: F.conv3d(x, w, stride=2, groups=2),
        [_u(-1, 1, 1, 4, 4, 3, 5), _u(-1, 1, 6, 2, 2, 2, 2)],
    ),
    "einsum_batch_matmul": (
        lambda a, b: R.einsum([a, b], "bij,bjk->bik"),
        lambda a, b: T.einsum("bij,bjk->bik", a, b),
        [_u(-1, 1, 2, 3, 4), _u(-1, 1, 2, 4, 5)],
    ),
    "einsum_implicit_three": (
        lambda a, b, c: R.einsum([a, b, c], "ij,jk,kl"),
        lambda a, b, c: T.einsum("ij,jk,kl", a, b, c),
        [_u(-1, 1, 3, 4), _u(-1, 1, 4, 2), _u(-1, 1, 2, 5)],
    ),
    "einsum_ellipsis_own_label": (
        lambda a, b: R.einsum([a, b], "...i,k->...i"),
        lambda a, b: T.einsum("...i,k->...i", a, b),
        [_u(-1, 1, 2, 3, 4), _u(-1, 1, 5)],
    ),
    "einsum_broadcast_one": (
        lambda a, b: R.einsum([a, b], "ij,ij->i"),
        lambda a, b: T.einsum("ij,ij->i", a.expand(3, 4), b),
        [_u(-1, 1, 3, 1), _u(-1, 1, 3, 4)],
    ),
    "gather_elements": (
        lambda d, i: R.gather_elements(d, i, 1),
        lambda d, i: T.gather(d, 1, i % 4),
        [_u(-1, 1, 3, 4), _ints(-4, 4, 3, 6)],
        [0],
    ),
    "cumprod_zeros": (
        lambda x: R.cumprod(x, 1),
        lambda x: x.cumprod(1),
        [_with_zeros(2, 4, 5)],
    ),
    "cumprod_exclusive_zeros": (
        lambda x: R.cumprod(x, -1, exclusive=True),
        lambda x: _exclusive_cumprod(x, -1),
        [_with_zeros(4, 5)],
    ),
    "cumprod_flat": (
        lambda x: R.cumprod(x),
        lambda x: x.reshape(-1).cumprod(0),
        [_u(0.5, 1.5, 2, 3)],
    ),
    "max_pool1d": (
        lambda x: R.nn.max_pool1d(x, 3, 2, (1, 1), dilation=2, ceil_mode=True),
        lambda x: F.max_pool1d(x, 3, 2, 1, dilation=2, ceil_mode=True),
        [_distinct(2, 3, 10)],
    ),
    "avg_pool1d": (
        lambda x: R.nn.avg_pool1d(x, 3, 2, (1, 1), count_include_pad=True),
        lambda x: F.avg_pool1d(x, 3, 2, 1, count_include_pad=True),
        [_u(-1, 1, 2, 3, 8)],
    ),
    "avg_pool1d_no_pad_count": (
        lambda x: R.nn.avg_pool1d(x, 2, 1, (1, 0)),
        lambda x: F.avg_pool1d(F.pad(x, (1, 0)), 2, 1) * T.tensor([2.0] + [1.0] * 6),
        [_u(-1, 1, 2, 3, 7)],
    ),
    "adaptive_avg_pool1d_uneven": (
        lambda x: R.nn.adaptive_avg_pool1d(x, 3),
        lambda x: F.adaptive_avg_pool1d(x, 3),
        [_u(-1, 1, 2, 3, 7)],
    ),
    "adaptive_avg_pool2d_uneven": (
        lambda x: R.nn.adaptive_avg_pool2d(x, (2, 3)),
        lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
        [_u(-1, 1, 2, 3, 5, 7)],
    ),
    "resize2d_bilinear": (
        _resize("linear", "half_pixel"),
        lambda x: F.interpolate(x, (5, 7), mode="bilinear", align_corners=False),
        [_u(-1, 1, 2, 3, 3, 4)],
    ),
    "resize2d_bilinear_down_align_corners": (
        lambda x: R.image.resize2d(x, (2, 3), coordinate_transformation_mode="align_corners"),
        lambda x: F.interpolate(x, (2, 3), mode="bilinear", align_corners=True),
        [_u(-1, 1, 1, 2, 5, 6)],
    ),
    "resize2d_nearest": (
        _resize("nearest_neighbor", "asymmetric", rounding_method="floor"),
        lambda x: F.interpolate(x, (5, 7), mode="nearest"),
        [_u(-1, 1, 2, 3, 3, 4)],
    ),
    "resize2d_bicubic": (
        _resize("cubic", "half_pixel", cubic_alpha=-0.75),
        lambda x: F.interpolate(x, (5, 7), mode="bicubic", align_corners=False),
        [_u(-1, 1, 1, 2, 3, 4)],
    ),
    "attention_bias": (
        lambda q, k, v, b: R.nn.attention(q, k, v, b),
        lambda q, k, v, b: _sdpa(q, k, v, b),
        [
            _u(-1, 1, 2, 3, 2, 4),
            _u(-1, 1, 2, 5, 2, 4),
            _u(-1, 1, 2, 5, 2, 3),
            _u(-1, 1, 2, 1, 3, 5),
        ],
    ),
    "attention_causal_top_left": (
        lambda q, k, v: R.nn.attention(q, k, v, scale=0.3, causal_mask="TopLeft"),
        lambda q, k, v: _sdpa(q, k, v, scale=0.3, causal="TopLeft"),
        [_u(-1, 1, 1, 4, 2, 3), _u(-1, 1, 1, 4, 2, 3), _u(-1, 1, 1, 4, 2, 3)],
    ),
    "attention_causal_bottom_right": (
        lambda q, k, v: R.nn.attention(q, k, v, causal_mask="BottomRight"),
        lambda q, k, v: _sdpa(q, k, v, causal="BottomRight"),
        [_u(-1, 1, 1, 3, 1, 4), _u(-1, 1, 1, 5, 1, 4), _u(-1, 1, 1, 5, 1, 2)],
    ),
    "prelu": (
        lambda x, a: R.nn.prelu(x, a),
        F.prelu,
        [_u(-1, 1, 2, 3, 4), _u(0.1, 0.5, 3)],
    ),
    "prelu_last_axis": (
        lambda x, a: R.nn.prelu(x, a, axis=-1),
        lambda x, a: T.where(x > 0, x, x * a),
        [_u(-1, 1, 2, 3, 4), _u(0.1, 0.5, 4)],
    ),
    "rms_norm": (
        lambda x, w: R.nn.rms_norm(x, w, -1, 1e-5),
        lambda x, w: F.rms_norm(x, (4,), w, 1e-5),
        [_u(-1, 1, 2, 3, 4), _u(0.5, 1.5, 4)],
    ),
    "rms_norm_two_axes": (
        lambda x, w: R.nn.rms_norm(x, w, [1, 2], 1e-3),
        lambda x, w: F.rms_norm(x, (3, 4), w, 1e-3),
        [_u(-1, 1, 2, 3, 4), _u(0.5, 1.5, 3, 4)],
    ),
}


def _adjoint(build, inputs, weight, wrt):
    params = [
        relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, str(a.dtype)))
        for k, a in enumerate(inputs)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(build(*params))
            loss = bb.emit_output(bb.emit(R.sum(R.multiply(y, relax.const(weight)))))
        bb.emit_func_output(loss)
    return gradient(bb.get(), "main", [params[k] for k in wrt])


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_torch_autograd_in_float64(name):
    build, tfn, gens = CASES[name][:3]
    rng = np.random.default_rng(7)
    inputs = [g(rng) for g in gens]
    wrt = CASES[name][3] if len(CASES[name]) > 3 else list(range(len(inputs)))
    tin = [torch.tensor(a, requires_grad=k in wrt) for k, a in enumerate(inputs)]
    tout = tfn(*tin)
    weight = rng.standard_normal(tuple(tout.shape))
    want = torch.autograd.grad((tout * torch.tensor(weight)).sum(), [tin[k] for k in wrt])
    mod = _adjoint(build, inputs, weight, wrt)
    _, ref = evaluate(mod, *inputs, func_name="main_adjoint")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    _, built = vm["main_adjoint"](*[tvm.nd.array(a) for a in inputs])
    for k, w in enumerate(want):
        for how, got in (("reference", ref[k]), ("compiled", built[k])):
            got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
            np.testing.assert_allclose(
                got, w.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"{name} {how}: grad {wrt[k]}"
            )


def _grad_of(build, *sinfos):
    params = [relax.Var(f"x{k}", relax.TensorStructInfo(*s)) for k, s in enumerate(sinfos)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            loss = bb.emit_output(bb.emit(R.sum(bb.emit(build(*params)))))
        bb.emit_func_output(loss)
    return gradient(bb.get(), "main")


def test_conv2d_transpose_with_output_padding_past_the_stride_is_refused():
    def build(x, w):
        return R.nn.conv2d_transpose(x, w, output_padding=1, dilation=2)

    with pytest.raises(
        MiniTVMError, match=r"conv2d_transpose with output_padding \[1, 1\] not below"
    ):
        _grad_of(build, ((1, 2, 4, 4), "float32"), ((2, 3, 3, 3), "float32"))


def test_conv3d_in_channels_last_layout_is_refused():
    def build(x, w):
        return R.nn.conv3d(x, w, data_layout="NDHWC")

    with pytest.raises(MiniTVMError, match=r"conv3d with data_layout='NDHWC' has no gradient rule"):
        _grad_of(build, ((1, 4, 4, 4, 2), "float32"), ((3, 2, 2, 2, 2), "float32"))


def test_einsum_diagonal_is_refused():
    with pytest.raises(MiniTVMError, match=r"einsum 'ii->i': operand 0 repeats a label"):
        _grad_of(lambda x: R.einsum([x], "ii->i"), ((3, 3), "float32"))


def test_conv3d_of_a_symbolic_depth_is_refused():
    d = tvm.tir.Var("d", "int64")
    with pytest.raises(MiniTVMError, match=r"relax.nn.conv3d of a tensor .* dims \[2, 3, 4\] must"):
        _grad_of(R.nn.conv3d, ((1, 2, d, 4, 4), "float32"), ((3, 2, 2, 2, 2), "float32"))


# a symbolic batch (as the torch importer and TorchTrainer give) needs no static size
# case -> the inputs whose dim 0 is the batch
SYMBOLIC_BATCH = {
    "conv3d_groups": [0],
    "conv2d_transpose_groups_dilation": [0],
    "einsum_batch_matmul": [0, 1],
    "resize2d_bilinear": [0],
    "adaptive_avg_pool2d_uneven": [0],
    "attention_causal_top_left": [0, 1, 2],
    "rms_norm": [0],
    "cumprod_zeros": [0],
}


@pytest.mark.parametrize("name", sorted(SYMBOLIC_BATCH))
def test_rule_with_a_symbolic_batch_matches_torch(name):
    build, tfn, gens = CASES[name][:3]
    rng = np.random.default_rng(3)
    inputs = [g(rng) for g in gens]
    n = tvm.tir.Var("n", "int64")
    params = [
        relax.Var(f"x{k}", relax.TensorStructInfo((n, *a.shape[1:]), "float64"))
        if k in SYMBOLIC_BATCH[name]
        else relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, "float64"))
        for k, a in enumerate(inputs)
    ]
    tin = [torch.tensor(a, requires_grad=True) for a in inputs]
    want = torch.autograd.grad(tfn(*tin).square().sum(), tin)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(build(*params))
            loss = bb.emit_output(bb.emit(R.sum(R.multiply(y, y))))
        bb.emit_func_output(loss)
    mod = gradient(bb.get(), "main")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    _, got = vm["main_adjoint"](*[tvm.nd.array(a) for a in inputs])
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[k].numpy(), w.numpy(), rtol=1e-9, atol=1e-12)


def test_attention_causal_over_symbolic_lengths_is_refused():
    s = tvm.tir.Var("s", "int64")

    def build(q):
        return R.nn.attention(q, q, q, causal_mask="TopLeft")

    with pytest.raises(MiniTVMError, match=r"attention with a causal mask over symbolic sequence"):
        _grad_of(build, ((1, s, 2, 4), "float32"))


# ------------------------------------------------------------- through the torch importer

nn = torch.nn


class _Attend(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.norm = nn.Linear(4, 12), nn.RMSNorm(4)

    def forward(self, x):
        q, k, v = (t.reshape(x.shape[0], 3, 2, 2).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.norm(out.transpose(1, 2).reshape(x.shape[0], 3, 4))


IMPORTED = {
    "2d": (
        lambda: nn.Sequential(
            nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1),
            nn.PReLU(3),
            nn.Upsample(scale_factor=2, mode="bilinear"),
            nn.AdaptiveAvgPool2d((3, 5)),
        ),
        (2, 2, 3, 4),
    ),
    "1d": (
        lambda: nn.Sequential(
            nn.ConvTranspose1d(2, 3, 3, stride=2),
            nn.MaxPool1d(3, 2, padding=1),
            nn.AvgPool1d(2),
            nn.AdaptiveAvgPool1d(2),
        ),
        (2, 2, 9),
    ),
    "3d": (lambda: nn.Conv3d(2, 3, 2, padding=1), (2, 2, 3, 3, 3)),
    "attention": (_Attend, (2, 3, 4)),
}


@pytest.mark.parametrize(
    "kind",
    # 1-D and 3-D: their rules are checked directly above; the imported runs are the slow tail
    [k if k not in ("1d", "3d") else pytest.param(k, marks=pytest.mark.slow) for k in IMPORTED],
)
def test_imported_model_trains_like_torch_eager(kind):
    """Two SGD steps of TorchTrainer (the importer's graph, a symbolic batch) against torch."""
    from minitvm.testing.torch_reference import train_steps
    from minitvm.training import TorchTrainer

    make_body, shape = IMPORTED[kind]

    def make():
        torch.manual_seed(0)
        body = make_body()
        width = body(torch.zeros(shape)).flatten(1).shape[1]
        return nn.Sequential(body, nn.Flatten(), nn.Linear(width, 1))

    gen = torch.Generator().manual_seed(0)
    batches = [(torch.randn(*shape, generator=gen), torch.randn(shape[0], 1, generator=gen))]
    batches.append((batches[0][0] * 0.5, batches[0][1]))
    loss, sgd = nn.MSELoss(), ("sgd", {"lr": 0.01})
    trainer = TorchTrainer(make(), batches[0], loss, sgd)
    ours = [trainer.step(x, y) for x, y in batches]
    ref_model = make()
    ref = train_steps(ref_model, batches, lambda ps: torch.optim.SGD(ps, lr=0.01), loss)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-6)
    state = trainer.state_dict()
    for name, p in ref_model.named_parameters():
        np.testing.assert_allclose(state[name], p.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_adjoint_holds_a_plain_call_tir_for_a_call_tir_with_grad():
    """As TVM's Gradient: the adjoint calls the kernel with call_tir; the TE gradient still runs."""
    from minitvm import te
    from minitvm.relax.training.utils import register_te_gradient

    @register_te_gradient("a7_square_grad")
    def square_grad(output_grad, a):
        return [te.compute(a.shape, lambda *i: 2.0 * a[i] * output_grad[i], name="ga")]

    x = np.random.default_rng(2).standard_normal((3, 4))
    av = relax.Var("a", relax.TensorStructInfo(x.shape, "float64"))
    bb = relax.BlockBuilder()
    with bb.function("main", [av]):
        with bb.dataflow():
            sq = bb.emit_te_with_grad(
                lambda t: te.compute(t.shape, lambda *i: t[i] * t[i], name="a7_square"),
                av,
                te_grad_name="a7_square_grad",
            )
            loss = bb.emit_output(R.sum(R.multiply(sq, relax.const(x))))
        bb.emit_func_output(loss)
    mod = relax.transform.Gradient("main")(bb.get())
    text = mod["main_adjoint"].script()
    assert "call_tir_with_grad" not in text and "R.call_tir(" in text
    assert "call_tir_with_grad" in mod["main"].script()  # the forward function keeps it
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    loss, (grad,) = vm["main_adjoint"](tvm.nd.array(x))
    np.testing.assert_allclose(loss.numpy(), (x**3).sum(), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), 2.0 * x * x, rtol=1e-12)


def test_adaptive_avg_pool2d_of_a_symbolic_height_is_refused():
    h = tvm.tir.Var("h", "int64")
    with pytest.raises(MiniTVMError, match=r"adaptive_avg_pool2d of a tensor .* \[2, 3\] must be"):
        _grad_of(lambda x: R.nn.adaptive_avg_pool2d(x, (2, 3)), ((1, 2, h, 5), "float32"))
