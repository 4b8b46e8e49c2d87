"""Whole PyTorch models through from_fx and from_exported_program: the zoo's torch twins, a
small CNN and a small transformer, against PyTorch eager; unsupported-op reports, output
conventions, kept parameters and detach_params."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import minitvm as tvm
from minitvm import relax
from minitvm.error import FrontendError, OpAttributeUnImplemented, OpNotImplemented
from minitvm.relax import eval_ref
from minitvm.relax.frontend import detach_params
from minitvm.relax.frontend.torch import from_exported_program, from_fx
from minitvm.testing import zoo

RTOL, ATOL = 1e-4, 1e-5


def _zoo_case(name, batch=2):
    kwargs = (
        {"seq_len": 8}
        if name == "bert_layer"
        else {"image_shape": (1, 28, 28) if name in ("mlp", "lenet") else (3, 32, 32)}
    )
    _, params = zoo.get_model(name, batch_size=batch, **kwargs)
    model = zoo.torch_model(name, params)
    x = torch.from_numpy(
        np.random.default_rng(1)
        .standard_normal(zoo.input_shape(name, batch, **kwargs))
        .astype("float32")
    )
    with torch.no_grad():
        want = model(x).numpy()
    return model, x, want


def _run_vm(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in args]).numpy()


@pytest.mark.parametrize("name", ["mlp", "lenet", "resnet18", "mobilenet_v2", "bert_layer"])
def test_zoo_model_imports_through_export_and_fx_and_matches_torch(name):
    from torch.fx.experimental.proxy_tensor import make_fx

    model, x, want = _zoo_case(name)
    ep_mod = from_exported_program(torch.export.export(model, (x,)), unwrap_unit_return_tuple=True)
    # the zoo's forward reads shapes in Python, so fx takes the aten graph make_fx records
    fx_mod = from_fx(make_fx(model)(x), [(tuple(x.shape), "float32")])
    for mod in (ep_mod, fx_mod):
        np.testing.assert_allclose(eval_ref.evaluate(mod, x.numpy()), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "name",
    [
        "mlp",
        "lenet",
        pytest.param("resnet18", marks=tvm.testing.slow),
        pytest.param("bert_layer", marks=tvm.testing.slow),
    ],
)
def test_zoo_model_compiles_and_matches_torch(name):
    model, x, want = _zoo_case(name, batch=1)
    mod = from_exported_program(torch.export.export(model, (x,)), unwrap_unit_return_tuple=True)
    np.testing.assert_allclose(_run_vm(mod, x.numpy()), want, rtol=RTOL, atol=ATOL)


class SmallCNN(nn.Module):
    """A torchvision-style net: conv-bn-relu stem, a residual block, a depthwise/pointwise pair."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU()
        )
        self.block = nn.Sequential(
            nn.Conv2d(8, 8, 3, 1, 1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 8, 3, 1, 1),
            nn.BatchNorm2d(8),
        )
        self.dw = nn.Conv2d(8, 8, 3, 1, 1, groups=8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.block(x))
        x = F.hardswish(self.pw(F.relu6(self.dw(x))))
        x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(self.pool(x), 1))


class SmallTransformer(nn.Module):
    """Token embedding, one pre-LN encoder block (nn.MultiheadAttention + GELU MLP), a head."""

    def __init__(self, vocab=20, dim=16, heads=4, seq=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, seq, dim) * 0.1)
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * dim, dim)
        )
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos
        a = self.ln1(h)
        h = h + self.attn(a, a, a)[0]
        h = h + self.mlp(self.ln2(h))
        return F.log_softmax(self.head(h.mean(dim=1)), dim=-1)


