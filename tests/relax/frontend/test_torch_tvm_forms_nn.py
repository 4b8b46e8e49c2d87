"""The torch importers' TVM forms for nn ops (conv3d, linear, tril/triu, nearest resize,
masked_scatter, cross_entropy, native_dropout, inverse hyperbolics): the relax ops TVM's
importer emits, and the numbers torch computes, through both from_fx and
from_exported_program."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import minitvm as tvm
from minitvm import relax
from minitvm.error import OpAttributeInvalid, OpAttributeUnImplemented, OpNotImplemented
from minitvm.relax.frontend.torch import from_exported_program, from_fx

F = torch.nn.functional


class _Fn(torch.nn.Module):
    """A module calling fn; forward takes fn's arguments by name, so torch.fx can trace it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class _Fn3(_Fn):
    def forward(self, x, y, z):
        return self.fn(x, y, z)


class _Fn2(_Fn):
    def forward(self, x, y):
        return self.fn(x, y)


class _Leaf(torch.nn.Module):
    """Holds a torch.nn module so that torch.fx keeps it as one call_module node."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class _Leaf2(_Leaf):
    def forward(self, x, y):
        return self.inner(x, y)


def _fx(model, *args):
    info = [(tuple(a.shape), str(a.dtype).removeprefix("torch.")) for a in args]
    if len(args) <= 2 and type(model).__module__.startswith("torch.nn"):
        model = (_Leaf if len(args) == 1 else _Leaf2)(model)
    return from_fx(torch.fx.symbolic_trace(model), info)


def _ep(model, *args):
    return from_exported_program(torch.export.export(model, args))


IMPORTERS = {"fx": _fx, "export": _ep}


def _ops(mod):
    """The op names of main's calls, in order."""
    block = mod["main"].body.blocks[0]
    return [b.value.op.name for b in block.bindings if isinstance(b.value, relax.Call)]


def _call(mod, name):
    """The first call of op `name` bound in main."""
    block = mod["main"].body.blocks[0]
    calls = [b.value for b in block.bindings if isinstance(b.value, relax.Call)]
    return next(c for c in calls if c.op.name == name)


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a.numpy()) for a in args])
    return [o.numpy() for o in (out if isinstance(out, list | tuple) else [out])]


def _check(importer, model, args, ops=None, rtol=1e-5, atol=1e-5):
    """Import `model` with `importer`, check its op sequence when given, run it and compare
    every output with torch's."""
    mod = IMPORTERS[importer](model, *args)
    if ops is not None:
        assert _ops(mod) == ops, mod.script()
    with torch.no_grad():
        want = model(*args)
    want = list(want) if isinstance(want, tuple) else [want]
    got = _run(mod, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy() if isinstance(w, torch.Tensor) else np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return mod


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
@pytest.mark.parametrize(
    "name, low, high", [("asinh", -3.0, 3.0), ("acosh", 1.1, 4.0), ("atanh", -0.9, 0.9)]
)
def test_inverse_hyperbolics_match_torch(importer, name, low, high):
    x = torch.rand(2, 3, 5, generator=torch.Generator().manual_seed(0)) * (high - low) + low
    _check(importer, _Fn(getattr(torch, name)), (x,), [f"relax.{name}"])


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
@pytest.mark.parametrize("fn", ["tril", "triu"])
@pytest.mark.parametrize("k", [-2, 0, 1, 4])
def test_tril_triu_as_relax_ops_match_torch(importer, fn, k):
    x = torch.randn(2, 4, 6)
    _check(importer, _Fn(lambda x: getattr(torch, fn)(x, k)), (x,), [f"relax.{fn}"])


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4, 10), (2, 3, 10), (10,)])
def test_linear_as_permute_matmul_add_matches_torch(importer, bias, shape):
    torch.manual_seed(0)
    m = torch.nn.Linear(10, 7, bias=bias).eval()
    ops = ["relax.permute_dims", "relax.matmul"] + (["relax.add"] if bias else [])
    mod = _check(importer, m, (torch.randn(*shape),), ops, rtol=1e-4)
    assert _call(mod, "relax.matmul").attrs["out_dtype"] == "float32"


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
@pytest.mark.parametrize(
    "kw",
    [
        {"bias": True},
        {"bias": False, "stride": 2, "padding": 1},
        {"bias": True, "padding": (0, 1, 2), "dilation": (1, 2, 1), "groups": 2},
    ],
)
def test_conv3d_as_relax_conv3d_matches_torch(importer, kw):
    torch.manual_seed(0)
    m = torch.nn.Conv3d(4, 6, 3, **kw).eval()
    x = torch.randn(1, 4, 6, 7, 8)
    ops = ["relax.nn.conv3d"] + (["relax.reshape", "relax.add"] if kw["bias"] else [])
    mod = _check(importer, m, (x,), ops, rtol=1e-4, atol=1e-4)
    assert _call(mod, "relax.nn.conv3d").attrs["out_dtype"] == "float32"


