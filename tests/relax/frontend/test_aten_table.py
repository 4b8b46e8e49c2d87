"""torch's core ATen opset through from_exported_program, generated from tools/aten_table.py.

Each supported op (converted, or decomposed by run_decompositions into converted ops) runs
its samples as a one-op module: exported, imported, built for llvm, run on the VM and
compared with torch (values, shape and dtype). The default run takes a fixed spread of the
cases; `-m slow` runs them all.
"""

import importlib.util
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import minitvm as tvm
from minitvm import relax
from minitvm.error import OpNotImplemented
from minitvm.relax.frontend.torch import from_exported_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def _load_tool():
    spec = importlib.util.spec_from_file_location(
        "aten_table", os.path.join(ROOT, "tools", "aten_table.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


at = _load_tool()
OPS = {at.op_name(op): op for op in at.core_ops()}
STATUS = {name: at.status(op) for name, op in OPS.items()}
# symbolic-size queries: they return ints, not tensors, and are exercised by the dynamic-shape
# tests (tests/relax/frontend/test_torch_models.py, test_hf_models.py)
NO_SAMPLE = {"sym_size.int", "sym_stride.int", "sym_is_contiguous.default"}
DEFAULT_EVERY = 16  # the default run checks every 16th case


def _cases():
    params, k = [], 0
    for name, op in OPS.items():
        if STATUS[name] == "refused" or name in NO_SAMPLE:
            continue
        for i, _ in enumerate(at.sample(op) or ()):
            marks = () if k % DEFAULT_EVERY == 0 else (pytest.mark.slow,)
            params.append(pytest.param(name, i, id=f"{name}-{i}", marks=marks))
            k += 1
    return params


class OneOp(torch.nn.Module):
    """forward(*tensors) calls the op with the sample's tensors put back in their places."""

    def __init__(self, op, template, kwargs, first_only):
        super().__init__()
        self.op, self.template, self.kwargs, self.first_only = op, template, kwargs, first_only

    def forward(self, *xs):
        out = self.op(*_fill(self.template, xs), **self.kwargs)
        return out[0] if self.first_only else out


def _split(args):
    """(template with tensors replaced by their input positions, the tensors)."""
    tensors = []

    def walk(a):
        if isinstance(a, torch.Tensor):
            tensors.append(a)
            return _Slot(len(tensors) - 1)
        if isinstance(a, list | tuple):
            return type(a)(walk(x) for x in a)
        return a

    return walk(args), tensors


class _Slot:
    def __init__(self, i):
        self.i = i


def _fill(template, xs):
    if isinstance(template, _Slot):
        return xs[template.i]
    if isinstance(template, list | tuple):
        return type(template)(_fill(x, xs) for x in template)
    return template


def _run(name, args, kwargs):
    """(torch outputs, minitvm outputs) of the one-op module."""
    short = name.removesuffix(".default")
    template, tensors = _split(args)
    model = OneOp(OPS[name], template, kwargs, short in at.FIRST_OUTPUT_ONLY)
    expected = model(*tensors)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, tuple(tensors))
    mod = from_exported_program(ep)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(t.numpy()) for t in tensors])
    expected = list(expected) if isinstance(expected, list | tuple) else [expected]
    got = [out] if hasattr(out, "numpy") else list(out)
    return [e.numpy() for e in expected], [g.numpy() for g in got]


@pytest.mark.parametrize("name, case", _cases())
def test_core_aten_op_matches_torch(name, case):
    args, kwargs = at.sample(OPS[name])[case]
    expected, got = _run(name, args, kwargs)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert (g.dtype, g.shape) == (e.dtype, e.shape)
        if name.removesuffix(".default") not in at.SHAPE_ONLY:
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(at.DECOMPOSES_TO_REFUSED))
def test_op_decomposed_into_refused_ops_is_refused_by_name(name):
    key = next(k for k in OPS if k.removesuffix(".default") == name)
    args, kwargs = at.sample(OPS[key])[0]
    with pytest.raises(OpNotImplemented, match=at.DECOMPOSES_TO_REFUSED[name]):
        _run(key, args, kwargs)


def test_table_in_docs_matches_the_importer():
    with open(at.DOC, encoding="utf-8") as f:
        text = f.read()
    assert at.render() in text, "docs/compatibility.md is stale: run tools/aten_table.py --write"


def test_every_supported_core_op_has_samples():
    missing = [n for n, s in STATUS.items() if s != "refused" and n not in NO_SAMPLE]
    missing = [n for n in missing if not at.sample(OPS[n])]
    assert not missing, f"give these ops samples in tools/aten_table.py: {missing}"


def test_table_covers_the_whole_core_opset_with_three_statuses():
    assert len(OPS) > 150 and set(STATUS.values()) == {"converted", "decomposed", "refused"}
    assert STATUS["add.Tensor"] == "converted" and STATUS["reflection_pad2d.default"] == (
        "decomposed"
    )


@pytest.mark.parametrize(
    "fn, op",
    [
        (lambda x: torch.ops.aten.expm1.default(x), "expm1"),
        (lambda x: torch.ops.aten.diagonal.default(x), "diagonal"),
        (lambda x: torch.atan2(x, x), "atan2"),
    ],
)
def test_refused_core_op_is_named_with_the_fix(fn, op):
    class M(torch.nn.Module):
        def forward(self, x):
            return fn(x)

    assert STATUS[f"{op}.default"] == "refused"
    ep = torch.export.export(M(), (torch.randn(3, 5),))
    with pytest.raises(OpNotImplemented, match=rf"(?s)aten\.{op}\.default.*custom_convert_map"):
        from_exported_program(ep)


def test_reading_an_output_the_importer_does_not_compute_is_refused():
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.ops.aten.max_pool2d_with_indices.default(x, [2, 2])[1].float()

    ep = torch.export.export(M(), (torch.randn(1, 2, 4, 4),))
    with pytest.raises(OpNotImplemented, match="indices .output 1. of max_pool2d_with_indices"):
        from_exported_program(ep)


def test_the_converter_table_is_keyed_by_aten_op_objects():
    """The importer finds an aten node's converter by its overload packet, not by a string:
    every key is a torch.ops.aten packet, every name of the aten-only tables is one (a
    misspelt name would fail here), and an in-place overload finds its functional twin's."""
    from minitvm.relax.frontend.torch import _importer, _ops

    table = _importer.aten_table()
    assert all(isinstance(k, torch._ops.OpOverloadPacket) for k in table)
    for name in (*_ops.ATEN, *_ops.NO_OPS):
        assert getattr(torch.ops.aten, name) in table, name
    aten = torch.ops.aten
    assert _importer.aten_op_converter(aten.add.Tensor) is table[aten.add]
    assert _importer.aten_op_converter(aten.add_.Tensor) is table[aten.add]
    assert _importer.aten_op_converter(aten.batch_norm.default) is _ops.ATEN["batch_norm"]
    assert _importer.aten_op_converter(torch.ops.prims.add.default) is None
