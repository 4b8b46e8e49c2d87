"""from_exported_program runs torch's decompositions and takes custom_convert_map; both torch
importers apply in-place writes (`x.add_(1); return x`) or refuse them, never drop them."""

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importers need torch")
nn = torch.nn
F = torch.nn.functional

import minitvm as tvm
from minitvm import relax
from minitvm.error import FrontendError, OpNotImplemented
from minitvm.relax import eval_ref
from minitvm.relax.frontend.torch import from_exported_program, from_fx

RTOL, ATOL = 1e-4, 1e-5


def _run_vm(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in args]).numpy()


def _outputs(value):
    return [np.asarray(v) for v in (value if isinstance(value, list | tuple) else [value])]


def _check(mod, x, want):
    got = _outputs(eval_ref.evaluate(mod, x.numpy()))
    want = [w.detach().numpy() for w in (want if isinstance(want, tuple) else (want,))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_signature_matches_tvm():
    params = inspect.signature(from_exported_program).parameters
    assert list(params) == [
        "exported_program",
        "keep_params_as_input",
        "unwrap_unit_return_tuple",
        "no_bind_return_tuple",
        "custom_convert_map",
        "run_ep_decomposition",
    ]
    assert all(p.kind is p.KEYWORD_ONLY for p in list(params.values())[1:])
    assert params["run_ep_decomposition"].default is True


# ----------------------------------------------------------------------------- TransformerEncoder


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, x, padding_mask):
        return self.encoder(x, src_key_padding_mask=padding_mask)


@pytest.mark.parametrize("decompose", [True, False])
def test_transformer_encoder_with_padding_mask_compiles_and_matches_torch(decompose):
    torch.manual_seed(0)
    model = _Encoder().eval()
    x = torch.randn(2, 5, 16)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    ep = torch.export.export(model, (x, mask))
    with torch.no_grad():
        eager = model(x, mask).numpy()
        exported = ep.module()(x, mask).numpy()
    # the regression: torch.export records the padding mask's masked_fill_ in place
    assert any("masked_fill_" in str(n.target) for n in ep.graph.nodes)
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True, run_ep_decomposition=decompose)
    got = _run_vm(mod, x.numpy(), mask.numpy())
    np.testing.assert_allclose(got, exported, rtol=RTOL, atol=ATOL)
    # eager eval mode takes the nested-tensor fast path, which zeroes the padded positions
    keep = ~mask.numpy()
    np.testing.assert_allclose(got[keep], eager[keep], rtol=RTOL, atol=ATOL)


# ----------------------------------------------------------------------------- in-place statements


class _AddInPlace(nn.Module):
    def forward(self, x):
        x.add_(1)
        return x


class _ChainedWrites(nn.Module):
    def forward(self, x):
        x.add_(1).mul_(2)  # the second write goes through add_'s result: the same tensor
        y = x.clamp_(-1.5, 2.5)
        return x, y


class _WriteATemporary(nn.Module):
    def forward(self, x):
        y = x * 2
        y.mul_(3)
        y.clamp_(-1, 1)
        return x, y + 1


class _Fill(nn.Module):
    def forward(self, x):
        x.fill_(1.5)
        return x


class _MaskedFill(nn.Module):
    def forward(self, x):
        y = x.clone()
        y.masked_fill_(y > 0, 0.0)
        return y


class _WriteThroughView(nn.Module):
    def forward(self, x):
        v = x.view(-1)
        v.add_(1)
        return x * 2


INPLACE = [_AddInPlace, _ChainedWrites, _WriteATemporary, _Fill, _MaskedFill]


def _expected(model, x):
    with torch.no_grad():
        return model(x.clone())  # the model writes its input


@pytest.mark.parametrize("decompose", [True, False])
@pytest.mark.parametrize("factory", INPLACE, ids=lambda f: f.__name__)
def test_inplace_statement_through_export_matches_torch(factory, decompose):
    x = torch.randn(2, 3)
    ep = torch.export.export(factory(), (x.clone(),))
    _check(from_exported_program(ep, run_ep_decomposition=decompose), x, _expected(factory(), x))


@pytest.mark.parametrize("factory", INPLACE, ids=lambda f: f.__name__)
def test_inplace_statement_through_fx_matches_torch(factory):
    x = torch.randn(2, 3)
    mod = from_fx(torch.fx.symbolic_trace(factory()), [((2, 3), "float32")])
    _check(mod, x, _expected(factory(), x))


def test_inplace_write_compiles_and_runs_on_the_vm():
    x = torch.randn(2, 3)
    mod = from_fx(torch.fx.symbolic_trace(_Fill()), [((2, 3), "float32")])
    np.testing.assert_allclose(_run_vm(mod, x.numpy()), np.full((2, 3), 1.5, "float32"))