class SdpaBlock(nn.Module):
    """Causal self-attention written with F.scaled_dot_product_attention, heads split by view."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.qkv, self.out, self.heads = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim), heads

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


def _both_paths(model, xs):
    traced = torch.fx.symbolic_trace(model)
    info = [(tuple(x.shape), str(x.dtype).removeprefix("torch.")) for x in xs]
    return [
        from_fx(traced, info),
        from_exported_program(torch.export.export(model, tuple(xs)), unwrap_unit_return_tuple=True),
    ]


def test_small_cnn_matches_torch():
    model = SmallCNN().eval()
    with torch.no_grad():
        for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        want = model(x).numpy()
    for mod in _both_paths(model, [x]):
        np.testing.assert_allclose(eval_ref.evaluate(mod, x.numpy()), want, rtol=RTOL, atol=ATOL)


def test_small_transformer_with_multihead_attention_matches_torch():
    torch.manual_seed(0)
    model = SmallTransformer().eval()
    tokens = torch.randint(0, 20, (2, 6))
    with torch.no_grad():
        want = model(tokens).numpy()
    for mod in _both_paths(model, [tokens]):
        np.testing.assert_allclose(
            eval_ref.evaluate(mod, tokens.numpy()), want, rtol=RTOL, atol=ATOL
        )


def test_multihead_attention_weights_and_sequence_first_layout():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2).eval()  # (L, N, E) layout, returns averaged weights
    q, k = torch.randn(5, 2, 8), torch.randn(7, 2, 8)
    with torch.no_grad():
        want = [w.numpy() for w in mha(q, k, k)]
    mod = from_fx(_traced_mha(mha), [((5, 2, 8), "float32"), ((7, 2, 8), "float32")])
    got = eval_ref.evaluate(mod, q.numpy(), k.numpy())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def _traced_mha(mha):
    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, q, k):
            return self.mha(q, k, k)

    return torch.fx.symbolic_trace(Wrap())


def test_sdpa_block_matches_torch_through_export():
    torch.manual_seed(0)
    model = SdpaBlock().eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        want = model(x).numpy()
    mod = from_exported_program(torch.export.export(model, (x,)), unwrap_unit_return_tuple=True)
    np.testing.assert_allclose(eval_ref.evaluate(mod, x.numpy()), want, rtol=RTOL, atol=ATOL)


def test_symbolic_batch_compiles_and_runs_at_several_batch_sizes():
    torch.manual_seed(0)
    cnn = SmallCNN().eval()
    batch = torch.export.Dim("batch")
    ep = torch.export.export(cnn, (torch.randn(2, 3, 16, 16),), dynamic_shapes={"x": {0: batch}})
    transformer = SmallTransformer().eval()
    cases = [
        (cnn, from_exported_program(ep, unwrap_unit_return_tuple=True), (3, 16, 16), "float32"),
        (
            transformer,
            from_fx(torch.fx.symbolic_trace(transformer), [(("n", 6), "int64")]),
            (6,),
            "int64",
        ),
    ]
    for model, mod, rest, dtype in cases:
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
        for n in (1, 3):
            x = torch.randint(0, 20, (n, *rest)) if dtype == "int64" else torch.randn(n, *rest)
            with torch.no_grad():
                want = model(x).numpy()
            got = vm["main"](tvm.nd.array(x.numpy())).numpy()
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        y = torch.special.erfcx(x)
        z = self.shuffle(y).cumprod(dim=1)
        return torch.relu(z) + torch.special.erfcx(z)


def test_unsupported_ops_are_all_named_with_their_place():
    model = Unsupported().eval()
    with pytest.raises(OpNotImplemented) as info:
        from_fx(torch.fx.symbolic_trace(model), [((1, 4, 2, 2), "float32")])
    msg = str(info.value)
    assert "3 operator(s) are not supported" in msg
    assert "Tensor.cumprod" in msg and "PixelShuffle" in msg and "special_erfcx" in msg
    assert "module 'shuffle'" in msg and "node 'special_erfcx_1'" in msg

    ep = torch.export.export(model, (torch.randn(1, 4, 2, 2),))
    with pytest.raises(
        OpNotImplemented, match=r"(?s)aten.special_erfcx.*aten.pixel_shuffle.*"
    ) as info:
        from_exported_program(ep, run_ep_decomposition=False)
    assert "module 'shuffle' (PixelShuffle)" in str(info.value)
    # torch's decompositions write pixel_shuffle as reshapes and a permute; the others remain
    with pytest.raises(OpNotImplemented, match=r"2 operator\(s\).*cumprod.*special_erfcx"):
        from_exported_program(ep)


def test_keep_params_as_input_and_detach_params_round_trip():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).eval()
    x = torch.randn(5, 4)
    with torch.no_grad():
        want = model(x).numpy()
    for mod in (
        from_fx(torch.fx.symbolic_trace(model), [((5, 4), "float32")], keep_params_as_input=True),
        from_exported_program(
            torch.export.export(model, (x,)),
            keep_params_as_input=True,
            unwrap_unit_return_tuple=True,
        ),
    ):
        func = mod["main"]
        assert func.attrs["num_input"] == 1 and len(func.params) == 5
        detached, params = detach_params(mod)
        assert "params" not in detached["main"].attrs and "params" in mod["main"].attrs
        assert [tuple(p.shape) for p in params["main"]] == [
            tuple(v.struct_info.shape) for v in func.params[1:]
        ]
        args = [x.numpy()] + [p.numpy() for p in params["main"]]
        np.testing.assert_allclose(eval_ref.evaluate(detached, *args), want, rtol=RTOL, atol=ATOL)
        bound = relax.transform.BindParams(
            "main", {v.name_hint: p for v, p in zip(func.params[1:], params["main"])}
        )(detached)
        np.testing.assert_allclose(eval_ref.evaluate(bound, x.numpy()), want, rtol=RTOL, atol=ATOL)


def test_detach_params_leaves_functions_without_params_alone():
    model = nn.Linear(2, 2).eval()
    mod = from_fx(torch.fx.symbolic_trace(model), [((1, 2), "float32")])
    detached, params = detach_params(mod)
    assert params == {} and detached["main"] is mod["main"]


def test_output_conventions_follow_tvm():
    model = nn.Linear(3, 2).eval()
    x = torch.randn(1, 3)
    ep = torch.export.export(model, (x,))
    tuple_out = from_exported_program(ep)["main"].ret_struct_info
    assert isinstance(tuple_out, relax.TupleStructInfo) and len(tuple_out.fields) == 1
    bare = from_exported_program(ep, unwrap_unit_return_tuple=True)["main"].ret_struct_info
    assert isinstance(bare, relax.TensorStructInfo)
    fx_bare = from_fx(torch.fx.symbolic_trace(model), [((1, 3), "float32")])["main"]
    assert isinstance(fx_bare.ret_struct_info, relax.TensorStructInfo)
    pair = _traced_pair()
    bound = from_fx(pair, [((2,), "float32")])["main"]
    unbound = from_fx(pair, [((2,), "float32")], no_bind_return_tuple=True)["main"]
    assert isinstance(bound.body.body, relax.Var)  # the tuple is bound inside the dataflow block
    assert isinstance(unbound.body.body, relax.Tuple)
    assert "main" in from_fx(pair, [((2,), "float32")]).get_global_vars()[0].name_hint


def _traced_pair():
    class Pair(nn.Module):
        def forward(self, x):
            return x + 1, x * 2

    return torch.fx.symbolic_trace(Pair())


class _Upsample(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=1.5)


class _MaskIndex(nn.Module):
    def forward(self, x):
        return x[x > 0]


class _TrainingBatchNorm(nn.Module):
    def forward(self, x):
        return F.batch_norm(x, torch.zeros(2), torch.ones(2), training=True)


def test_modules_import_in_inference_mode_as_in_tvm():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Dropout(0.5))
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    model.train()  # not eval(): the importer still reads it as an inference model
    x = torch.randn(2, 2, 3, 3)
    mod = from_fx(torch.fx.symbolic_trace(model), [((2, 2, 3, 3), "float32")])
    with torch.no_grad():
        want = model.eval()(x).numpy()
    np.testing.assert_allclose(eval_ref.evaluate(mod, x.numpy()), want, rtol=RTOL, atol=ATOL)


def test_sizes_and_constants_as_outputs():
    class Sizes(nn.Module):
        def forward(self, x):
            return x.size()

    class Constant(nn.Module):
        def forward(self, x):
            return torch.tensor(3)

    shape_out = from_fx(torch.fx.symbolic_trace(Sizes()), [((1, "n", 4), "float32")])["main"]
    assert isinstance(shape_out.ret_struct_info, relax.ShapeStructInfo)
    const_out = from_fx(torch.fx.symbolic_trace(Constant()), [((2,), "float32")])
    assert int(eval_ref.evaluate(const_out, np.zeros(2, "float32"))) == 3


@pytest.mark.parametrize(
    "call,error,match",
    [
        (
            lambda: from_fx(nn.Linear(2, 2), [((1, 2), "float32")]),
            FrontendError,
            r"expected a torch.fx.GraphModule, got Linear; trace the model first",
        ),
        (
            lambda: from_fx(torch.fx.symbolic_trace(nn.Linear(2, 2)), []),
            FrontendError,
            r"the graph has 1 inputs \(input\w*\) but input_info describes 0",
        ),
        (
            lambda: from_fx(torch.fx.symbolic_trace(nn.Linear(2, 2)), [(1, 2)]),
            FrontendError,
            r"input_info\[0\] must be \(shape, dtype\)",
        ),
        (
            lambda: from_exported_program(nn.Linear(2, 2)),
            FrontendError,
            r"expected a torch.export.ExportedProgram, got Linear",
        ),
        (
            lambda: from_fx(
                torch.fx.symbolic_trace(_TrainingBatchNorm()), [((1, 2, 2, 2), "float32")]
            ),
            OpAttributeUnImplemented,
            r"at node 'batch_norm'.*training mode is not supported; call model.eval\(\)",
        ),
        (
            lambda: from_fx(torch.fx.symbolic_trace(_Upsample()), [((1, 1, 4, 5), "float32")]),
            OpAttributeUnImplemented,
            r"scale_factor=1.5 on a 4x5 image gives a fractional size; pass size=",
        ),
        (
            lambda: from_fx(torch.fx.symbolic_trace(_MaskIndex()), [((3,), "float32")]),
            OpAttributeUnImplemented,
            r"at node 'getitem'.*boolean mask indexing \(its output shape depends on data\)",
        ),
    ],
)
def test_import_errors_say_what_to_do(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _hand_written_importer(gm, shape):
    """The MLC course's idea in a few lines: walk the fx graph, emit TE for each torch call."""
    from minitvm import te, topi

    def te_matmul(a, b):
        k = te.reduce_axis((0, a.shape[1]), name="k")
        return te.compute(
            (a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul"
        )

    rules = {torch.matmul: te_matmul, torch.relu: topi.nn.relu}
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    env = {}
    with bb.function("main", [x]):
        with bb.dataflow():
            for node in gm.graph.nodes:
                if node.op == "placeholder":
                    env[node] = x
                elif node.op == "get_attr":
                    env[node] = relax.const(getattr(gm, node.target).detach().numpy())
                elif node.op == "call_function":
                    env[node] = bb.emit_te(rules[node.target], *[env[a] for a in node.args])
                elif node.op == "output":
                    out = bb.emit_output(env[node.args[0]])
        bb.emit_func_output(out)
    return bb.get()


def test_a_hand_written_fx_importer_still_works_beside_ours():
    class MatmulRelu(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 3))

        def forward(self, x):
            return torch.relu(torch.matmul(x, self.weight))

    gm = torch.fx.symbolic_trace(MatmulRelu().eval())
    x = np.random.default_rng(0).standard_normal((2, 4)).astype("float32")
    with torch.no_grad():
        want = gm(torch.from_numpy(x)).numpy()
    for mod in (_hand_written_importer(gm, (2, 4)), from_fx(gm, [((2, 4), "float32")])):
        np.testing.assert_allclose(_run_vm(mod, x), want, rtol=RTOL, atol=ATOL)


def test_imported_module_prints_and_parses_back():
    from minitvm.ir import assert_structural_equal
    from minitvm.script import from_source

    mod = from_fx(torch.fx.symbolic_trace(SmallCNN().eval()), [((1, 3, 8, 8), "float32")])
    assert_structural_equal(from_source(mod.script()), mod)
    kept, _ = detach_params(
        from_fx(
            torch.fx.symbolic_trace(SmallTransformer().eval()),
            [(("n", 6), "int64")],
            keep_params_as_input=True,
        )
    )
    assert_structural_equal(from_source(kept.script()), kept)
