"""from_onnx on hostile constant subgraphs: a node whose inputs are all constants is folded at
import only when its result is small and cheap; a bigger one runs at run time (right numbers,
checked against onnxruntime), and a value that must be known at import is refused by name.

The models that would have built a gigabyte at import run in a subprocess with a time limit
and report their peak memory, so a regression fails the test instead of the machine.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

import minitvm as tvm
from minitvm import relax
from minitvm.error import FrontendError
from minitvm.relax.expr import Call, Constant, Tuple
from minitvm.relax.frontend.onnx import _fold, from_onnx

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, inits=(), out_type=F32, opset=18):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(v, n) for n, v in dict(inits).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ort(model, feeds):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _run(mod, feeds):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(v) for v in feeds.values()]).numpy()


def _constant_sizes(mod) -> list[int]:
    """Elements of each constant the imported program embeds."""
    found, todo = [0], [b.value for block in mod["main"].body.blocks for b in block.bindings]
    while todo:
        e = todo.pop()
        if isinstance(e, Constant):
            found.append(int(np.prod(e.data.shape)))
        todo.extend(getattr(e, "args", ()) if isinstance(e, Call) else ())
        todo.extend(e.fields if isinstance(e, Tuple) else ())
    return found


def _constant_of_shape(dims, name="c"):
    return [
        helper.make_node(
            "ConstantOfShape",
            ["dims"],
            [name],
            name="big",
            value=numpy_helper.from_array(np.array([2.0], np.float32)),
        ),
        helper.make_node("Add", ["x", name], ["y"]),
    ], {"dims": np.array(dims, np.int64)}


# ------------------------------------------------------------------ left to run time, same numbers


def test_small_constant_of_shape_is_folded():
    nodes, inits = _constant_of_shape([4, 8])
    mod = from_onnx(_model(nodes, {"x": (F32, [4, 8])}, inits))
    assert 32 in _constant_sizes(mod)  # folded: the result is embedded


def test_constant_over_the_node_limit_runs_at_run_time(monkeypatch):
    monkeypatch.setattr(_fold, "FOLD_LIMIT", 16)
    nodes, inits = _constant_of_shape([4, 8])
    model = _model(nodes, {"x": (F32, [4, 8])}, inits)
    mod = from_onnx(model)
    assert max(_constant_sizes(mod)) < 32  # not embedded
    feeds = {"x": np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)}
    np.testing.assert_allclose(_run(mod, feeds), _ort(model, feeds), rtol=1e-6)


def test_budget_over_all_folds_leaves_later_nodes_to_run_time(monkeypatch):
    monkeypatch.setattr(_fold, "SMALL", 4)
    monkeypatch.setattr(_fold, "FOLD_BUDGET", 40)
    nodes = [
        helper.make_node("Tile", ["t", "reps"], ["a"], name="tile_a"),  # 32 elements: folded
        helper.make_node("Tile", ["t", "reps"], ["b"], name="tile_b"),  # 64 in all: not
        helper.make_node("Add", ["a", "b"], ["ab"]),
        helper.make_node("Add", ["x", "ab"], ["y"]),
    ]
    inits = {"t": np.arange(8, dtype=np.float32).reshape(2, 4), "reps": np.array([2, 2], np.int64)}
    model = _model(nodes, {"x": (F32, [4, 8])}, inits)
    mod = from_onnx(model)
    assert _constant_sizes(mod).count(32) == 1  # the first Tile's result only
    feeds = {"x": np.ones((4, 8), np.float32)}
    np.testing.assert_allclose(_run(mod, feeds), _ort(model, feeds))


def test_slow_evaluator_op_runs_at_run_time():
    """GridSample costs the evaluator milliseconds an element: 32 x 32 outputs run at run time."""
    rng = np.random.default_rng(1)
    inits = {
        "img": rng.standard_normal((1, 1, 16, 16)).astype(np.float32),
        "grid": rng.uniform(-1, 1, (1, 32, 32, 2)).astype(np.float32),
    }
    nodes = [
        helper.make_node("GridSample", ["img", "grid"], ["g"], name="gs", align_corners=0),
        helper.make_node("Add", ["x", "g"], ["y"]),
    ]
    model = _model(nodes, {"x": (F32, [1, 1, 32, 32])}, inits, opset=16)
    mod = from_onnx(model)
    assert 32 * 32 not in _constant_sizes(mod)  # the (1, 1, 32, 32) result
    feeds = {"x": rng.standard_normal((1, 1, 32, 32)).astype(np.float32)}
    np.testing.assert_allclose(_run(mod, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-5)


def test_einsum_work_is_bounded():
    assert _fold._einsum_work({"equation": "ij,jk->ik"}, [np.ones((4, 5)), np.ones((5, 6))]) == 120
    vectors = [np.ones(64)] * 6
    assert _fold._einsum_work({"equation": "a,b,c,d,e,f->"}, vectors) == 64**6


# ------------------------------------------------------------------ refused where it must be known


def test_value_needed_at_import_names_the_unfolded_node():
    """DFT's dft_length must be known at import; here it is computed from a constant of 2^25
    elements that was left to run time, and the message says which node and why."""
    nodes = [
        helper.make_node(
            "ConstantOfShape",
            ["dims"],
            ["ones"],
            name="hostile",
            value=numpy_helper.from_array(np.array([1], np.int64)),
        ),
        helper.make_node("ReduceSum", ["ones"], ["length"], keepdims=0),
        helper.make_node("DFT", ["x", "length"], ["y"]),
    ]
    model = _model(nodes, {"x": (F32, [1, 8, 1])}, {"dims": np.array([1 << 25], np.int64)})
    with pytest.raises(FrontendError, match=r"'hostile' \(ConstantOfShape\).*33554432 elements"):
        from_onnx(model)


def test_runtime_shape_of_too_many_dims_is_refused():
    nodes = [
        helper.make_node(
            "ConstantOfShape",
            ["dims"],
            ["ones"],
            name="many",
            value=numpy_helper.from_array(np.array([1], np.int64)),
        ),
        helper.make_node("Reshape", ["x", "ones"], ["y"]),
    ]
    inits = {"dims": np.array([1 << 25], np.int64)}
    with pytest.raises(FrontendError, match="33554432 dims computed at run time"):
        from_onnx(_model(nodes, {"x": (F32, [4])}, inits))


# ------------------------------------------------------------------ hostile models, in a subprocess

_HOSTILE = {
    # 2^28 float32 = 1 GiB if folded
    "constant_of_shape": """
        nodes = [helper.make_node("ConstantOfShape", ["dims"], ["c"], name="big",
                     value=numpy_helper.from_array(np.array([2.0], np.float32))),
                 helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        inits = {"dims": np.array([1 << 14, 1 << 14], np.int64)}
    """,
    "expand": """
        nodes = [helper.make_node("Expand", ["one", "dims"], ["c"], name="big"),
                 helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        inits = {"one": np.ones((1, 1), np.float32),
                 "dims": np.array([1 << 14, 1 << 14], np.int64)}
    """,
    "tile": """
        nodes = [helper.make_node("Tile", ["one", "reps"], ["c"], name="big"),
                 helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        inits = {"one": np.ones((2, 2), np.float32),
                 "reps": np.array([1 << 13, 1 << 13], np.int64)}
    """,
    "range": """
        nodes = [helper.make_node("Range", ["a", "b", "d"], ["c"], name="big"),
                 helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        inits = {"a": np.array(0, np.float32), "b": np.array(2.0**28, np.float32),
                 "d": np.array(1, np.float32)}
    """,
    "broadcast_add": """
        nodes = [helper.make_node("Add", ["col", "row"], ["c"], name="big"),
                 helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        inits = {"col": np.ones((1 << 14, 1), np.float32), "row": np.ones((1, 1 << 14), np.float32)}
    """,
    "einsum": """
        nodes = [helper.make_node("Einsum", ["v"] * 6, ["s"], name="big",
                     equation="a,b,c,d,e,f->"),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        inits = {"v": np.ones(64, np.float32)}
    """,
    "max_pool": """
        nodes = [helper.make_node("MaxPool", ["img"], ["p"], name="big", kernel_shape=[3, 3]),
                 helper.make_node("ReduceSum", ["p"], ["s"], keepdims=0),
                 helper.make_node("Add", ["x", "s"], ["y"])]
        inits = {"img": np.ones((1, 8, 256, 256), np.float32)}
    """,
}

_SCRIPT = """
import json, resource, time
import numpy as np
from onnx import TensorProto, helper, numpy_helper
from minitvm.relax.frontend.onnx import from_onnx
{body}
graph = helper.make_graph(
    nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [numpy_helper.from_array(v, n) for n, v in inits.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
mod = from_onnx(model)
seconds = time.perf_counter() - start
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({{"seconds": seconds, "grown_kib": grown}}))
"""


@pytest.mark.parametrize("case", sorted(_HOSTILE))
def test_hostile_constant_subgraph_imports_quickly_in_little_memory(case):
    code = _SCRIPT.format(body=textwrap.dedent(_HOSTILE[case]))
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["grown_kib"] < 256 * 1024, report  # folding would grow by a gigabyte
    assert report["seconds"] < 30, report