def test_copy_into_a_fresh_tensor_through_export_matches_torch():
    class CopyThenAdd(nn.Module):
        def forward(self, x):
            y = torch.zeros(2, 3)
            y.copy_(x)
            y += 1
            return y

    x = torch.randn(2, 3)
    for decompose in (True, False):
        ep = torch.export.export(CopyThenAdd(), (x,))
        _check(from_exported_program(ep, run_ep_decomposition=decompose), x, CopyThenAdd()(x))


class _InplaceKeyword(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        y = x * 2
        self.act(y)
        F.hardtanh(x, -0.5, 0.5, True)
        F.leaky_relu(input=x, negative_slope=0.1, inplace=True)
        return x, y


def test_fx_inplace_module_and_keyword_match_torch():
    x = torch.randn(2, 3)
    mod = from_fx(torch.fx.symbolic_trace(_InplaceKeyword()), [((2, 3), "float32")])
    _check(mod, x, _expected(_InplaceKeyword(), x))


def test_fx_write_to_an_attribute_reaches_its_every_read():
    # a cache-style buffer update, as a hand-built graph: fx reads the buffer through two
    # get_attr nodes, and the second must see the first one's copy_
    root = nn.Module()
    root.register_buffer("cache", torch.zeros(2, 3))
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.call_method("copy_", (graph.get_attr("cache"), x))
    graph.output(graph.call_function(torch.mul, (graph.get_attr("cache"), 2.0)))
    gm = torch.fx.GraphModule(root, graph)
    mod = from_fx(gm, [((2, 3), "float32")])  # before gm runs: the buffer still holds zeros
    data = torch.randn(2, 3)
    _check(mod, data, gm(data))


_VIEW_REFUSAL = (
    r"cannot convert {op} at node 'add_'.*: it writes 'view' in place, but 'x' \(sharing its "
    r"memory\) is read afterwards.*Write it out of place"
)


def test_inplace_write_through_a_live_view_is_refused():
    x = torch.randn(2, 3)
    with pytest.raises(OpNotImplemented, match=_VIEW_REFUSAL.format(op="Tensor.add_")):
        from_fx(torch.fx.symbolic_trace(_WriteThroughView()), [((2, 3), "float32")])
    ep = torch.export.export(_WriteThroughView(), (x.clone(),))
    with pytest.raises(OpNotImplemented, match=_VIEW_REFUSAL.format(op=r"aten.add_.Tensor")):
        from_exported_program(ep, run_ep_decomposition=False)
    # torch's functionalization writes the view back into x, which then imports exactly
    _check(from_exported_program(ep), x, _expected(_WriteThroughView(), x))


def test_inplace_op_without_converter_is_named_not_dropped():
    class IndexFill(nn.Module):
        def forward(self, x):
            x.index_fill_(0, torch.tensor([0]), 7.0)
            return x

    with pytest.raises(OpNotImplemented, match=r"index_fill_"):
        from_fx(torch.fx.symbolic_trace(IndexFill()), [((2, 3), "float32")])
    ep = torch.export.export(IndexFill(), (torch.randn(2, 3),))
    with pytest.raises(OpNotImplemented, match=r"(?s)aten.index_fill_.*custom_convert_map"):
        from_exported_program(ep, run_ep_decomposition=False)


def test_inplace_index_put_statement_is_applied():
    # index_put_ has a converter now: the statement's effect must reach the output, as in torch
    class IndexPut(nn.Module):
        def forward(self, x):
            x.index_put_((torch.tensor([0]),), torch.tensor(7.0))
            return x

    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    want = IndexPut()(torch.tensor(x)).numpy()
    mod = from_fx(torch.fx.symbolic_trace(IndexPut()), [((2, 3), "float32")])
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](tvm.nd.array(x))
    out = out[0] if isinstance(out, tuple) else out
    np.testing.assert_array_equal(out.numpy(), want)


# ----------------------------------------------------------------------------- unsupported ops


class _TwoMissing(nn.Module):
    def forward(self, x):
        return torch.expm1(x) + torch.special.erfcx(x)


def test_ops_unsupported_after_decomposition_are_all_named_with_the_fix():
    ep = torch.export.export(_TwoMissing(), (torch.randn(2, 3),))
    with pytest.raises(OpNotImplemented) as info:
        from_exported_program(ep)
    msg = str(info.value)
    assert "2 operator(s) are not supported: aten.expm1.default, aten.special_erfcx.default" in msg
    assert "at node 'expm1'" in msg and "at node 'special_erfcx'" in msg
    assert "custom_convert_map={'expm1.default': fn, 'special_erfcx.default': fn}" in msg
    assert "fn(node, importer) returns importer.block_builder.emit(" in msg
    assert "decompose them by hand" in msg


# ----------------------------------------------------------------------------- custom_convert_map


def _sigmoid(node, importer):
    from minitvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    assert isinstance(importer, ExportedProgramImporter)  # the name TVM's tutorials annotate with
    x = importer.retrieve_args(node)[0]
    return importer.block_builder.emit(relax.op.sigmoid(x))


