"""ONNX If, Loop and Scan through from_onnx, compiled and run on the VM, against ONNX Runtime
and ONNX's own node cases; and the refusals of what cannot be unrolled at import."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper

import minitvm as tvm
from minitvm import relax
from minitvm.error import FrontendError, OpAttributeInvalid, OpNotImplemented
from minitvm.relax.analysis import well_formed
from minitvm.relax.expr import DataflowBlock, If
from minitvm.relax.frontend.onnx import _control, from_onnx

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(
        nodes,
        "g",
        inputs,
        outputs,
        [numpy_helper.from_array(np.asarray(v), n) for n, v in dict(initializers).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def graph(name, nodes, inputs, outputs, initializers=()):
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in dict(initializers).items()]
    return helper.make_graph(nodes, name, inputs, outputs, inits)


def run(mod, feeds: list) -> list:
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(np.asarray(x)) for x in feeds])
    return [o.numpy() for o in (out if isinstance(out, list | tuple) else [out])]


def check(model, feeds: dict, mod=None):
    """The compiled program gives ONNX Runtime's outputs (values, shapes, dtypes)."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    mod = mod if mod is not None else from_onnx(model)
    got = run(mod, [feeds[i.name] for i in model.graph.input if i.name in feeds])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return mod


def has_if(mod) -> bool:
    return "R.If" in mod.script() or " if " in mod.script()


# ----------------------------------------------------------------------------- If


def _if_model(then_nodes, then_out, else_nodes, else_out, extra=(), outs=None, opset=17):
    """If(c) over x: float[3, 4]; branches read x from the outer graph."""
    then = graph("then", then_nodes, [], then_out)
    other = graph("else", else_nodes, [], else_out)
    names = [o.name for o in then_out]
    node = helper.make_node(
        "If", ["c"], [f"r{i}" for i in range(len(names))], then_branch=then, else_branch=other
    )
    return make_model(
        [node, *extra],
        [vi("c", B, []), vi("x", F, [3, 4])],
        outs or [vi(f"r{i}", F, None) for i in range(len(names))],
        opset=opset,
    )


def test_if_runs_the_branch_the_runtime_condition_picks():
    model = _if_model(
        [helper.make_node("Add", ["x", "x"], ["t"])],
        [vi("t", F, [3, 4])],
        [helper.make_node("Mul", ["x", "x"], ["e"]), helper.make_node("Relu", ["e"], ["e2"])],
        [vi("e2", F, [3, 4])],
    )
    mod = from_onnx(model)
    assert well_formed(mod)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    for c in (True, False):
        check(model, {"c": np.array(c), "x": x}, mod)


def test_if_with_known_condition_converts_one_branch_at_import():
    then = graph("then", [helper.make_node("Neg", ["x"], ["t"])], [], [vi("t", F, [3, 4])])
    other = graph("else", [helper.make_node("Sqrt", ["x"], ["e"])], [], [vi("e", F, [3, 4])])
    for c in (True, False):
        model = make_model(
            [helper.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other)],
            [vi("x", F, [3, 4])],
            [vi("r", F, None)],
            initializers={"c": np.array(c)},
        )
        mod = from_onnx(model)
        assert not any(isinstance(b.value, If) for b in _bindings(mod))
        x = np.abs(np.random.default_rng(1).standard_normal((3, 4))).astype("float32")
        check(model, {"x": x}, mod)


def _bindings(mod):
    return [b for block in mod["main"].body.blocks for b in block.bindings]


def test_if_branches_of_different_shapes_give_a_symbolic_dim():
    model = _if_model(
        [helper.make_node("Identity", ["x"], ["t"])],
        [vi("t", F, [3, 4])],
        [helper.make_node("Concat", ["x", "x"], ["e"], axis=0)],
        [vi("e", F, [6, 4])],
        extra=[helper.make_node("ReduceSum", ["r0"], ["s"], keepdims=0, axes=[0])],
        outs=[vi("r0", F, None), vi("s", F, None)],
        opset=12,
    )
    mod = from_onnx(model)
    assert well_formed(mod)
    assert "r0_1_dim0" in mod.script()  # the differing dim is a fresh symbolic dim
    x = np.random.default_rng(2).standard_normal((3, 4)).astype("float32")
    for c in (True, False):
        check(model, {"c": np.array(c), "x": x}, mod)


