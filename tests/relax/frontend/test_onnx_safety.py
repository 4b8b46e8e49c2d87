"""from_onnx on models that are wrong or unusual: right numbers, or a FrontendError naming the part.

Silent wrong results first (ConvTranspose output_shape, out-of-range gathers, Mod edge cases,
NaN attributes), then attributes ONNX Runtime refuses, graphs that are not SSA, and inputs
that used to raise foreign exceptions; last, import time that grows linearly with the graph.
"""

import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper

import minitvm as tvm
from minitvm import relax
from minitvm.error import FrontendError, MiniTVMError, OpAttributeInvalid, RuntimeError_
from minitvm.relax import eval_ref
from minitvm.relax.frontend.onnx import from_onnx

F32 = TensorProto.FLOAT


def _model(nodes, inputs, outputs=("y",), inits=(), opset=17):
    """inputs: {name: (onnx type, shape)}, outputs of the first input's type; inits: {name: array}."""
    out_type = next(iter(inputs.values()))[0]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, out_type, None) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in dict(inits).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _compiled(model, feeds):
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(v) for v in feeds.values()]).numpy()


def _reference(model, feeds):
    return np.asarray(eval_ref.evaluate(from_onnx(model), *feeds.values()))


# ----------------------------------------------------------------------------- wrong results


def _conv_transpose(strides, output_shape=None, auto_pad=None, kernel=(3, 3)):
    attrs = {"strides": list(strides)}
    if output_shape is not None:
        attrs["output_shape"] = list(output_shape)
    if auto_pad is not None:
        attrs["auto_pad"] = auto_pad
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)
    return _model([node], {"x": (F32, [1, 1, 3, 3]), "w": (F32, [1, 2, *kernel])})


@pytest.mark.parametrize("auto_pad", [None, "SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize(
    "strides, output_shape, kernel",
    [
        ((3, 2), (10, 8), (3, 3)),  # onnx's test_convtranspose_output_shape: one extra row
        ((3, 3), (11, 11), (3, 3)),  # two extra rows and columns
        ((1, 1), (4, 4), (3, 3)),  # one row cropped: the odd one by auto_pad's rule
        ((2, 2), None, (3, 3)),  # SAME without output_shape: in * stride
        ((1, 1), None, (2, 2)),
    ],
)
def test_conv_transpose_output_shape_places_rows_as_onnxruntime(
    strides, output_shape, kernel, auto_pad
):
    if output_shape is None and auto_pad is None:
        pytest.skip("no output_shape and no auto_pad: the natural size, covered elsewhere")
    model = _conv_transpose(strides, output_shape, auto_pad, kernel)
    rng = np.random.default_rng(0)
    feeds = {
        "x": rng.standard_normal((1, 1, 3, 3)).astype("float32"),
        "w": rng.standard_normal((1, 2, *kernel)).astype("float32"),
    }
    np.testing.assert_allclose(_reference(model, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-5)


def test_conv_transpose_output_shape_compiled_matches_onnx_case():
    model = _conv_transpose((3, 2), (10, 8))
    rng = np.random.default_rng(1)
    feeds = {
        "x": rng.standard_normal((1, 1, 3, 3)).astype("float32"),
        "w": rng.standard_normal((1, 2, 3, 3)).astype("float32"),
    }
    np.testing.assert_allclose(_compiled(model, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-5)


def test_conv_transpose_output_shape_a_stride_too_large_is_refused():
    with pytest.raises(OpAttributeInvalid, match=r"ConvTranspose.*output_shape dim 6 exceeds"):
        from_onnx(_conv_transpose((1, 1), (6, 6)))


def _gather_model(op, axis):
    node = helper.make_node(op, ["x", "i"], ["y"], axis=axis, name="pick")
    i_shape = [2] if op == "Gather" else [3, 2]
    return _model([node], {"x": (F32, [3, 4]), "i": (TensorProto.INT64, i_shape)})


@pytest.mark.parametrize("op", ["Gather", "GatherElements"])
def test_gather_runtime_indices_wrap_negatives_and_refuse_out_of_range(op):
    x = np.arange(12, dtype="float32").reshape(3, 4)
    model = _gather_model(op, 1)
    shape = (2,) if op == "Gather" else (3, 2)
    good = np.array([-4, 3, -1, 0, 2, -2][: int(np.prod(shape))], "int64").reshape(shape)
    feeds = {"x": x, "i": good}
    np.testing.assert_array_equal(_compiled(model, feeds), _ort(model, feeds))
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    for bad in (4, -5, 7):  # 7 would land in the next row of the flat data
        idx = good.copy()
        idx.reshape(-1)[0] = bad
        with pytest.raises(RuntimeError_, match=r"index out of bounds reading 'x'"):
            vm["main"](tvm.nd.array(x), tvm.nd.array(idx))


def test_gather_known_out_of_range_indices_are_refused_at_import():
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=0, name="pick")
    model = _model([node], {"x": (F32, [3, 4])}, inits={"i": np.array([3], "int64")})
    with pytest.raises(OpAttributeInvalid, match=r"node 'pick' \(Gather\).*indices \[3\]"):
        from_onnx(model)


_EDGE_A = [5, -5, 5, -5, 0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 5, 3, 1e8, -7.5, 5, -5, 6]
_EDGE_B = [3, 3, -3, -3, 3, 3, -3, -3, 3, 3, 3, np.nan, 0, 3, 2, np.inf, np.inf, -np.inf]


@pytest.mark.parametrize("fmod, want", [(1, np.fmod), (0, np.mod)])
def test_mod_float_edge_cases_match_numpy(fmod, want):
    a, b = np.array(_EDGE_A, "float32"), np.array(_EDGE_B, "float32")
    node = helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)
    model = _model([node], {"a": (F32, [len(a)]), "b": (F32, [len(a)])})
    with np.errstate(all="ignore"):
        expected = want(a, b)
    got = _compiled(model, {"a": a, "b": b})
    np.testing.assert_array_equal(got, expected)  # NaNs in the same places
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))  # and the zeros' signs


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_int_matches_onnxruntime(fmod):
    a = np.array([5, -5, 5, -5, 0, 7, -7], "int32")
    b = np.array([3, 3, -3, -3, 3, 1, 2], "int32")
    node = helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)
    model = _model([node], {"a": (TensorProto.INT32, [7]), "b": (TensorProto.INT32, [7])})
    feeds = {"a": a, "b": b}
    np.testing.assert_array_equal(_compiled(model, feeds), _ort(model, feeds))


