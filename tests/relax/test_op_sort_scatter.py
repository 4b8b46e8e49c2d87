"""relax.sort / argsort / topk / scatter_elements / scatter_nd / gather_nd / one_hot: built,
legalized, compiled and run on the VM against torch and numpy (stable order, ties, NaN,
odd and symbolic shapes), their errors, TVMScript round trips, and the importers (ONNX's own
node cases, torch eager)."""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import MiniTVMError, ShapeError
from minitvm.relax import op

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ----------------------------------------------------------------------------- helpers


def _sinfo(spec):
    dtype, shape = spec
    return relax.TensorStructInfo(tuple(tir.Var(d, "int64") if isinstance(d, str) else d
                                        for d in shape), dtype)  # fmt: skip


@functools.lru_cache(maxsize=64)
def _compiled(build, specs):
    """The VM function for `build(*params)` with params of `specs` ((dtype, shape) pairs; a
    str dim is symbolic). Cached: Hypothesis examples of one kind share a kernel."""
    names = {}
    params = []
    for k, (dtype, shape) in enumerate(specs):
        dims = tuple(names.setdefault(d, tir.Var(d, "int64")) if isinstance(d, str) else d
                     for d in shape)  # fmt: skip
        params.append(relax.Var(f"a{k}", relax.TensorStructInfo(dims, dtype)))
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), target="llvm")
    return relax.VirtualMachine(ex, tvm.cpu())["main"]


def _run(build, specs, *arrays):
    out = _compiled(build, tuple(specs))(*[tvm.nd.array(a) for a in arrays])
    if isinstance(out, list | tuple) or type(out).__name__ not in ("NDArray",):
        try:
            return [o.numpy() for o in out]
        except TypeError:
            pass
    return out.numpy()


def _sym(shape, axis):
    """`shape` with every dim but `axis` symbolic (named d0, d1, ...)."""
    return tuple(n if k == axis else f"d{k}" for k, n in enumerate(shape))


# ----------------------------------------------------------------------------- sort family


def _data(draw, shape, dtype):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if dtype == "float32":
        x = rng.integers(-3, 4, shape).astype("float32")  # few values: many ties
        x[rng.random(shape) < 0.2] = np.nan
        x[rng.random(shape) < 0.1] = -np.inf
        return x
    return rng.integers(-3, 4, shape).astype(dtype)


@st.composite
def sort_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    dtype = draw(st.sampled_from(["float32", "int32"]))
    return _data(draw, shape, dtype), axis, draw(st.booleans()), draw(st.booleans())


def _torch_sort(x, axis, descending):
    values, order = torch.sort(torch.from_numpy(x), dim=axis, descending=descending, stable=True)
    return values.numpy(), order.numpy()


@settings(max_examples=15, deadline=None, derandomize=True)
@given(sort_cases())
def test_sort_and_argsort_match_torch_stable_sort(case):
    x, axis, descending, symbolic = case
    shape = _sym(x.shape, axis % x.ndim) if symbolic else x.shape
    values, order = _torch_sort(x, axis, descending)
    got = _run(lambda a: op.sort(a, axis, descending), [(str(x.dtype), shape)], x)
    np.testing.assert_array_equal(got, values)  # NaN sorts as the largest value, as in torch
    got = _run(lambda a: op.argsort(a, axis, descending, "int64"), [(str(x.dtype), shape)], x)
    np.testing.assert_array_equal(got, order)  # ties: lower position first


@settings(max_examples=12, deadline=None, derandomize=True)
@given(sort_cases(), st.integers(1, 9))
def test_topk_is_the_head_of_the_stable_sort(case, k):
    x, axis, largest, symbolic = case
    k = min(k, x.shape[axis])
    shape = _sym(x.shape, axis % x.ndim) if symbolic else x.shape
    values, order = _torch_sort(x, axis, largest)
    head = [slice(None)] * x.ndim
    head[axis] = slice(0, k)
    got_v, got_i = _run(
        lambda a: op.topk(a, k, axis, "both", largest, "int32"), [(str(x.dtype), shape)], x
    )
    np.testing.assert_array_equal(got_v, values[tuple(head)])
    np.testing.assert_array_equal(got_i, order[tuple(head)].astype("int32"))
    assert got_i.dtype == np.int32