def test_if_with_several_outputs_keeps_dataflow_blocks_around_it():
    model = _if_model(
        [helper.make_node("Add", ["x", "x"], ["t0"]), helper.make_node("Exp", ["x"], ["t1"])],
        [vi("t0", F, [3, 4]), vi("t1", F, [3, 4])],
        [
            helper.make_node("Sub", ["x", "x"], ["e0"]),
            helper.make_node("Split", ["x"], ["e1", "e2"], axis=1),
        ],
        [vi("e0", F, [3, 4]), vi("e1", F, [3, 2])],
        extra=[
            helper.make_node("Tanh", ["x"], ["pre"]),
            helper.make_node("Mul", ["r0", "pre"], ["y"]),
        ],
        outs=[vi("y", F, None), vi("r1", F, None)],
    )
    mod = from_onnx(model)
    assert well_formed(mod)
    blocks = mod["main"].body.blocks
    assert any(isinstance(b, DataflowBlock) for b in blocks)  # FuseOps still sees the ops
    x = np.random.default_rng(3).standard_normal((3, 4)).astype("float32")
    for c in (True, False):
        check(model, {"c": np.array(c), "x": x}, mod)


def test_nested_if_reads_values_of_every_enclosing_graph():
    inner_then = graph("it", [helper.make_node("Add", ["x", "t"], ["u"])], [], [vi("u", F, [3, 4])])
    inner_else = graph("ie", [helper.make_node("Sub", ["t", "x"], ["v"])], [], [vi("v", F, [3, 4])])
    then = graph(
        "then",
        [
            helper.make_node("Exp", ["x"], ["t"]),
            helper.make_node("If", ["d"], ["w"], then_branch=inner_then, else_branch=inner_else),
        ],
        [],
        [vi("w", F, [3, 4])],
    )
    other = graph("else", [helper.make_node("Abs", ["x"], ["e"])], [], [vi("e", F, [3, 4])])
    model = make_model(
        [helper.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other)],
        [vi("c", B, []), vi("d", B, [1]), vi("x", F, [3, 4])],
        [vi("r", F, None)],
    )
    mod = from_onnx(model)
    assert well_formed(mod)
    x = np.random.default_rng(4).standard_normal((3, 4)).astype("float32")
    for c in (True, False):
        for d in (True, False):
            check(model, {"c": np.array(c), "d": np.array([d]), "x": x}, mod)


def test_if_branches_of_different_ranks_are_refused():
    model = _if_model(
        [helper.make_node("Identity", ["x"], ["t"])],
        [vi("t", F, [3, 4])],
        [helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)],
        [vi("e", F, [])],
    )
    with pytest.raises(
        OpNotImplemented, match=r"node \(If\).*'r0' has rank 2 in then_branch and 0"
    ):
        from_onnx(model)


def test_unknown_ops_in_branches_are_refused_up_front():
    then = graph(
        "then", [helper.make_node("MaxRoiPool", ["x", "x"], ["s"])], [], [vi("s", F, None)]
    )
    other = graph("else", [helper.make_node("Identity", ["x"], ["e"])], [], [vi("e", F, [3, 4])])
    model = make_model(
        [helper.make_node("If", ["c"], ["r"], name="pick", then_branch=then, else_branch=other)],
        [vi("c", B, []), vi("x", F, [3, 4])],
        [vi("r", F, None)],
    )
    with pytest.raises(OpNotImplemented, match=r"MaxRoiPool.*in then_branch of node 'pick'"):
        from_onnx(model)


def test_a_branch_whose_sequence_output_is_declared_a_tensor_is_refused():
    then = graph(
        "then", [helper.make_node("SequenceConstruct", ["x"], ["s"])], [], [vi("s", F, None)]
    )
    other = graph("else", [helper.make_node("Identity", ["x"], ["e"])], [], [vi("e", F, [3, 4])])
    model = make_model(
        [helper.make_node("If", ["c"], ["r"], name="pick", then_branch=then, else_branch=other)],
        [vi("c", B, []), vi("x", F, [3, 4])],
        [vi("r", F, None)],
    )
    with pytest.raises(
        OpAttributeInvalid,
        match=r"node 'pick' \(If\): in its then_branch: its output 's' is declared a tensor but "
        "is a sequence",
    ):
        from_onnx(model)