@pytest.mark.parametrize(
    "op, attr", [("LeakyRelu", "alpha"), ("Elu", "alpha"), ("Selu", "alpha"), ("Selu", "gamma")]
)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_inf_attributes_compute_as_onnxruntime(op, attr, value):
    model = _model([helper.make_node(op, ["x"], ["y"], **{attr: value})], {"x": (F32, [6])})
    feeds = {"x": np.array([-1, 1, 0, -2, 3, -0.0], "float32")}
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_compiled(model, feeds), _ort(model, feeds))


# ----------------------------------------------------------------------------- bad attributes

_X4 = {"x": (F32, [1, 2, 6, 6])}
_W = {"w": np.ones((2, 2, 3, 3), "float32")}
_BAD_ATTRS = [
    ("Conv", ["x", "w"], {"dilations": [0, 1]}, _W, r"dilations=\[0, 1\] must hold 2 positive"),
    ("Conv", ["x", "w"], {"strides": [0, 0]}, _W, r"strides=\[0, 0\] must hold 2 positive"),
    ("Conv", ["x", "w"], {"kernel_shape": [0, 0]}, _W, r"kernel_shape=\[0, 0\] must hold"),
    ("Conv", ["x", "w"], {"kernel_shape": [2, 2]}, _W, r"contradicts the weight's spatial"),
    ("Conv", ["x", "w"], {"pads": [1, 1, -1, 0]}, _W, r"pads=\[1, 1, -1, 0\] must hold 4 non-neg"),
    ("ConvTranspose", ["x", "w"], {"strides": [0, 1]}, _W, r"strides=\[0, 1\]"),
    ("MaxPool", ["x"], {"kernel_shape": [2, 2], "pads": [2, 0, 0, 0]}, {}, r"smaller than the k"),
    ("AveragePool", ["x"], {"kernel_shape": [3, 3], "strides": [0, 1]}, {}, r"strides=\[0, 1\]"),
    ("MaxPool", ["x"], {"kernel_shape": [2, 0]}, {}, r"kernel_shape=\[2, 0\]"),
    ("Flatten", ["x"], {"axis": 5}, {}, r"axis=5 is out of range \[-4, 4\]"),
    ("Flatten", ["x"], {"axis": -5}, {}, r"axis=-5 is out of range"),
    ("DepthToSpace", ["x"], {"blocksize": 0}, {}, r"blocksize=0 must be at least 1"),
    ("SpaceToDepth", ["x"], {"blocksize": 0}, {}, r"blocksize=0 must be at least 1"),
    ("SpaceToDepth", ["x"], {"blocksize": 4}, {}, r"blocksize=4 does not divide"),
]