def test_functional_conv3d_through_fx_matches_torch():
    torch.manual_seed(0)
    w, b = torch.randn(6, 3, 2, 3, 3), torch.randn(6)
    m = _Fn(lambda x: F.conv3d(x, w, b, padding="same"))
    _check("fx", m, (torch.randn(2, 3, 5, 5, 5),), rtol=1e-4, atol=1e-4)


def test_transposed_3d_convolution_is_refused_by_name():
    m = torch.nn.ConvTranspose3d(2, 2, 3).eval()
    with pytest.raises(OpAttributeUnImplemented, match="3-d transposed convolution"):
        _ep(m, torch.randn(1, 2, 4, 4, 4))


# (input size, output size, fx form, export form): TVM's form where it equals torch
NEAREST = [
    ((10, 10), (5, 5), ("asymmetric", "round"), ("asymmetric", "floor")),
    ((12, 9), (4, 3), ("asymmetric", "round"), ("asymmetric", "floor")),
    ((7, 5), (14, 15), ("asymmetric", "floor"), ("half_pixel", "round")),
    ((7, 5), (10, 15), ("asymmetric", "floor"), ("asymmetric", "floor")),
    ((6, 6), (4, 9), ("asymmetric", "floor"), ("asymmetric", "floor")),
]


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
@pytest.mark.parametrize("size_in, size_out, fx_form, ep_form", NEAREST)
def test_nearest_resize_uses_tvm_form_only_where_it_equals_torch(
    importer, size_in, size_out, fx_form, ep_form
):
    x = torch.randn(1, 2, *size_in)
    m = _Fn(lambda x: F.interpolate(x, size_out, mode="nearest"))
    mod = _check(importer, m, (x,), ["relax.image.resize2d"])
    attrs = _call(mod, "relax.image.resize2d").attrs
    form = (attrs["coordinate_transformation_mode"], attrs["rounding_method"])
    assert form == (fx_form if importer == "fx" else ep_form)


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
@pytest.mark.parametrize(
    "shape, mask_shape, source_shape",
    [((5,), (5,), (10,)), ((2, 5), (2, 5), (3, 5)), ((3, 4), (4,), (12,)), ((), (), (1,))],
)
def test_masked_scatter_matches_torch(importer, shape, mask_shape, source_shape):
    g = torch.Generator().manual_seed(1)
    x, src = torch.randn(shape, generator=g), torch.randn(source_shape, generator=g)
    mask = torch.rand(mask_shape, generator=g) > 0.4
    mod = _check(importer, _Fn3(lambda x, m, s: x.masked_scatter(m, s)), (x, mask, src))
    ops = [op for op in _ops(mod) if op not in ("relax.reshape", "relax.broadcast_to")]
    assert ops == ["relax.cumsum", "relax.subtract", "relax.take", "relax.where"], mod.script()
    assert _call(mod, "relax.cumsum").attrs["dtype"] == "int32"


def test_masked_scatter_with_too_small_source_is_refused():
    m = _Fn3(lambda x, mask, s: x.masked_scatter(mask, s))
    args = (torch.randn(2, 5), torch.ones(2, 5, dtype=torch.bool), torch.randn(7))
    with pytest.raises(OpAttributeUnImplemented, match="source .7,. has fewer elements"):
        _fx(m, *args)