def test_subgraph_nodes_get_the_attribute_checks():
    bad = helper.make_node("Relu", ["x"], ["t"], alpha=2.0)  # Relu has no attributes
    then = graph("then", [bad], [], [vi("t", F, [3, 4])])
    other = graph("else", [helper.make_node("Identity", ["x"], ["e"])], [], [vi("e", F, [3, 4])])
    model = make_model(
        [helper.make_node("If", ["c"], ["r"], name="pick", then_branch=then, else_branch=other)],
        [vi("c", B, []), vi("x", F, [3, 4])],
        [vi("r", F, None)],
    )
    with pytest.raises(
        OpAttributeInvalid, match=r"node 'pick' \(If\): in its then_branch: .*'alpha'"
    ):
        from_onnx(model)


def test_subgraphs_nested_too_deep_are_refused():
    leaf = graph("leaf", [helper.make_node("Identity", ["x"], ["y0"])], [], [vi("y0", F, [3, 4])])
    body = leaf
    for depth in range(1, 30):  # each level one If whose then_branch holds the level below
        node = helper.make_node("If", ["c"], [f"y{depth}"], then_branch=body, else_branch=leaf)
        body = graph(f"g{depth}", [node], [], [vi(f"y{depth}", F, [3, 4])])
    model = make_model(list(body.node), [vi("c", B, []), vi("x", F, [3, 4])], [vi("y29", F, None)])
    with pytest.raises(FrontendError, match=r"nested more than 16 deep"):
        from_onnx(model)


# ----------------------------------------------------------------------------- Scan


def _scan_body():
    """state s: float[2]; scan inputs a: float[2], b: float[2] -> s + a * b, and (s, a - b)."""
    return graph(
        "body",
        [
            helper.make_node("Mul", ["a", "b"], ["ab"]),
            helper.make_node("Add", ["s", "ab"], ["s2"]),
            helper.make_node("Sub", ["a", "b"], ["d"]),
            helper.make_node("Identity", ["s2"], ["o1"]),
        ],
        [vi("s", F, [2]), vi("a", F, [2]), vi("b", F, [2])],
        [vi("s2", F, [2]), vi("o1", F, [2]), vi("d", F, [2])],
    )


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"scan_input_directions": [1, 0], "scan_output_directions": [0, 1]},
        {"scan_input_axes": [1, 0], "scan_output_axes": [1, -1]},
        {"scan_input_axes": [-1, 0], "scan_input_directions": [0, 1], "scan_output_axes": [0, 1]},
    ],
)
def test_scan_follows_onnx_runtime_for_directions_and_axes(attrs):
    axes = attrs.get("scan_input_axes", [0, 0])
    a_shape = [5, 2] if axes[0] == 0 else [2, 5]
    node = helper.make_node(
        "Scan", ["s0", "a", "b"], ["s", "o1", "o2"], body=_scan_body(), num_scan_inputs=2, **attrs
    )
    model = make_model(
        [node],
        [vi("s0", F, [2]), vi("a", F, a_shape), vi("b", F, [5, 2])],
        [vi("s", F, None), vi("o1", F, None), vi("o2", F, None)],
    )
    rng = np.random.default_rng(5)
    feeds = {
        "s0": rng.standard_normal(2).astype("float32"),
        "a": rng.standard_normal(a_shape).astype("float32"),
        "b": rng.standard_normal((5, 2)).astype("float32"),
    }
    check(model, feeds)


def test_scan8_scans_each_batch_row():
    body = graph(
        "body",
        [helper.make_node("Add", ["s", "a"], ["s2"]), helper.make_node("Neg", ["s2"], ["o"])],
        [vi("s", F, [2]), vi("a", F, [2])],
        [vi("s2", F, [2]), vi("o", F, [2])],
    )
    node = helper.make_node(
        "Scan", ["", "s0", "a"], ["s", "o"], body=body, num_scan_inputs=1, directions=[1]
    )
    model = make_model(
        [node],
        [vi("s0", F, [3, 2]), vi("a", F, [3, 4, 2])],
        [vi("s", F, None), vi("o", F, None)],
        opset=8,
    )
    rng = np.random.default_rng(6)
    feeds = {
        "s0": rng.standard_normal((3, 2)).astype("float32"),
        "a": rng.standard_normal((3, 4, 2)).astype("float32"),
    }
    check(model, feeds)