@pytest.mark.parametrize(
    "op, ins, attrs, inits, match", _BAD_ATTRS, ids=[f"{r[0]}-{r[4][:20]}" for r in _BAD_ATTRS]
)
def test_invalid_attributes_are_refused_naming_node_and_attribute(op, ins, attrs, inits, match):
    node = helper.make_node(op, ins, ["y"], name="bad", **attrs)
    with pytest.raises(OpAttributeInvalid, match=rf"node 'bad' \({op}\): .*{match}"):
        from_onnx(_model([node], _X4, inits=inits))


@pytest.mark.parametrize(
    "op, axes, match",
    [
        ("Unsqueeze", [0, 0], r"axes \[0, 0\] name the same axis twice"),
        ("Unsqueeze", [1, -4], r"axes \[1, -4\] name the same axis twice"),
        ("Squeeze", [0, -3], r"axes \[0, -3\] name the same axis twice"),
        ("Squeeze", [1], r"axes \[1\] name dims of size \[3\]; only dims of size 1"),
    ],
)
def test_duplicate_or_wide_squeeze_axes_are_refused(op, axes, match):
    node = helper.make_node(op, ["x", "axes"], ["y"], name="bad")
    inits = {"axes": np.array(axes, "int64")}
    with pytest.raises(OpAttributeInvalid, match=rf"node 'bad' \({op}\): {match}"):
        from_onnx(_model([node], {"x": (F32, [1, 3, 1])}, inits=inits))


@pytest.mark.parametrize("sizes", [[2, 2], [3, 3, -1], [7, 0]])
def test_split_sizes_must_sum_to_the_axis(sizes):
    outs = [f"y{k}" for k in range(len(sizes))]
    node = helper.make_node("Split", ["x", "s"], outs, axis=1, name="cut")
    model = _model(
        [node], {"x": (F32, [2, 5])}, outputs=outs, inits={"s": np.array(sizes, "int64")}
    )
    with pytest.raises(OpAttributeInvalid, match=r"node 'cut' \(Split\): split sizes .* sum to"):
        from_onnx(model)


# ----------------------------------------------------------------------------- graph structure


@pytest.mark.parametrize(
    "nodes, inits, match",
    [
        (
            [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
            {},
            r"node #1 \(Neg\) writes 'y', which is already the output of node #0 \(Relu\)",
        ),
        (
            [
                helper.make_node("Relu", ["x"], ["x"], name="r"),
                helper.make_node("Neg", ["x"], ["y"]),
            ],
            {},
            r"node 'r' \(Relu\) writes 'x', which is already a graph input",
        ),
        (
            [helper.make_node("Relu", ["x"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
            {"c": np.ones(3, "float32")},
            r"node #0 \(Relu\) writes 'c', which is already an initializer",
        ),
    ],
)
def test_graphs_that_are_not_ssa_are_refused(nodes, inits, match):
    with pytest.raises(FrontendError, match=match):
        from_onnx(_model(nodes, {"x": (F32, [3])}, inits=inits))


# ----------------------------------------------------------------------------- foreign exceptions


def _add_model(c):
    node = helper.make_node("Add", ["x", "c"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", F32, [3])],
        [helper.make_tensor_value_info("y", F32, None)], [c],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _tensor(**change):
    t = numpy_helper.from_array(np.ones(3, "float32"), "c")
    for k, v in change.items():
        setattr(t, k, v)
    return t


def _external(location):
    t = _tensor(data_location=TensorProto.EXTERNAL)
    t.ClearField("raw_data")
    t.external_data.add(key="location", value=location)
    return t


@pytest.mark.parametrize(
    "tensor, match",
    [
        (_tensor(data_type=999), r"initializer 'c': ONNX element type number 999 has no"),
        (_tensor(raw_data=b"\0" * 5), r"initializer 'c' \(float32, dims \[3\]\) holds data that"),
        (_external("/etc/passwd"), r"initializer 'c' keeps its data in an external file"),
        (_external("../x"), r"initializer 'c' keeps its data in an external file"),
    ],
)
def test_damaged_initializers_raise_frontend_errors(tensor, match):
    with pytest.raises(FrontendError, match=match):
        from_onnx(_add_model(tensor))


_RELU = _model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [2, 3])})


@pytest.mark.parametrize(
    "shape, match",
    [
        ((None, 3), r"has the dim None; each dim must be an int >= 0, or a name"),
        ((2.0, 3), r"has the dim 2.0"),
        ((-1, 3), r"has the dim -1"),
        ((2, 3, 4), r"has rank 3, the model declares input 'x' with rank 2"),
        (5, r"is not a sequence of dims"),
    ],
)
def test_bad_shape_dict_entries_are_refused(shape, match):
    with pytest.raises(FrontendError, match=match):
        from_onnx(_RELU, {"x": shape})


def test_zero_batch_in_shape_dict_imports():
    mod = from_onnx(_RELU, {"x": (0, 3)})
    assert tuple(int(d) for d in mod["main"].params[0].struct_info.shape) == (0, 3)


@pytest.mark.parametrize("opset, match", [(99, r"opset 99 is newer .* 11 to 28"), (5, "older")])
def test_opsets_outside_the_supported_range_are_refused(opset, match):
    model = _model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [3])}, opset=opset)
    with pytest.raises(FrontendError, match=match):
        from_onnx(model)