def test_sort_long_rows_and_a_symbolic_sorted_axis():
    rng = np.random.default_rng(0)
    f = lambda a: op.sort(a, 0)
    for n in (0, 1, 2, 33, 1000):
        x = rng.standard_normal(n).astype("float32")
        np.testing.assert_array_equal(_run(f, [("float32", ("n",))], x), np.sort(x))


def test_topk_ret_types_and_whole_axis():
    x = np.array([[3, 1, 2, 1], [0, 5, 5, -1]], "float32")
    vals = _run(lambda a: op.topk(a, 2, ret_type="values"), [("float32", (2, 4))], x)
    np.testing.assert_array_equal(vals, [[3, 2], [5, 5]])
    idx = _run(lambda a: op.topk(a, 0, ret_type="indices", largest=False), [("float32", (2, 4))], x)
    np.testing.assert_array_equal(idx, [[1, 3, 2, 0], [3, 0, 1, 2]])  # k < 1: the whole axis


# ----------------------------------------------------------------------------- scatter family

TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin", "mean": "mean"}


@st.composite
def scatter_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    ishape = tuple(draw(st.integers(1, d)) for d in shape)
    axis = draw(st.integers(-rank, rank - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n = shape[axis]
    indices = rng.integers(-n, n, ishape)
    data = rng.standard_normal(shape).astype("float32")
    updates = rng.standard_normal(ishape).astype("float32")
    return data, indices, updates, axis, draw(st.sampled_from(sorted(TORCH_REDUCE)))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(scatter_cases())
def test_scatter_elements_reductions_match_torch_scatter_reduce(case):
    data, indices, updates, axis, reduction = case
    specs = [("float32", data.shape), ("int64", indices.shape), ("float32", updates.shape)]
    got = _run(lambda d, i, u: op.scatter_elements(d, i, u, axis, reduction), specs,
               data, indices, updates)  # fmt: skip
    wrapped = np.where(indices < 0, indices + data.shape[axis], indices)
    want = torch.from_numpy(data).scatter_reduce(
        axis, torch.from_numpy(wrapped), torch.from_numpy(updates), TORCH_REDUCE[reduction]
    )
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def test_scatter_elements_update_last_wins_and_symbolic_dims():
    data = np.zeros((3, 4), "float32")
    indices = np.array([[1, 0, 2, -1], [1, 1, 0, 0]])
    updates = np.arange(8, dtype="float32").reshape(2, 4) + 1
    f = lambda d, i, u: op.scatter_elements(d, i, u, 0)
    specs = [("float32", ("n", "m")), ("int64", ("k", "m")), ("float32", ("k", "m"))]
    got = _run(f, specs, data, indices, updates)
    want = data.copy()
    for j in np.ndindex(*indices.shape):  # in row-major order: a repeated index keeps the last
        want[indices[j], j[1]] = updates[j]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max"])
def test_scatter_nd_matches_torch_index_put(reduction):
    rng = np.random.default_rng(1)
    data = rng.standard_normal((4, 3, 5)).astype("float32")
    indices = np.array([[0, 2], [3, -1], [0, 2], [1, 0]]) if reduction != "update" else np.array(
        [[0, 2], [3, -1], [1, 0]]
    )  # fmt: skip
    updates = rng.standard_normal((len(indices), 5)).astype("float32")
    specs = [("float32", data.shape), ("int64", indices.shape), ("float32", updates.shape)]
    got = _run(lambda d, i, u: op.scatter_nd(d, i, u, reduction), specs, data, indices, updates)
    want = torch.from_numpy(data.copy())
    pos = torch.from_numpy(np.where(indices < 0, indices + np.array([4, 3]), indices))
    if reduction in ("update", "add"):
        want.index_put_((pos[:, 0], pos[:, 1]), torch.from_numpy(updates), reduction == "add")
    else:
        for j in range(len(indices)):
            cell = want[pos[j, 0], pos[j, 1]]
            u = torch.from_numpy(updates[j])
            fn = {"mul": torch.mul, "min": torch.minimum, "max": torch.maximum}[reduction]
            want[pos[j, 0], pos[j, 1]] = fn(cell, u)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_matches_numpy_fancy_indexing(batch_dims):
    rng = np.random.default_rng(2)
    data = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    indices = rng.integers(-2, 2, (2, 6, 2))
    specs = [("float32", ("b", 3, 4, 5)), ("int64", ("b", 6, 2))]
    got = _run(lambda d, i: op.gather_nd(d, i, batch_dims), specs, data, indices)
    if batch_dims == 0:
        want = data[indices[..., 0], indices[..., 1]]
    else:
        want = np.stack([data[b][indices[b, :, 0], indices[b, :, 1]] for b in range(2)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_matches_torch_one_hot(axis):
    indices = np.array([[0, 3, 1], [4, -1, 2]])
    got = _run(lambda i: op.one_hot(i, 7.5, -1.0, 5, axis), [("int64", ("n", 3))], indices)
    hot = torch.nn.functional.one_hot(torch.from_numpy(np.where(indices < 0, 5, indices)), 6)
    want = np.where(hot.numpy()[..., :5] == 1, 7.5, -1.0).astype("float32")
    np.testing.assert_array_equal(got, np.moveaxis(want, -1, axis))  # -1: a row of off values


# ----------------------------------------------------------------------------- op table rows

# each op's numpy reference (relax.eval_ref), shape rule and compiled kernel agree; inputs
# hold ties (sort) and negative indices (scatter/gather)
TABLE_ROWS = {
    "sort": (lambda x: op.sort(x, 1, True), [("float32", ("n", 6))]),
    "argsort": (lambda x: op.argsort(x, 0), [("float32", ("n", 5))]),
    "topk": (lambda x: op.topk(x, 2, 1), [("float32", ("n", 6))]),
    "scatter_elements": (
        lambda d, i, u: op.scatter_elements(d, i, u, 1, "mean"),
        [("float32", ("n", 8)), ("int32", ("n", 3)), ("float32", ("n", 3))],
    ),
    "scatter_nd": (
        lambda d, i, u: op.scatter_nd(d, i, u, "max"),
        [("float32", (8, 4)), ("int32", ("n", 1)), ("float32", ("n", 4))],
    ),
    "gather_nd": (lambda d, i: op.gather_nd(d, i), [("float32", (8, 7)), ("int32", ("n", 2))]),
    "one_hot": (lambda i: op.one_hot(i, 2.0, 0.5, 5), [("int32", ("n", 3))]),
}


@pytest.mark.parametrize("name", sorted(TABLE_ROWS))
def test_numpy_reference_shape_rule_and_kernel_agree(name):
    from minitvm.relax.eval_ref import evaluate

    build, specs = TABLE_ROWS[name]
    rng = np.random.default_rng(3)
    arrays = [
        rng.integers(-2, 7, [4 if d == "n" else d for d in shape]).astype(dtype)
        for dtype, shape in specs
    ]
    params = [relax.Var(f"a{k}", _sinfo(s)) for k, s in enumerate(specs)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    mod = bb.get()
    want = evaluate(mod, *arrays)  # checks the values against the inferred struct info too
    got = _run(build, specs, *arrays)
    for g, w in zip(*(([got], [want]) if isinstance(want, np.ndarray) else (got, want))):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_topk_both_gradient_reaches_the_picked_positions():
    from minitvm.relax.eval_ref import evaluate
    from minitvm.relax.transform.gradient import gradient

    x = np.array([[0.5, -1.0, 2.0, 0.1], [3.0, 1.0, -2.0, 0.0]], "float32")
    w = np.array([[1.0, 2.0], [3.0, -1.0]], "float32")
    xv = relax.Var("x", relax.TensorStructInfo((2, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            both = bb.emit(op.topk(xv, 2, 1))
            values = bb.emit(relax.TupleGetItem(both, 0))
            loss = bb.emit_output(op.sum(op.multiply(values, relax.const(w))))
        bb.emit_func_output(loss)
    _, (grad,) = evaluate(gradient(bb.get(), "main"), x, func_name="main_adjoint")
    t = torch.tensor(x, requires_grad=True)
    (torch.topk(t, 2, 1).values * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(np.asarray(grad), t.grad.numpy())


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "build, specs, arrays, message",
    [
        (
            lambda d, i, u: op.scatter_elements(d, i, u, 1),
            [("float32", (2, 3)), ("int64", (2, 1)), ("float32", (2, 1))],
            [np.zeros((2, 3), "float32"), np.array([[1], [3]]), np.ones((2, 1), "float32")],
            r"scatter_elements: an index is outside \[-dim, dim\) of data's axis 1",
        ),
        (
            lambda d, i, u: op.scatter_nd(d, i, u, "add"),
            [("float32", (4,)), ("int64", (1, 1)), ("float32", (1,))],
            [np.zeros(4, "float32"), np.array([[-5]]), np.ones(1, "float32")],
            r"scatter_nd: an index is outside",
        ),
        (
            lambda d, i: op.gather_nd(d, i),
            [("float32", (4, 2)), ("int64", (1, 1))],
            [np.zeros((4, 2), "float32"), np.array([[4]])],
            r"index|outside|bounds",
        ),
        (
            lambda d, i, u: op.scatter_elements(d, i, u, 1),
            [("float32", ("n", 3)), ("int64", ("k", 1)), ("float32", ("k", 1))],
            [np.zeros((2, 3), "float32"), np.zeros((3, 1), "int64"), np.ones((3, 1), "float32")],
            r"scatter_elements: indices is longer than data on axis 0",
        ),
        (
            lambda x: op.topk(x, 3),
            [("float32", (2, "n"))],
            [np.zeros((2, 2), "float32")],
            r"topk: k=3 is larger than the length of data's axis 1",
        ),
        (
            lambda d, i, u: op.scatter_nd(d, i, u),
            [("float32", (4, 3)), ("int64", ("k", 1)), ("float32", ("j", 3))],
            [np.zeros((4, 3), "float32"), np.zeros((3, 1), "int64"), np.ones((2, 3), "float32")],
            r"scatter_nd: updates differs from indices.shape\[:-1\] \+ data.shape\[1:\] on axis 0",
        ),
        (
            lambda d, i: op.gather_nd(d, i, 1),
            [("float32", ("b", 3)), ("int64", ("c", 1))],
            [np.zeros((2, 3), "float32"), np.zeros((3, 1), "int64")],
            r"index|outside|bounds",
        ),
    ],
)
def test_out_of_range_indices_raise_at_run_time(build, specs, arrays, message):
    with pytest.raises(MiniTVMError, match=message):
        _run(build, specs, *arrays)


def test_shape_rules_refuse_bad_arguments():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    i = relax.Var("i", relax.TensorStructInfo((2, 3), "int64"))
    f = relax.Var("f", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, i, f]):
        with pytest.raises(ShapeError, match=r"relax.topk: k=4 is larger than data's axis 1"):
            bb.emit(op.topk(x, 4))
        with pytest.raises(ShapeError, match=r"reduction 'median' is not one of"):
            bb.emit(op.scatter_elements(x, i, x, 0, "median"))
        with pytest.raises(MiniTVMError, match=r"indices must have an integer dtype"):
            bb.emit(op.gather_nd(x, f))
        with pytest.raises(ShapeError, match=r"batch_dims \(2\) \+ the last dim of indices"):
            bb.emit(op.gather_nd(x, i, 2))
        with pytest.raises(ShapeError, match=r"ret_type 'all' must be one of"):
            op.topk(x, 1, ret_type="all")
        bb.emit_func_output(x)


def test_script_prints_and_parses_back():
    x = relax.Var("x", _sinfo(("float32", ("n", 4))))
    i = relax.Var("i", _sinfo(("int64", (2, 4))))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, i]):
        with bb.dataflow():
            calls = [
                op.sort(x, 0, True),
                op.argsort(x, descending=True, dtype="int64"),
                op.topk(x, 2, 1, "indices", False),
                op.scatter_elements(x, i, op.zeros((2, 4), "float32"), 1, "mean"),
                op.scatter_nd(x, op.reshape(i, (8, 1)), op.zeros((8, 4), "float32"), "max"),
                op.gather_nd(x, op.reshape(i, (4, 2)), 0),
                op.one_hot(i, 1.0, 0.0, 3, 0),
            ]
            out = bb.emit_output(relax.Tuple([bb.emit(c) for c in calls]))
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    for name in ("R.sort", "R.argsort", "R.topk", "R.scatter_elements", "R.scatter_nd",
                 "R.gather_nd", "R.one_hot"):  # fmt: skip
        assert name in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


# ----------------------------------------------------------------------------- ONNX


def _conformance():
    spec = importlib.util.spec_from_file_location(
        "onnx_conformance", os.path.join(ROOT, "tools", "onnx_conformance.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# the input each op needs at import time (it shapes the output); ONNX's cases feed it at run
# time, which minitvm refuses naming the input, so these runs make it an initializer
IMPORT_TIME_INPUT = {"TopK": 1, "OneHot": 1, "Compress": 1}
ONNX_CASES = "top_k|scatter_elements|scatter_with|scatter_without|scatternd|gathernd|onehot|compress|reversesequence"
ONE_PER_OP = [
    "test_top_k_same_values_2d",
    "test_scatter_elements_with_duplicate_indices",
    "test_scatternd_min",
    "test_gathernd_example_int32_batch_dim1",
    "test_onehot_negative_indices",
    "test_compress_negative_axis",
    "test_reversesequence_batch",
    "test_scatter_with_axis",
]


def _as_initializers(case):
    import onnx
    from onnx import numpy_helper

    model = copy.deepcopy(case.model)
    inputs, outputs = case.data_sets[0]
    inputs = list(inputs)
    node = model.graph.node[0]
    pos = IMPORT_TIME_INPUT.get(node.op_type)
    if pos is not None:
        name = node.input[pos]
        k = [v.name for v in model.graph.input].index(name)
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(inputs[k]), name))
        del model.graph.input[k]
        del inputs[k]
    if node.op_type == "Scatter":  # Scatter-9 (opset 10) is ScatterElements-11 renamed
        model = onnx.version_converter.convert_version(model, 11)
    return types.SimpleNamespace(
        name=case.name, model=model, data_sets=[(inputs, outputs)], rtol=case.rtol, atol=case.atol
    )


def _onnx_rows(names):
    pytest.importorskip("onnx")
    tool = _conformance()
    cases = tool.collect(match=ONNX_CASES)
    chosen = {n: _as_initializers(c) for n, c in cases.items() if names is None or n in names}
    return tool.run(chosen, batch=60, timeout=300)


def _check_onnx(rows):
    bad = [
        f"{r['case']}: {r['kind']} {r['msg']}"
        for r in rows
        if r["kind"] != "ok" and "bfloat16" not in r["msg"]  # no bfloat16 in minitvm
    ]
    assert not bad, "\n".join(bad)


def test_onnx_node_cases_one_per_op():
    rows = _onnx_rows(ONE_PER_OP)
    assert len(rows) == len(ONE_PER_OP)
    _check_onnx(rows)


@pytest.mark.slow
def test_onnx_node_cases_all():
    rows = _onnx_rows(None)
    assert len(rows) >= 40
    _check_onnx(rows)


# ----------------------------------------------------------------------------- torch


class _Sorting(torch.nn.Module):
    def forward(self, x, i, s):
        a, b = torch.sort(x, dim=1, descending=True, stable=True)
        v, k = torch.topk(x, 3, dim=0, largest=False)
        return (a, b, torch.argsort(x, dim=0), v, k)


class _Scatter(torch.nn.Module):
    def forward(self, x, i, s):
        return (
            x.scatter(0, i, s),
            x.scatter(1, i, 2.5),
            torch.scatter_add(x, 0, i, s),
            x.scatter_reduce(0, i, s, "amax", include_self=False),
            x.scatter_reduce(0, i, s, "mean", include_self=False),
            x.scatter_reduce(0, i, s, "prod"),
            x.scatter_reduce(1, i, s, "amin", include_self=False),
            x.gather(1, i),
            torch.nn.functional.one_hot(i, 7),
        )


def _torch_inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 7, generator=g)  # distinct values: torch.topk breaks ties its own way
    i = torch.randint(0, 5, (3, 4), generator=g)
    return x, i, torch.randn(3, 6, generator=g)


def _check_torch(mod, model, inputs):
    ex = relax.build(mod, target="llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.nd.array(t.numpy()) for t in inputs])
    want = model(*inputs)
    assert len(got) == len(want)
    for n, (g, w) in enumerate(zip(got, want)):
        g, w = g.numpy(), w.numpy()
        assert g.dtype == w.dtype, (n, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"output {n}")


@pytest.mark.parametrize("model", [_Sorting, _Scatter])
def test_torch_export_matches_eager(model):
    from minitvm.relax.frontend.torch import from_exported_program

    inputs = _torch_inputs()
    ep = torch.export.export(model(), inputs)
    _check_torch(from_exported_program(ep), model(), inputs)


@pytest.mark.parametrize("model", [_Sorting, _Scatter])
def test_torch_fx_matches_eager(model):
    from minitvm.relax.frontend.torch import from_fx

    inputs = _torch_inputs()
    graph = torch.fx.symbolic_trace(model())
    specs = [(tuple(t.shape), str(t.dtype).replace("torch.", "")) for t in inputs]
    _check_torch(from_fx(graph, specs), model(), inputs)


class _IndexPut(torch.nn.Module):
    def forward(self, x, i, j, v):
        a = torch.ops.aten.index_put.default(x, [i, j], v, True)
        b = torch.ops.aten.index_put.default(x, [j], v[0])
        c = x.clone()
        c[i, j] = 2.0
        return a, b, c


def test_torch_index_put_matches_eager():
    from minitvm.relax.frontend.torch import from_exported_program

    g = torch.Generator().manual_seed(1)
    inputs = (
        torch.randn(5, 4, 3, generator=g),
        torch.tensor([0, 2, -1, 0]),  # a repeated row: accumulate adds both
        torch.tensor([1, 3, 0, 1]),
        torch.randn(4, 3, generator=g),
    )
    _check_torch(from_exported_program(torch.export.export(_IndexPut(), inputs)), _IndexPut(),
                 inputs)  # fmt: skip


def test_torch_index_put_with_a_mask_is_refused_by_name():
    from minitvm.error import OpNotImplemented
    from minitvm.relax.frontend.torch import from_exported_program

    class M(torch.nn.Module):
        def forward(self, x, m):
            return torch.ops.aten.index_put.default(x, [m], torch.tensor(1.0))

    ep = torch.export.export(M(), (torch.randn(4), torch.tensor([True, False, True, True])))
    with pytest.raises(OpNotImplemented, match=r"aten.index_put with a boolean mask"):
        from_exported_program(ep)


def test_torch_one_hot_without_num_classes_is_refused():
    from minitvm.relax.frontend.torch import from_fx

    class M(torch.nn.Module):
        def forward(self, i):
            return torch.nn.functional.one_hot(i)

    # torch.export itself refuses the data-dependent size; fx hands it to the importer
    graph = torch.fx.symbolic_trace(M())
    with pytest.raises(MiniTVMError, match=r"num_classes=-1"):
        from_fx(graph, [((3,), "int64")])