def _sinh(node, importer):  # (exp(x) - exp(-x)) / 2
    x = importer.retrieve_args(node)[0]
    bb = importer.block_builder
    diff = bb.emit(relax.op.subtract(relax.op.exp(x), relax.op.exp(relax.op.negative(x))))
    return bb.emit(relax.op.multiply(diff, importer.const(0.5, "float32")))


def _sigmoid_unbound(node, importer):  # the call itself, not emitted: bound for the user
    return relax.op.sigmoid(importer.retrieve_args(node)[0])


@pytest.mark.parametrize("convert", [_sigmoid, _sigmoid_unbound])
def test_custom_convert_map_overrides_a_builtin_converter(convert):
    class Relu(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2

    x = torch.randn(2, 3)
    ep = torch.export.export(Relu(), (x,))
    mod = from_exported_program(ep, custom_convert_map={"relu.default": convert})
    _check(mod, x, torch.sigmoid(x) * 2)


def test_custom_convert_map_adds_a_missing_op_and_compiles():
    class Sinh(nn.Module):
        def forward(self, x):
            return torch.sinh(x) + 1

    x = torch.randn(2, 3)
    ep = torch.export.export(Sinh(), (x,))
    mod = from_exported_program(
        ep, custom_convert_map={"sinh.default": _sinh}, unwrap_unit_return_tuple=True
    )
    np.testing.assert_allclose(_run_vm(mod, x.numpy()), torch.sinh(x) + 1, rtol=RTOL, atol=ATOL)


def test_custom_convert_map_keeps_its_op_whole_through_decomposition():
    seen = []

    def pixel_shuffle(node, importer):  # (n, c*r*r, h, w) -> (n, c, h*r, w*r)
        seen.append(node.target.__name__)
        x, r = importer.retrieve_args(node)
        n, c, h, w = (int(d) for d in x.struct_info.shape)
        bb = importer.block_builder
        y = bb.emit(relax.op.reshape(x, (n, c // (r * r), r, r, h, w)))
        y = bb.emit(relax.op.permute_dims(y, [0, 1, 4, 2, 5, 3]))
        return bb.emit(relax.op.reshape(y, (n, c // (r * r), h * r, w * r)))

    model = nn.PixelShuffle(2)
    x = torch.randn(1, 8, 2, 3)
    ep = torch.export.export(model, (x,))
    mod = from_exported_program(ep, custom_convert_map={"pixel_shuffle.default": pixel_shuffle})
    assert seen == ["pixel_shuffle.default"]  # not torch's reshapes and permute
    _check(mod, x, model(x))


def _raises(node, importer):
    raise KeyError("no such input")


@pytest.mark.parametrize(
    "custom_map,match",
    [
        ({"relu.default": _raises}, r"custom_convert_map\['relu.default'\].*raised KeyError"),
        ({"relu.default": lambda node, importer: None}, r"returned NoneType; return the relax"),
        ({"aten.relu.default": _sigmoid}, r"write it as 'op.overload': 'relu.default'"),
        ({"relu.default": "sigmoid"}, r"must map an op name string .* to a function"),
        ([("relu.default", _sigmoid)], r"must be a dict from op name to function, got list"),
    ],
)
def test_custom_convert_map_errors_name_the_entry(custom_map, match):
    ep = torch.export.export(nn.ReLU(), (torch.randn(2, 3),))
    with pytest.raises(FrontendError, match=match):
        from_exported_program(ep, custom_convert_map=custom_map)


def test_custom_converter_of_an_inplace_op_must_give_a_tensor():
    def pair(node, importer):
        x = importer.retrieve_args(node)[0]
        return (x, x)

    ep = torch.export.export(_AddInPlace(), (torch.randn(2, 3),))
    with pytest.raises(OpNotImplemented, match=r"writing 'x' in place gave tuple, not a tensor"):
        from_exported_program(
            ep, run_ep_decomposition=False, custom_convert_map={"add_.Tensor": pair}
        )


def test_write_to_an_operand_other_than_the_first_is_refused():
    graph = torch.fx.Graph()
    x, buf = graph.placeholder("x"), graph.placeholder("buf")
    graph.output(graph.call_function(torch.ops.aten.add.out, (x, x), {"out": buf}))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    with pytest.raises(
        OpNotImplemented, match=r"aten.add.out  at node 'add_out' \(writes an operand other than"
    ):
        from_fx(gm, [((2, 3), "float32"), ((2, 3), "float32")])


def test_failing_decomposition_says_how_to_import_without_it(monkeypatch):
    def fail(self, table=None):
        raise RuntimeError("boom")

    ep = torch.export.export(nn.ReLU(), (torch.randn(2, 3),))
    monkeypatch.setattr(type(ep), "run_decompositions", fail)
    with pytest.raises(
        FrontendError, match=r"run_decompositions\(\) failed \(RuntimeError: boom\); pass "
    ):
        from_exported_program(ep)
    assert from_exported_program(ep, run_ep_decomposition=False) is not None