def test_scan_with_a_symbolic_scan_length_is_refused():
    node = helper.make_node(
        "Scan", ["s0", "a", "b"], ["s", "o1", "o2"], name="sc", body=_scan_body(), num_scan_inputs=2
    )
    model = make_model(
        [node],
        [vi("s0", F, [2]), vi("a", F, ["T", 2]), vi("b", F, ["T", 2])],
        [vi("s", F, None), vi("o1", F, None), vi("o2", F, None)],
    )
    with pytest.raises(
        OpNotImplemented, match=r"node 'sc' \(Scan\): .*the scan length must be static"
    ):
        from_onnx(model)


def test_onnx_node_cases_of_if_and_scan_match_their_expected_outputs():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node

        cases = {c.name: c for c in node.collect_testcases(None)}
    names = ["test_if", "test_scan_sum", "test_scan9_sum", "test_linear_attention_linear"]
    for name in names:
        case = cases[name]
        ins, outs = case.data_sets[0]
        for got, want in zip(run(from_onnx(case.model), ins), outs):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)


# ----------------------------------------------------------------------------- Loop


def _loop_model(cond_out_nodes, m=4, cond="c0", carried_in=("y",), opset=17, scan=True):
    """Loop(M, cond, y) whose body adds x[i] to y and emits y per iteration."""
    body = graph(
        "body",
        [
            *cond_out_nodes,
            helper.make_node("Gather", ["x", "i"], ["xi"], axis=0),
            helper.make_node("Add", ["y_in", "xi"], ["y_out"]),
            helper.make_node("Mul", ["y_out", "y_out"], ["sq"]),
        ],
        [vi("i", I64, []), vi("cin", B, []), vi("y_in", F, [3])],
        [vi("cout", B, []), vi("y_out", F, [3])] + ([vi("sq", F, [3])] if scan else []),
    )
    inits = {"c0": np.array(True)}
    if isinstance(m, int):
        inits["M"] = np.array(m, "int64")
    node = helper.make_node(
        "Loop", ["M", cond, *carried_in], ["yf", "ys"] if scan else ["yf"], name="lp", body=body
    )
    inputs = [vi("y", F, [3]), vi("x", F, [8, 3])] + ([vi("M", I64, [])] if m == "input" else [])
    return make_model(
        [node], inputs, [vi("yf", F, None)] + ([vi("ys", F, None)] if scan else []), inits, opset
    )


def _loop_feeds():
    rng = np.random.default_rng(7)
    return {
        "y": rng.standard_normal(3).astype("float32"),
        "x": rng.standard_normal((8, 3)).astype("float32"),
    }


def test_loop_with_a_constant_trip_count_is_unrolled():
    model = _loop_model([helper.make_node("Identity", ["cin"], ["cout"])], m=5)
    mod = check(model, _loop_feeds())
    assert not has_if(mod)


def test_loop_stops_where_its_condition_folds_to_false():
    # cout = i < 2: the condition is a constant of each unrolled iteration
    nodes = [
        helper.make_node(
            "Constant", [], ["two"], value=numpy_helper.from_array(np.array(2, "int64"))
        ),
        helper.make_node("Less", ["i", "two"], ["cout"]),
    ]
    check(_loop_model(nodes, m=6), _loop_feeds())


def test_loop_with_a_run_time_trip_count_is_refused():
    model = _loop_model([helper.make_node("Identity", ["cin"], ["cout"])], m="input")
    with pytest.raises(
        OpNotImplemented,
        match=r"node 'lp' \(Loop\): Loop with a run-time trip count/condition is not supported: the VM runs no backward jumps; fold it or export with a fixed count \(its trip count M",
    ):
        from_onnx(model)


def test_loop_with_a_data_dependent_condition_is_refused():
    nodes = [
        helper.make_node("ReduceSum", ["y_in"], ["tot"], keepdims=0),
        helper.make_node(
            "Constant", [], ["lim"], value=numpy_helper.from_array(np.array(5.0, "float32"))
        ),
        helper.make_node("Less", ["tot", "lim"], ["cout"]),
    ]
    with pytest.raises(
        OpNotImplemented, match=r"condition output at iteration 0 is computed at run time"
    ):
        from_onnx(_loop_model(nodes, m=4))


