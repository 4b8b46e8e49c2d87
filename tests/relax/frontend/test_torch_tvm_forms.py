"""The torch importers emit the relax forms TVM's importer emits (op choice, attributes,
negative dims as written), and those forms compute what torch computes."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program


def _import(model, *args):
    return from_exported_program(torch.export.export(model.eval(), args))


def _calls(mod):
    """(op name, attrs) of every call bound in main, in order."""
    block = mod["main"].body.blocks[0]
    return [
        (b.value.op.name, dict(b.value.attrs or {}))
        for b in block.bindings
        if isinstance(b.value, relax.Call)
    ]


def _run(mod, *args):
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a.numpy()) for a in args])
    return [o.numpy() for o in out]


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


CASES = [
    # (name, fn, input shapes, expected op sequence, attrs to check on the first call)
    ("mean_neg_dim", lambda x: x.mean(-1), [(4, 5)], ["relax.mean"], {"axis": (-1,)}),
    ("argmax_neg_dim", lambda x: x.argmax(-1), [(4, 5)], ["relax.argmax"], {"axis": -1}),
    ("unsqueeze_neg", lambda x: x.unsqueeze(-1), [(4, 5)], ["relax.expand_dims"], {}),
    ("squeeze_dim", lambda x: x.squeeze(1), [(3, 1, 4, 1)], ["relax.squeeze"], {}),
    ("squeeze_all", lambda x: x.squeeze(), [(3, 1, 4, 1)], ["relax.squeeze"], {"axis": None}),
    ("chunk_even", lambda x: torch.chunk(x, 3, 1), [(1, 6, 2)], ["relax.split"], {}),
    ("matmul", lambda a, b: a @ b, [(3, 4), (4, 5)], ["relax.matmul"], {"out_dtype": "float32"}),
    (
        "addmm_bias_first",
        lambda x, a, b: torch.addmm(x, a, b),
        [(3, 5), (3, 4), (4, 5)],
        ["relax.matmul", "relax.add"],
        {"out_dtype": "float32"},
    ),
    (
        "cumsum_dtype",
        lambda x: torch.cumsum(x * 3, 1, dtype=torch.int32),
        [(2, 5)],
        ["relax.multiply", "relax.cumsum"],
        {},
    ),
    (
        "arange",
        lambda x: x + torch.arange(0, 5),
        [(2, 5)],
        ["relax.arange", "relax.astype", "relax.add"],
        {},
    ),
    ("new_ones", lambda x: x + x.new_ones(2, 5), [(2, 5)], ["relax.full", "relax.add"], {}),
]


@pytest.mark.parametrize("name, fn, shapes, ops, attrs", CASES, ids=[c[0] for c in CASES])
def test_torch_import_uses_tvm_form_and_matches_torch(name, fn, shapes, ops, attrs):
    rng = np.random.default_rng(0)
    args = [torch.tensor(rng.standard_normal(s).astype("float32")) for s in shapes]
    mod = _import(_Fn(fn), *args)
    calls = _calls(mod)
    assert [c[0] for c in calls] == ops, mod.script()
    for key, value in attrs.items():
        got = calls[0][1][key]
        assert (tuple(got) if isinstance(got, list | tuple) else got) == value, mod.script()
    want = fn(*args)
    want = list(want) if isinstance(want, tuple) else [want]
    got = _run(mod, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.numpy().dtype
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


def test_squeeze_of_non_unit_dim_is_identity_as_in_torch():
    x = torch.randn(3, 4)
    mod = _import(_Fn(lambda x: x.squeeze(1) + 1), x)
    assert "relax.squeeze" not in [c[0] for c in _calls(mod)]
    np.testing.assert_allclose(_run(mod, x)[0], (x.squeeze(1) + 1).numpy(), rtol=1e-6)


def test_split_size_not_dividing_keeps_torch_sizes():
    # 6 by 4 is (4, 2) in torch; a section count (2) would split it (3, 3)
    x = torch.randn(6, 2)
    mod = _import(_Fn(lambda x: torch.split(x, 4)), x)
    got = _run(mod, x)
    want = torch.split(x, 4)
    assert [g.shape for g in got] == [tuple(w.shape) for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy())


def test_conv_bias_and_conv1d_forms_match_torch():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv1d(3, 4, 3, padding=1)
            self.c2 = torch.nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, x, y):
            return self.c1(x), self.c2(y)

    torch.manual_seed(0)
    m = M()
    x, y = torch.randn(1, 3, 8), torch.randn(1, 3, 5, 5)
    mod = _import(m, x, y)
    ops = [c[0] for c in _calls(mod)]
    assert "relax.nn.conv1d" in ops and "relax.expand_dims" not in ops, mod.script()
    conv1d = next(c for c in _calls(mod) if c[0] == "relax.nn.conv1d")
    assert conv1d[1]["out_dtype"] == "float32"
    got = _run(mod, x, y)
    for g, w in zip(got, m(x, y)):
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask", [None, "float4", "float2", "causal", "bool"])
def test_attention_as_relax_attention_matches_torch(mask):
    F = torch.nn.functional
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 4)
    extra = {
        None: (),
        "float4": (torch.randn(2, 3, 5, 6),),
        "float2": (torch.randn(5, 6),),
        "causal": (),
        "bool": (torch.rand(5, 6) > 0.3,),
    }[mask]

    def fn(q, k, v, *m):
        return F.scaled_dot_product_attention(q, k, v, *m, is_causal=mask == "causal")

    mod = _import(_Fn(fn), q, k, v, *extra)
    ops = [c[0] for c in _calls(mod)]
    assert ("relax.nn.attention" in ops) == (mask != "bool"), mod.script()
    np.testing.assert_allclose(
        _run(mod, q, k, v, *extra)[0], fn(q, k, v, *extra).numpy(), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind_as_split_squeeze_matches_torch(dim):
    x = torch.randn(3, 2, 4)
    mod = _import(_Fn(lambda x: torch.unbind(x, dim)), x)
    ops = [c[0] for c in _calls(mod)]
    assert ops[0] == "relax.split" and "relax.squeeze" in ops, mod.script()
    got, want = _run(mod, x), torch.unbind(x, dim)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy())


def test_embedding_casts_indices_to_int32_and_matches_torch():
    torch.manual_seed(0)
    m = torch.nn.Embedding(10, 3)
    idx = torch.tensor([[1, 9], [0, 4]])
    mod = _import(m, idx)
    calls = _calls(mod)
    assert [c[0] for c in calls] == ["relax.astype", "relax.take"], mod.script()
    np.testing.assert_allclose(_run(mod, idx)[0], m(idx).detach().numpy())


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_matches_torch(dim):
    xs = [torch.randn(2, 3) for _ in range(3)]
    mod = _import(_Fn(lambda a, b, c: torch.stack((a, b, c), dim)), *xs)
    np.testing.assert_allclose(_run(mod, *xs)[0], torch.stack(xs, dim).numpy())
