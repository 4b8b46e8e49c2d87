"""ONNX sequences and optionals through from_onnx: relax Tuples of a length known at import,
compiled and run on the VM against ONNX Runtime (and ONNX's own node cases); the refusals of
what needs a length or position only known at run time."""

import importlib.util
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper

import minitvm as tvm
from minitvm import relax
from minitvm.error import FrontendError, OpAttributeInvalid, OpNotImplemented
from minitvm.relax.frontend.onnx import from_onnx

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
rng = np.random.default_rng(0)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def seq_vi(name, elem=F, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in dict(initializers).items()]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def const(name, value):
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value))
    )


def run(model, feeds: dict, shape_dict=None) -> list:
    """The compiled program's outputs, a sequence output as a list of arrays."""
    mod = from_onnx(model, shape_dict)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())

    def arg(x):
        return [tvm.nd.array(v) for v in x] if isinstance(x, list) else tvm.nd.array(x)

    def value(o):
        return [value(v) for v in o] if isinstance(o, list | tuple) else o.numpy()

    names = [i.name for i in model.graph.input]
    out = vm["main"](*[arg(feeds[n]) for n in names])
    return [value(o) for o in ([out] if len(model.graph.output) == 1 else out)]


def check(model, feeds: dict, shape_dict=None):
    """ONNX Runtime's outputs: values, shapes, dtypes, and sequence lengths."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = run(model, feeds, shape_dict)

    def same(g, w):
        if isinstance(w, list):
            assert isinstance(g, list) and len(g) == len(w), (g, w)
            for a, b in zip(g, w):
                same(a, b)
            return
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)

    assert len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w)


def _three(shape=(2, 3)):
    feeds = {n: rng.standard_normal(shape).astype("float32") for n in ("a", "b", "c")}
    return feeds, [vi(n, F, list(shape)) for n in feeds]


# ----------------------------------------------------------------------------- ops


@pytest.mark.parametrize(
    "nodes, out",
    [
        ([helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"])], seq_vi("s")),
        ([helper.make_node("SequenceEmpty", [], ["s"])], seq_vi("s")),
        (
            [
                helper.make_node("SequenceConstruct", ["a", "b"], ["s0"]),
                const("p", np.int64(-1)),
                helper.make_node("SequenceInsert", ["s0", "c", "p"], ["s"]),
            ],
            seq_vi("s"),
        ),
        (
            [
                helper.make_node("SequenceConstruct", ["a", "b"], ["s0"]),
                helper.make_node("SequenceInsert", ["s0", "c"], ["s"]),  # at the end
            ],
            seq_vi("s"),
        ),
        (
            [
                helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s0"]),
                const("p", np.int64(-3)),
                helper.make_node("SequenceErase", ["s0", "p"], ["s"]),
            ],
            seq_vi("s"),
        ),
        (
            [
                helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s0"]),
                helper.make_node("SequenceErase", ["s0"], ["s"]),  # the last
            ],
            seq_vi("s"),
        ),
        (
            [
                helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s0"]),
                const("p", np.int32(-2)),
                helper.make_node("SequenceAt", ["s0", "p"], ["s"]),
            ],
            vi("s", F, None),
        ),
        (
            [
                helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s0"]),
                helper.make_node("SequenceLength", ["s0"], ["s"]),
            ],
            vi("s", I64, None),
        ),
    ],
    ids=["construct", "empty", "insert_neg", "insert_end", "erase", "erase_last", "at", "len"],
)
def test_sequence_ops_match_onnxruntime(nodes, out):
    feeds, inputs = _three()
    check(make_model(nodes, inputs, [out]), feeds)


@pytest.mark.parametrize("axis, new_axis", [(0, 0), (1, 0), (-1, 0), (0, 1), (2, 1), (-1, 1)])
def test_concat_from_sequence_matches_onnxruntime(axis, new_axis):
    feeds, inputs = _three()
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]),
        helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=axis, new_axis=new_axis),
    ]
    check(make_model(nodes, inputs, [vi("y", F, None)]), feeds)


@pytest.mark.parametrize(
    "split, attrs",
    [
        (None, {"axis": 1}),
        (None, {"axis": 1, "keepdims": 0}),
        (np.int64(2), {"axis": 1}),  # 5 = 2 + 2 + 1: the last part is smaller
        (np.array([1, 4], "int64"), {"axis": -1}),
        (np.array([1, 0, 1], "int64"), {"axis": 0}),
    ],
)
def test_split_to_sequence_matches_onnxruntime(split, attrs):
    x = rng.standard_normal((2, 5)).astype("float32")
    ins = ["x"] if split is None else ["x", "split"]
    nodes = [helper.make_node("SplitToSequence", ins, ["s"], **attrs)]
    inits = {} if split is None else {"split": split}
    check(make_model(nodes, [vi("x", F, [2, 5])], [seq_vi("s")], inits), {"x": x})


def test_split_to_sequence_with_run_time_sizes_of_static_count():
    x = rng.standard_normal((3, 6)).astype("float32")
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["s"], axis=1)]
    model = make_model(nodes, [vi("x", F, [3, 6]), vi("split", I64, [2])], [seq_vi("s")])
    check(model, {"x": x, "split": np.array([4, 2], "int64")})


def test_known_items_fold_to_constants():
    nodes = [
        const("a", np.arange(6, dtype="float32").reshape(2, 3)),
        helper.make_node("SplitToSequence", ["a"], ["s"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1),
        helper.make_node("Add", ["y", "x"], ["z"]),
    ]
    model = make_model(nodes, [vi("x", F, [2, 3])], [vi("z", F, [2, 3])])
    mod = from_onnx(model)
    assert "split" not in mod.script() and "concat" not in mod.script()
    check(model, {"x": np.ones((2, 3), "float32")})


# ----------------------------------------------------------------------------- graph inputs


def test_sequence_input_takes_its_item_shapes_from_shape_dict():
    items = [rng.standard_normal(s).astype("float32") for s in [(2, 3), (4, 3)]]
    nodes = [
        const("p", np.int64(0)),
        helper.make_node("SequenceInsert", ["s", "t", "p"], ["s1"]),
        helper.make_node("ConcatFromSequence", ["s1"], ["y"], axis=0),
    ]
    model = make_model(
        nodes, [seq_vi("s", F, None), vi("t", F, [1, 3])], [seq_vi("s1"), vi("y", F, None)]
    )
    feeds = {"s": items, "t": np.ones((1, 3), "float32")}
    check(model, feeds, {"s": [(2, 3), (4, 3)]})
    mod = from_onnx(model, {"s": [(2, 3), (4, 3)]})
    assert 'R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((4, 3), dtype="float32"))' in (
        mod.script()
    )


def test_sequence_input_items_of_other_shapes_than_declared_are_refused():
    nodes = [
        const("p", np.int64(0)),
        helper.make_node("SequenceAt", ["s", "p"], ["t"]),
        helper.make_node("Shape", ["t"], ["y"]),
    ]
    model = make_model(nodes, [seq_vi("s")], [vi("y", I64, None)])
    with pytest.raises(tvm.error.MiniTVMError, match=r"s\[0\]"):
        run(model, {"s": [np.zeros((4, 5), "float32")]}, {"s": [(2, 3)]})


def test_identity_passes_a_sequence_input_through():
    model = make_model([helper.make_node("Identity", ["s"], ["y"])], [seq_vi("s")], [seq_vi("y")])
    items = [rng.standard_normal((3,)).astype("float32") for _ in range(2)]
    check(model, {"s": items}, {"s": [(3,), (3,)]})


def test_optional_input_is_imported_as_present():
    opt = helper.make_tensor_type_proto(F, [2])
    info = helper.make_value_info("o", helper.make_optional_type_proto(opt))
    nodes = [
        helper.make_node("OptionalHasElement", ["o"], ["h"]),
        helper.make_node("OptionalGetElement", ["o"], ["y"]),
    ]
    model = make_model(nodes, [info], [vi("h", B, []), vi("y", F, [2])], opset=18)
    check(model, {"o": np.array([1.0, 2.0], "float32")})


# ----------------------------------------------------------------------------- subgraphs


def test_sequence_map_over_two_sequences_and_a_tensor():
    body = helper.make_graph(
        [helper.make_node("Add", ["u", "v"], ["w0"]), helper.make_node("Mul", ["w0", "k"], ["w"])],
        "body",
        [vi("u", F, None), vi("v", F, None), vi("k", F, None)],
        [vi("w", F, None)],
    )
    feeds, inputs = _three()
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
        helper.make_node("SequenceConstruct", ["b", "a"], ["t"]),
        helper.make_node("SequenceMap", ["s", "t", "c"], ["y"], body=body),
    ]
    check(make_model(nodes, inputs, [seq_vi("y")]), feeds)


def test_loop_carries_a_sequence_it_grows():
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond"], ["cond_out"]),
            helper.make_node("Cast", ["i"], ["f"], to=F),
            helper.make_node("Add", ["x", "f"], ["item"]),
            helper.make_node("SequenceInsert", ["s_in", "item"], ["s_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("cond", B, []), seq_vi("s_in")],
        [vi("cond_out", B, []), seq_vi("s_out")],
    )
    nodes = [
        helper.make_node("SequenceEmpty", [], ["s0"]),
        helper.make_node("Loop", ["n", "", "s0"], ["s"], body=body),
    ]
    model = make_model(nodes, [vi("x", F, [2])], [seq_vi("s")], {"n": np.int64(3)})
    check(model, {"x": np.array([1.0, 2.0], "float32")})


def test_if_with_a_known_condition_gives_the_picked_sequence():
    def branch(name, inputs):
        return helper.make_graph(
            [helper.make_node("SequenceConstruct", inputs, [f"{name}_s"])],
            name,
            [],
            [seq_vi(f"{name}_s")],
        )

    node = helper.make_node(
        "If", ["k"], ["s"], then_branch=branch("t", ["a"]), else_branch=branch("e", ["b", "c"])
    )
    feeds, inputs = _three()
    check(make_model([node], inputs, [seq_vi("s")], {"k": np.array(False)}), feeds)


# ----------------------------------------------------------------------------- refusals


def _seq_model(nodes, extra_inputs=(), outputs=None):
    _, inputs = _three()
    nodes = [helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]), *nodes]
    return make_model(nodes, [*inputs, *extra_inputs], outputs or [vi("y", F, None)])


@pytest.mark.parametrize(
    "make, error, message",
    [
        (
            lambda: _seq_model(
                [helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at")], [vi("p", I64, [])]
            ),
            OpNotImplemented,
            r"node 'at' \(SequenceAt\): input 'position' is computed at run time",
        ),
        (
            lambda: _seq_model(
                [const("p", np.int64(3)), helper.make_node("SequenceAt", ["s", "p"], ["y"])]
            ),
            OpAttributeInvalid,
            r"position 3 is out of range for a sequence of length 3 \(allowed: -3 to 2\)",
        ),
        (
            lambda: _seq_model(
                [
                    const("p", np.int64(-5)),
                    helper.make_node("SequenceInsert", ["s", "a", "p"], ["y"]),
                ],
                outputs=[seq_vi("y")],
            ),
            OpAttributeInvalid,
            r"position -5 is out of range for a sequence of length 3 \(allowed: -3 to 3\)",
        ),
        (
            lambda: make_model(
                [
                    helper.make_node("SequenceEmpty", [], ["s"]),
                    helper.make_node("SequenceErase", ["s"], ["y"]),
                ],
                [],
                [seq_vi("y")],
            ),
            OpAttributeInvalid,
            r"the sequence is empty; there is nothing to erase",
        ),
        (
            lambda: make_model(
                [
                    helper.make_node("SequenceEmpty", [], ["s"]),
                    helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
                ],
                [],
                [vi("y", F, None)],
            ),
            OpAttributeInvalid,
            r"the sequence is empty; ConcatFromSequence needs one tensor",
        ),
        (
            lambda: make_model(
                [
                    helper.make_node("SequenceEmpty", [], ["s"], dtype=I64),
                    helper.make_node("SequenceInsert", ["s", "x"], ["y"]),
                ],
                [vi("x", F, [2])],
                [seq_vi("y")],
            ),
            OpAttributeInvalid,
            r"SequenceInsert mixes element types \['float32', 'int64'\]",
        ),
        (
            lambda: make_model(
                [helper.make_node("SplitToSequence", ["x", "k"], ["y"], name="sp")],
                [vi("x", F, [4]), vi("k", I64, [])],
                [seq_vi("y")],
            ),
            OpNotImplemented,
            r"node 'sp' \(SplitToSequence\): input 'split' is one size computed at run time",
        ),
        (
            lambda: make_model(
                [helper.make_node("SplitToSequence", ["x"], ["y"])],
                [vi("x", F, ["n"])],
                [seq_vi("y")],
            ),
            OpNotImplemented,
            r"axis 0 has the run-time length n, so the number of parts is only known then",
        ),
        (
            lambda: make_model(
                [
                    helper.make_node(
                        "Optional", [], ["o"], type=helper.make_tensor_type_proto(F, [2])
                    ),
                    helper.make_node("OptionalGetElement", ["o"], ["y"]),
                ],
                [],
                [vi("y", F, [2])],
                opset=18,
            ),
            OpAttributeInvalid,
            r"the optional is empty, and OptionalGetElement of an empty optional is an error",
        ),
        (
            lambda: make_model(
                [
                    helper.make_node(
                        "Optional", [], ["y"], type=helper.make_tensor_type_proto(F, [2])
                    )
                ],
                [],
                [
                    helper.make_value_info(
                        "y", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2]))
                    )
                ],
                opset=18,
            ),
            OpNotImplemented,
            r"an empty optional is used as a value",
        ),
    ],
)
def test_unsupported_or_malformed_sequences_are_refused_with_their_reason(make, error, message):
    with pytest.raises(error, match=message):
        from_onnx(make())


def test_sequence_input_without_its_length_is_refused():
    model = make_model([helper.make_node("Identity", ["s"], ["y"])], [seq_vi("s")], [seq_vi("y")])
    with pytest.raises(FrontendError, match=r"input 's' is a sequence, whose length the model"):
        from_onnx(model)
    with pytest.raises(FrontendError, match=r"must list one shape per item of the sequence"):
        from_onnx(model, {"s": (2, 3)})
    with pytest.raises(FrontendError, match=r"shape_dict\['s'\] has the dim -1"):
        from_onnx(model, {"s": [(2, -1)]})


def _run_time_if(then_items, else_items, declared=None):
    """If(c) whose branches build sequences of the graph inputs a: float[2], b: float[3]."""

    def branch(name, items):
        nodes = [helper.make_node("SequenceConstruct", items, [f"{name}_s"])]
        return helper.make_graph(nodes, name, [], [declared or seq_vi(f"{name}_s")])

    node = helper.make_node(
        "If",
        ["c"],
        ["y"],
        name="pick",
        then_branch=branch("t", then_items),
        else_branch=branch("e", else_items),
    )
    inputs = [vi("c", B, []), vi("a", F, [2]), vi("b", F, [3])]
    return make_model([node], inputs, [seq_vi("y")])


@pytest.mark.parametrize("cond", [True, False])
def test_sequences_leave_a_run_time_if_item_by_item(cond):
    # item 1 is float[3] in one branch and float[2] in the other: a fresh dim after the If
    model = _run_time_if(["a", "b"], ["b", "a"])
    feeds = {
        "c": np.array(cond),
        "a": rng.standard_normal(2).astype("float32"),
        "b": rng.standard_normal(3).astype("float32"),
    }
    check(model, feeds)
    assert "R.If" in from_onnx(model).script() or " if " in from_onnx(model).script()


def test_run_time_if_with_sequences_of_different_lengths_is_refused():
    with pytest.raises(
        OpNotImplemented,
        match=r"node 'pick' \(If\): output 'y' is a sequence of 1 items in then_branch and a "
        r"sequence of 2 items in else_branch",
    ):
        from_onnx(_run_time_if(["a"], ["a", "b"]))


def test_branch_output_of_another_kind_than_declared_is_refused():
    with pytest.raises(
        OpAttributeInvalid,
        match=r"in its then_branch: its output 't_s' is declared a tensor but is a sequence",
    ):
        from_onnx(_run_time_if(["a"], ["a"], declared=vi("t_s", F, None)))


# ----------------------------------------------------------------------------- node cases


def _tool():
    path = os.path.join(ROOT, "tools", "onnx_conformance.py")
    spec = importlib.util.spec_from_file_location("onnx_conformance", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_conformance_harness_feeds_and_compares_sequences(tmp_path):
    tool = _tool()
    a, b = np.ones((2,), "float32"), np.zeros((3,), "float32")
    assert tool._compare([[a, b]], [[a, b]], 1e-5, 1e-5) is None
    assert "expected a sequence of 2 items" in tool._compare([[a]], [[a, b]], 1e-5, 1e-5)
    assert "expected a sequence" in tool._compare([a], [[a]], 1e-5, 1e-5)
    assert "values differ" in tool._compare([[a, b]], [[a, b + 1]], 1e-5, 1e-5)
    path = tmp_path / "data.npz"
    np.savez(path, **tool._entries("in000", [a, b]), **tool._entries("in001", a))
    with np.load(path, allow_pickle=False) as z:
        values = tool._values(z, "in")
    assert len(values) == 2 and len(values[0]) == 2 and values[0][1].shape == (3,)
    with pytest.raises(ValueError, match="empty optional"):
        tool._entries("in000", None)


def test_onnx_node_cases_with_sequences_match_their_expected_outputs():
    tool = _tool()
    names = [
        "test_sequence_insert_at_back",
        "test_sequence_map_identity_2_sequences_expanded",
        "test_sequence_map_extract_shapes",
        "test_split_to_sequence_2",
        "test_optional_get_element_optional_sequence",
    ]
    cases = tool.collect(names=names)
    rows = tool.run(cases, batch=10, timeout=120)
    assert [(r["case"], r["kind"]) for r in rows] == [(n, "ok") for n in sorted(names)], rows