def test_loop_without_condition_input_refuses_a_false_body_condition():
    # the ONNX spec ignores the body's condition there and ONNX Runtime stops on it
    nodes = [
        helper.make_node("Constant", [], ["cout"], value=numpy_helper.from_array(np.array(False)))
    ]
    with pytest.raises(
        OpNotImplemented, match=r"turns false at iteration 0 of a Loop without a condition input"
    ):
        from_onnx(_loop_model(nodes, m=4, cond=""))
    check(
        _loop_model([helper.make_node("Identity", ["cin"], ["cout"])], m=3, cond=""), _loop_feeds()
    )


def test_loop_unrolling_is_capped():
    body = graph(
        "body",
        [
            helper.make_node("Identity", ["cin"], ["cout"]),
            helper.make_node("Neg", ["y_in"], ["y_out"]),
        ],
        [vi("i", I64, []), vi("cin", B, []), vi("y_in", F, [3])],
        [vi("cout", B, []), vi("y_out", F, [3])],
    )
    model = make_model(
        [helper.make_node("Loop", ["M", "", "y"], ["yf"], name="lp", body=body)],
        [vi("y", F, [3])],
        [vi("yf", F, None)],
        {"M": np.array(5000, "int64")},
    )
    with pytest.raises(
        FrontendError, match=r"node 'lp' \(Loop\): the Loop runs 4097 iterations; .*stops at 4096"
    ):
        from_onnx(model)


def test_unrolled_subgraph_nodes_are_budgeted(monkeypatch):
    monkeypatch.setattr(_control, "MAX_UNROLLED_NODES", 20)
    model = _loop_model([helper.make_node("Identity", ["cin"], ["cout"])], m=8)
    with pytest.raises(FrontendError, match=r"past 20; export the model with fewer iterations"):
        from_onnx(model)


def test_if_inside_a_loop_body_runs_at_every_iteration():
    then = graph("then", [helper.make_node("Add", ["y_in", "xi"], ["t"])], [], [vi("t", F, [3])])
    other = graph("else", [helper.make_node("Sub", ["y_in", "xi"], ["e"])], [], [vi("e", F, [3])])
    body = graph(
        "body",
        [
            helper.make_node("Identity", ["cin"], ["cout"]),
            helper.make_node("Gather", ["x", "i"], ["xi"], axis=0),
            helper.make_node("If", ["flag"], ["y_out"], then_branch=then, else_branch=other),
        ],
        [vi("i", I64, []), vi("cin", B, []), vi("y_in", F, [3])],
        [vi("cout", B, []), vi("y_out", F, [3])],
    )
    model = make_model(
        [helper.make_node("Loop", ["M", "c0", "y"], ["yf"], body=body)],
        [vi("flag", B, []), vi("y", F, [3]), vi("x", F, [8, 3])],
        [vi("yf", F, None)],
        {"M": np.array(3, "int64"), "c0": np.array(True)},
    )
    mod = from_onnx(model)
    assert well_formed(mod)
    for flag in (True, False):
        check(model, {"flag": np.array(flag), **_loop_feeds()}, mod)


def test_subgraph_initializers_get_the_external_data_check():
    weight = numpy_helper.from_array(np.ones(3, "float32"), "w")
    weight.data_location = TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "/etc/passwd"
    then = graph("then", [helper.make_node("Mul", ["x", "w"], ["t"])], [], [vi("t", F, [3])])
    then.initializer.append(weight)
    other = graph("else", [helper.make_node("Neg", ["x"], ["e"])], [], [vi("e", F, [3])])
    model = make_model(
        [helper.make_node("If", ["c"], ["r"], name="pick", then_branch=then, else_branch=other)],
        [vi("c", B, []), vi("x", F, [3])],
        [vi("r", F, None)],
    )
    with pytest.raises(FrontendError, match=r"initializer 'w' of its then_branch keeps its data"):
        from_onnx(model)