@pytest.mark.parametrize(
    "node, match",
    [
        (helper.make_node("Add", ["x"], ["y"]), r"node \(Add\) writing 'y': has 1 inputs; Add"),
        (helper.make_node("Conv", ["x"], ["y"], name="c"), r"node 'c' \(Conv\): has 1 inputs"),
    ],
)
def test_nodes_with_too_few_inputs_are_refused(node, match):
    with pytest.raises(FrontendError, match=match):
        from_onnx(_model([node], {"x": (F32, [1, 1, 3])}))


def test_a_converter_crash_becomes_a_frontend_error_naming_the_node(monkeypatch):
    from minitvm.relax.frontend.onnx import _ops

    def broken(ctx, inputs, attrs):
        return {}["missing"]

    monkeypatch.setitem(_ops.CONVERTERS, "Relu", broken)
    with pytest.raises(FrontendError, match=r"node \(Relu\) writing 'y': the model is malformed"):
        from_onnx(_RELU)


# ----------------------------------------------------------------------------- import time


def _chain(n):
    nodes, prev = [], "x"
    for k in range(n):
        ins = [prev, "c"] if k % 2 == 0 else [prev]
        nodes.append(helper.make_node("Add" if k % 2 == 0 else "Relu", ins, [f"t{k}"]))
        prev = f"t{k}"
    return _model(nodes, {"x": (F32, [4, 8])}, outputs=(prev,), inits={"c": np.ones(8, "float32")})


def _import_seconds(model):
    start = time.perf_counter()
    from_onnx(model)
    return time.perf_counter() - start


def test_import_time_grows_linearly_with_the_chain():
    small, big = _chain(500), _chain(2000)
    _import_seconds(small)  # warm caches (op table, lazy imports)
    t_small = min(_import_seconds(small) for _ in range(2))
    t_big = _import_seconds(big)
    assert t_big < 3 * 4 * t_small + 0.5, (t_small, t_big)  # 4x nodes: at most 3x per node


def test_nothing_but_minitvm_errors_escape_for_garbage_attributes():
    node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)
    node.attribute.add(name="mode", type=onnx.AttributeProto.STRING, s=b"\xff\xfe")
    model = _model([node], {"x": (F32, [1, 4, 2, 2])})
    with pytest.raises(MiniTVMError, match=r"attribute 'mode' is not UTF-8"):
        from_onnx(model)


def test_attributes_the_schema_does_not_define_are_refused():
    """onnx.checker refuses them; ignoring them would run a model nobody can read the same
    way (a MatMul with an `axis`, a Relu with `junk`)."""
    node = helper.make_node("Relu", ["x"], ["y"])
    node.attribute.add(name="junk", type=onnx.AttributeProto.STRING, s=b"abc")
    model = _model([node], {"x": (F32, [3])})
    with pytest.raises(OpAttributeInvalid, match=r"\['junk'\] are not defined for Relu"):
        from_onnx(model)
    with pytest.raises(onnx.checker.ValidationError):  # the oracle refuses it too
        onnx.checker.check_model(model)


@pytest.mark.parametrize("op, value", [("ReduceMax", 2), ("ReduceMax", -1), ("ArgMax", 9)])
def test_flag_attributes_other_than_0_or_1_are_refused(op, value):
    """keepdims=2 kept the axis here while ONNX Runtime drops it: a silent wrong shape."""
    node = helper.make_node(op, ["x"], ["y"], keepdims=value)
    model = _model([node], {"x": (F32, [3, 4])})
    with pytest.raises(OpAttributeInvalid, match=rf"'keepdims' is {value}; the ONNX spec allows 0 or 1"):
        from_onnx(model)