def test_masked_scatter_with_other_source_dtype_is_refused():
    m = _Fn3(lambda x, mask, s: x.masked_scatter(mask, s))
    args = (torch.randn(5), torch.ones(5, dtype=torch.bool), torch.randn(5).double())
    with pytest.raises(OpAttributeInvalid, match="source dtype float64 differs"):
        _fx(m, *args)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"reduction": "sum", "ignore_index": 1},
        {"reduction": "none"},
        {"weight": torch.tensor([0.5, 2.0, 1.0, 3.0])},
        {"weight": torch.tensor([0.5, 2.0, 1.0, 3.0]), "ignore_index": 2},
    ],
)
@pytest.mark.parametrize("input_shape", [(6, 4), (3, 4, 5)])
def test_cross_entropy_loss_module_and_functional_match_torch(kw, input_shape):
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(input_shape, generator=g)
    target_shape = (input_shape[0],) + input_shape[2:]
    target = torch.randint(0, 4, target_shape, generator=g)
    target.view(-1)[0] = 2  # some target hits ignore_index=2 where that is set
    for model in (torch.nn.CrossEntropyLoss(**kw), _Fn2(lambda x, t: F.cross_entropy(x, t, **kw))):
        mod = _check("fx", model, (logits, target), rtol=1e-5, atol=1e-6)
        assert _ops(mod) == ["relax.nn.log_softmax", "relax.nn.nll_loss"], mod.script()
        axis = _call(mod, "relax.nn.log_softmax").attrs["axis"]
        assert axis == (-1 if len(input_shape) == 2 else 1)


def test_cross_entropy_label_smoothing_is_refused():
    m = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    with pytest.raises(OpAttributeUnImplemented, match="label_smoothing"):
        _fx(m, torch.randn(3, 4), torch.tensor([0, 1, 3]))


def test_dropout_exported_in_training_mode_is_the_identity():
    """aten.native_dropout (a train-mode Dropout): the identity, as F.dropout without a random
    key (and TVM's importer); its mask is not computed."""
    x = torch.randn(2, 3, 4)
    mod = _ep(torch.nn.Dropout(0.5).train(), x)
    np.testing.assert_array_equal(_run(mod, x)[0], x.numpy())

    class Mask(torch.nn.Module):
        def forward(self, x):
            return torch.ops.aten.native_dropout.default(x, 0.5, True)[1].float()

    with pytest.raises(OpNotImplemented, match=r"mask \(output 1\) of native_dropout"):
        _ep(Mask(), x)


def test_tril_over_a_symbolic_dim_matches_torch():
    batch = torch.export.Dim("batch", min=2)
    m = _Fn(lambda x: torch.tril(x, -1))
    ep = torch.export.export(m, (torch.randn(3, 5, 5),), dynamic_shapes=({0: batch},))
    mod = from_exported_program(ep)
    assert _ops(mod) == ["relax.tril"], mod.script()
    x = torch.randn(4, 5, 5)
    np.testing.assert_array_equal(_run(mod, x)[0], torch.tril(x, -1).numpy())


def test_masked_scatter_with_a_non_bool_mask_is_refused():
    m = _Fn3(lambda x, mask, s: x.masked_scatter(mask, s))
    args = (torch.randn(5), torch.ones(5, dtype=torch.uint8), torch.randn(5))
    with pytest.raises(OpAttributeInvalid, match="mask dtype is uint8"):
        _fx(m, *args)


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
@pytest.mark.parametrize(
    "kw",
    [
        {"bias": True},
        {"bias": False, "stride": 2, "padding": 1, "output_padding": 1},
        {"bias": True, "stride": 3, "dilation": 2, "groups": 2, "output_padding": 1},
    ],
)
def test_conv_transpose1d_as_relax_conv1d_transpose_matches_torch(importer, kw):
    torch.manual_seed(0)
    m = torch.nn.ConvTranspose1d(4, 6, 3, **kw).eval()
    ops = ["relax.nn.conv1d_transpose"] + (["relax.reshape", "relax.add"] if kw["bias"] else [])
    mod = _check(importer, m, (torch.randn(2, 4, 7),), ops, rtol=1e-4, atol=1e-5)
    assert _call(mod, "relax.nn.conv1d_transpose").attrs["out_dtype"] == "float32"