def _identity_if(then_out_type=None, cond=None, else_node=None):
    then = graph(
        "then", [helper.make_node("Identity", ["x"], ["t"])], [], [then_out_type or vi("t", F, [3])]
    )
    other = graph(
        "else", [else_node or helper.make_node("Neg", ["x"], ["e"])], [], [vi("e", F, [3])]
    )
    inputs = [vi("x", F, [3])] + ([] if cond is not None else [vi("c", B, [])])
    return make_model(
        [helper.make_node("If", ["c"], ["r"], name="pick", then_branch=then, else_branch=other)],
        inputs,
        [vi("r", F, None)],
        {} if cond is None else {"c": cond},
    )


def _scan_model(
    attrs, s_shape=(2,), a_shape=(5, 2), b_shape=(5, 2), opset=17, inputs=("s0", "a", "b")
):
    node = helper.make_node(
        "Scan", list(inputs), ["s", "o1", "o2"], name="sc", body=_scan_body(), **attrs
    )
    return make_model(
        [node],
        [vi("s0", F, list(s_shape)), vi("a", F, list(a_shape)), vi("b", F, list(b_shape))],
        [vi("s", F, None), vi("o1", F, None), vi("o2", F, None)],
        opset=opset,
    )


@pytest.mark.parametrize(
    "make, error, message",
    [
        (
            lambda: _identity_if(helper.make_tensor_sequence_value_info("t", F, [3])),
            OpAttributeInvalid,
            r"in its then_branch: its output 't' is declared a sequence but is a tensor",
        ),
        (
            lambda: _identity_if(cond=np.array([True, False])),
            OpAttributeInvalid,
            r"node 'pick' \(If\): the condition has shape \(2,\); If takes one value",
        ),
        (
            lambda: _identity_if(
                else_node=helper.make_node("Cast", ["x"], ["e"], to=TensorProto.INT64)
            ),
            OpAttributeInvalid,
            r"output 'r' is float32 in then_branch and int64 in else_branch",
        ),
        (
            lambda: _identity_if(else_node=helper.make_node("Neg", ["x"], ["other"])),
            FrontendError,
            r"in its else_branch: its outputs \['e'\] are produced by no node",
        ),
        (
            lambda: _identity_if(else_node=helper.make_node("Split", ["x"], ["e", "e"])),
            FrontendError,
            r"node 'pick' \(If\): in its else_branch: node #0 \(Split\) writes 'e', which is already",
        ),
        (
            lambda: _scan_model({"num_scan_inputs": 2}, inputs=("s0", "s0", "a", "b")),
            OpAttributeInvalid,
            r"node 'sc' \(Scan\): its body declares 3 inputs, the node gives it 4",
        ),
        (
            lambda: _scan_model({"num_scan_inputs": 2}, b_shape=(4, 2)),
            OpAttributeInvalid,
            r"the scan inputs have scan lengths \[5, 4\]; they must agree",
        ),
        (
            lambda: _scan_model({"num_scan_inputs": 2, "scan_input_directions": [0, 2]}),
            OpAttributeInvalid,
            r"scan_input_directions=\[0, 2\]: each must be 0 \(forward\) or 1",
        ),
        (
            lambda: _scan_model({"num_scan_inputs": 2}, a_shape=(0, 2), b_shape=(0, 2)),
            OpNotImplemented,
            r"the scan length is 0, so the shapes of its scan outputs are unknown",
        ),
    ],
)
def test_malformed_or_unsupported_control_flow_is_refused_with_its_reason(make, error, message):
    with pytest.raises(error, match=message):
        from_onnx(make())


def test_loop_without_trip_count_or_condition_and_with_no_iteration_are_refused():
    body = (
        _loop_model([helper.make_node("Identity", ["cin"], ["cout"])]).graph.node[0].attribute[0].g
    )
    for inputs, message in [
        (["", "", "y"], r"it has neither a trip count nor a condition"),
        (
            ["zero", "", "y"],
            r"the Loop runs no iteration, so the shapes of its scan outputs are unknown",
        ),
    ]:
        model = make_model(
            [helper.make_node("Loop", inputs, ["yf", "ys"], name="lp", body=body)],
            [vi("y", F, [3]), vi("x", F, [8, 3])],
            [vi("yf", F, None), vi("ys", F, None)],
            {"zero": np.array(0, "int64")},
        )
        with pytest.raises(OpNotImplemented, match=r"node 'lp' \(Loop\): .*" + message):
            from_onnx(model)
