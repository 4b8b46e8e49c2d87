"""Each ONNX converter against ONNX Runtime on random inputs, over a couple of opsets."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper

import minitvm as tvm
from minitvm import relax
from minitvm.relax import eval_ref
from minitvm.relax.frontend.onnx import from_onnx

RTOL, ATOL = 1e-4, 1e-5
_ONNX_TYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "bool": TensorProto.BOOL}


def make_model(nodes, inputs, outputs, opset, initializers=(), input_shapes=None):
    """A one-graph model: inputs/outputs are {name: (shape, dtype)}; shapes may hold str dims."""
    shapes = input_shapes or {}
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info(n, _ONNX_TYPES[d], shapes.get(n, s))
            for n, (s, d) in inputs.items()
        ],
        [helper.make_tensor_value_info(n, _ONNX_TYPES[d], None) for n, d in outputs.items()],
        [numpy_helper.from_array(v, n) for n, v in dict(initializers).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def random_inputs(inputs, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dtype) in inputs.items():
        if dtype == "bool":
            out[name] = rng.random(shape) > 0.5
        elif dtype == "int64":
            out[name] = rng.integers(-3, 4, shape).astype("int64")
        else:
            out[name] = rng.standard_normal(shape).astype(dtype)
    return out


def check(model, feeds, compile=False):
    """from_onnx's program (reference evaluator, or compiled on the VM) equals ONNX Runtime."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    mod = from_onnx(model)
    args = [feeds[i.name] for i in model.graph.input if i.name in feeds]
    if compile:
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
        got = vm["main"](*[tvm.nd.array(a) for a in args])
    else:
        got = eval_ref.evaluate(mod, *args)
    got = list(got) if isinstance(got, list | tuple) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = g.numpy() if hasattr(g, "numpy") else np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return mod


def check_node(
    op_type,
    inputs,
    opset=17,
    attrs=None,
    initializers=(),
    n_out=1,
    out_dtype="float32",
    compile=False,
):
    outs = {f"y{i}": out_dtype for i in range(n_out)}
    names = list(inputs) + [n for n, _ in dict(initializers).items()]
    node = helper.make_node(op_type, names, list(outs), **(attrs or {}))
    model = make_model([node], inputs, outs, opset, initializers)
    return check(model, random_inputs(inputs), compile=compile)


X = {"x": ((2, 3, 4, 5), "float32")}
UNARY = [
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Neg",
    "Abs",
    "Erf",
    "Floor",
    "Ceil",
    "Sign",
    "Sin",
    "Cos",
    "Softsign",
    "HardSwish",
    "Softplus",
]


@pytest.mark.parametrize("opset", [14, 21])
@pytest.mark.parametrize("op_type", UNARY)
def test_unary(op_type, opset):
    check_node(op_type, X, opset)


@pytest.mark.parametrize("op_type", ["Sqrt", "Log", "Reciprocal"])
def test_unary_positive_domain(op_type):
    model = make_model([helper.make_node(op_type, ["x"], ["y"])], X, {"y": "float32"}, 17)
    check(model, {"x": np.random.default_rng(0).uniform(0.5, 2, (2, 3, 4, 5)).astype("float32")})


@pytest.mark.parametrize(
    "op_type, attrs",
    [
        ("LeakyRelu", {"alpha": 0.2}),
        ("Elu", {"alpha": 0.7}),
        ("Selu", {}),
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ],
)
def test_activation_attributes(op_type, attrs):
    check_node(op_type, X, 17, attrs)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_opset20(approximate):
    check_node("Gelu", X, 20, {"approximate": approximate})


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean"])
def test_binary_broadcasting(op_type):
    inputs = {"a": ((2, 3, 4, 5), "float32"), "b": ((4, 1), "float32")}
    check_node(op_type, inputs, 14)


@pytest.mark.parametrize("op_type", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons(op_type):
    inputs = {"a": ((3, 4), "int64"), "b": ((4,), "int64")}
    check_node(op_type, inputs, 16, out_dtype="bool")


def test_pow_and_where_and_prelu():
    inputs = {"a": ((3, 4), "float32")}
    nodes = [
        helper.make_node("Abs", ["a"], ["pa"]),
        helper.make_node("Pow", ["pa", "e"], ["p"]),
        helper.make_node("Greater", ["a", "zero"], ["c"]),
        helper.make_node("Where", ["c", "p", "a"], ["w"]),
        helper.make_node("PRelu", ["w", "slope"], ["y"]),
    ]
    inits = {
        "e": np.array(1.5, "float32"),
        "zero": np.array(0.0, "float32"),
        "slope": np.array([0.1, 0.2, 0.3, 0.4], "float32"),
    }
    check(make_model(nodes, inputs, {"y": "float32"}, 16, inits), random_inputs(inputs))


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_clip_bounds_as_inputs_and_omitted(opset):
    inputs = {"x": ((3, 4), "float32")}
    nodes = [
        helper.make_node("Clip", ["x", "lo", ""], ["t"]),
        helper.make_node("Clip", ["t", "", "hi"], ["y"]),
    ]
    inits = {"lo": np.array(-0.5, "float32"), "hi": np.array(0.25, "float32")}
    check(make_model(nodes, inputs, {"y": "float32"}, opset, inits), random_inputs(inputs))


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"pads": [1, 1, 1, 1], "strides": [2, 2]},
        {"pads": [0, 1, 2, 1], "dilations": [2, 1]},
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        {"auto_pad": "SAME_LOWER"},
        {"group": 3},
    ],
)
def test_conv2d(attrs):
    groups = attrs.get("group", 1)
    w = np.random.default_rng(1).standard_normal((6, 6 // groups, 3, 3)).astype("float32")
    b = np.random.default_rng(2).standard_normal(6).astype("float32")
    check_node("Conv", {"x": ((2, 6, 9, 8), "float32")}, 17, attrs, {"w": w, "b": b})


def test_conv1d_and_conv_transpose():
    w = np.random.default_rng(1).standard_normal((4, 3, 3)).astype("float32")
    check_node(
        "Conv", {"x": ((2, 3, 10), "float32")}, 13, {"pads": [1, 2], "strides": [2]}, {"w": w}
    )
    wt = np.random.default_rng(2).standard_normal((3, 2, 3, 3)).astype("float32")
    bt = np.random.default_rng(3).standard_normal(2).astype("float32")
    attrs = {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}
    check_node("ConvTranspose", {"x": ((1, 3, 5, 6), "float32")}, 17, attrs, {"w": wt, "b": bt})
    wt1 = np.random.default_rng(4).standard_normal((3, 2, 4)).astype("float32")
    check_node("ConvTranspose", {"x": ((1, 3, 7), "float32")}, 17, {"strides": [3]}, {"w": wt1})


@pytest.mark.parametrize(
    "attrs",
    [{}, {"transA": 1}, {"transB": 1, "alpha": 0.5, "beta": 2.0}, {"transA": 1, "transB": 1}],
)
def test_gemm(attrs):
    rng = np.random.default_rng(0)
    a_shape = (5, 4) if attrs.get("transA") else (4, 5)
    b = rng.standard_normal((3, 5) if attrs.get("transB") else (5, 3)).astype("float32")
    c = rng.standard_normal((3,)).astype("float32")
    check_node("Gemm", {"a": (a_shape, "float32")}, 13, attrs, {"b": b, "c": c})


def test_matmul_batch_broadcasting():
    check_node("MatMul", {"a": ((2, 1, 4, 5), "float32"), "b": ((3, 5, 6), "float32")}, 13)


def test_batch_instance_and_layer_norm():
    rng = np.random.default_rng(0)
    c = 3
    stats = {n: rng.uniform(0.5, 1.5, c).astype("float32") for n in ("s", "b", "m", "v")}
    check_node("BatchNormalization", {"x": ((2, c, 4, 4), "float32")}, 15, {"epsilon": 1e-3}, stats)
    check_node(
        "InstanceNormalization",
        {"x": ((2, c, 4, 4), "float32")},
        13,
        {},
        {"s": stats["s"], "b": stats["b"]},
    )
    gamma = rng.standard_normal((4, 5)).astype("float32")
    check_node(
        "LayerNormalization",
        {"x": ((2, 3, 4, 5), "float32")},
        17,
        {"axis": -2},
        {"g": gamma, "beta": gamma * 0.5},
    )
    check_node("LayerNormalization", {"x": ((2, 3, 4, 5), "float32")}, 17, {}, {"g": gamma[0]})


@pytest.mark.parametrize(
    "op_type, attrs",
    [
        ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("MaxPool", {"kernel_shape": [2, 2], "ceil_mode": 1, "strides": [2, 2]}),
        ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        ("AveragePool", {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1]}),
        ("MaxPool", {"kernel_shape": [3], "strides": [2]}),
    ],
)
def test_pooling(op_type, attrs):
    shape = (2, 3, 9) if len(attrs["kernel_shape"]) == 1 else (2, 3, 7, 8)
    check_node(op_type, {"x": (shape, "float32")}, 17, attrs)


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pooling(op_type):
    check_node(op_type, X, 13)


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [1, -1])
def test_softmax_axis_semantics_by_opset(op_type, axis, opset):
    check_node(op_type, X, opset, {"axis": axis})


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize(
    "op_type",
    [
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "ReduceL2",
        "ReduceSumSquare",
        "ReduceLogSumExp",
    ],
)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_axes_attribute_or_input(op_type, opset, keepdims):
    axes = np.array([1, -1], "int64")
    as_input = opset >= 18 or op_type == "ReduceSum"
    attrs = {"keepdims": keepdims} if as_input else {"keepdims": keepdims, "axes": axes.tolist()}
    inits = {"axes": axes} if as_input else {}
    check_node(op_type, X, opset, attrs, inits)


def test_reduce_without_axes_reduces_everything():
    check_node("ReduceMean", X, 18, {"keepdims": 0})


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_arg_reductions(op_type):
    check_node(op_type, X, 13, {"axis": 2, "keepdims": 0}, out_dtype="int64")


def test_shape_ops_chain():
    inputs = {"x": ((2, 3, 4, 5), "float32")}
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "ax0"], ["u"]),
        helper.make_node("Squeeze", ["u", "ax0"], ["s"]),
        helper.make_node("Flatten", ["s"], ["f"], axis=2),
        helper.make_node("Concat", ["f", "f"], ["c"], axis=-1),
        helper.make_node("Split", ["c", "split"], ["y0", "y1"], axis=1),
    ]
    inits = {
        "shape": np.array([0, -1, 5], "int64"),
        "ax0": np.array([0], "int64"),
        "split": np.array([3, 7], "int64"),
    }
    check(
        make_model(nodes, inputs, {"y0": "float32", "y1": "float32"}, 13, inits),
        random_inputs(inputs),
    )


def test_split_num_outputs_opset18():
    check_node("Split", {"x": ((2, 7), "float32")}, 18, {"axis": 1, "num_outputs": 3}, n_out=3)


@pytest.mark.parametrize(
    "starts, ends, axes, steps",
    [
        ([1], [3], [1], [1]),
        ([0, -3], [2**63 - 1, -1], [0, 3], [1, 2]),
        ([3], [0], [2], [-1]),
        ([-1], [-(2**63)], [3], [-2]),
    ],
)
def test_slice(starts, ends, axes, steps):
    inits = {
        n: np.array(v, "int64") for n, v in zip(("s", "e", "a", "st"), (starts, ends, axes, steps))
    }
    check_node("Slice", X, 13, {}, inits)


def test_gather_negative_and_runtime_indices():
    check_node("Gather", X, 13, {"axis": 2}, {"i": np.array([[0, -1], [2, 1]], "int64")})
    check_node("Gather", X, 13, {"axis": 1}, {"i": np.array(-2, "int64")})
    inputs = {"x": ((4, 5), "float32"), "i": ((3,), "int64")}
    model = make_model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], inputs, {"y": "float32"}, 13
    )
    check(model, {"x": random_inputs(inputs)["x"], "i": np.array([-1, 0, 3], "int64")})


def test_expand_tile_pad_cast():
    inputs = {"x": ((3, 1), "float32")}
    nodes = [
        helper.make_node("Expand", ["x", "shape"], ["e"]),
        helper.make_node("Tile", ["e", "reps"], ["t"]),
        helper.make_node("Pad", ["t", "pads", "val"], ["p"], mode="constant"),
        helper.make_node("Pad", ["p", "pads"], ["q"], mode="reflect"),
        helper.make_node("Pad", ["q", "pads"], ["r"], mode="edge"),
        helper.make_node("Cast", ["r"], ["y"], to=TensorProto.INT64),
    ]
    inits = {
        "shape": np.array([2, 1, 4], "int64"),
        "reps": np.array([1, 2, 1], "int64"),
        "pads": np.array([0, 1, 2, 0, 2, 1], "int64"),
        "val": np.array(1.5, "float32"),
    }
    model = make_model(nodes, inputs, {"y": "int64"}, 13, inits)
    check(model, {"x": (random_inputs(inputs)["x"] * 10)})


def test_resize_modes():
    x = {"x": ((1, 2, 4, 5), "float32")}
    empty = np.zeros(0, "float32")
    for mode, coord, nearest in [
        ("nearest", "asymmetric", "floor"),
        ("nearest", "half_pixel", "round_prefer_ceil"),
        ("linear", "half_pixel", None),
        ("linear", "align_corners", None),
        ("linear", "pytorch_half_pixel", None),
    ]:
        attrs = {"mode": mode, "coordinate_transformation_mode": coord}
        if nearest:
            attrs["nearest_mode"] = nearest
        check_node(
            "Resize", x, 19, attrs, {"roi": empty, "scales": np.array([1, 1, 2, 3], "float32")}
        )
        check_node(
            "Resize",
            x,
            13,
            attrs,
            {"roi": empty, "scales": empty, "sizes": np.array([1, 2, 7, 3], "int64")},
        )


def test_cumsum_einsum_and_constant():
    rng = np.random.default_rng(0)
    check_node(
        "CumSum", {"x": ((3, 4), "float32")}, 14, {"reverse": 1}, {"axis": np.array(1, "int64")}
    )
    check_node(
        "Einsum",
        {"a": ((2, 3, 4), "float32"), "b": ((2, 4, 5), "float32")},
        13,
        {"equation": "bij,bjk->bik"},
    )
    value = numpy_helper.from_array(rng.standard_normal((3, 4)).astype("float32"))
    nodes = [
        helper.make_node("Constant", [], ["c"], value=value),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    inputs = {"x": ((3, 4), "float32")}
    check(make_model(nodes, inputs, {"y": "float32"}, 13), random_inputs(inputs))


def test_identity_and_dropout_pass_through():
    nodes = [helper.make_node("Dropout", ["x"], ["d"]), helper.make_node("Identity", ["d"], ["y"])]
    check(make_model(nodes, X, {"y": "float32"}, 13), random_inputs(X))


def test_a_small_graph_compiles_on_the_vm():
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype("float32")
    check_node(
        "Conv", {"x": ((1, 3, 6, 6), "float32")}, 17, {"pads": [1, 1, 1, 1]}, {"w": w}, compile=True
    )


@pytest.mark.parametrize(
    "op_type, attrs",
    [
        ("ThresholdedRelu", {"alpha": 0.3}),
        ("Shrink", {"lambd": 0.4, "bias": 0.1}),
        ("Celu", {"alpha": 0.8}),
        ("Mish", {}),
        ("Tan", {}),
        ("Sinh", {}),
        ("Cosh", {}),
        ("MeanVarianceNormalization", {}),
        ("Trilu", {"upper": 0}),
    ],
)
def test_decomposed_elementwise_ops(op_type, attrs):
    check_node(op_type, X, 18, attrs)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode):
    check_node("DepthToSpace", {"x": ((2, 8, 3, 4), "float32")}, 13, {"blocksize": 2, "mode": mode})
    check_node("SpaceToDepth", {"x": ((2, 2, 4, 6), "float32")}, 13, {"blocksize": 2})


@pytest.mark.parametrize("op_type", ["ReduceL1", "ReduceLogSum"])
def test_more_reductions(op_type):
    model = make_model(
        [helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=0)],
        X,
        {"y": "float32"},
        18,
        {"axes": np.array([1, 3], "int64")},
    )
    check(model, {"x": np.random.default_rng(0).uniform(0.5, 2, (2, 3, 4, 5)).astype("float32")})


def test_shape_of_a_symbolic_tensor_can_be_returned_as_data():
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Mul", ["s", "two"], ["y"])]
    model = make_model(
        nodes,
        {"x": ((4, 3), "float32")},
        {"y": "int64"},
        17,
        {"two": np.array(2, "int64")},
        input_shapes={"x": ("n", 3)},
    )
    check(model, random_inputs({"x": ((5, 3), "float32")}))


def test_matmul_with_an_unknown_inner_dim_is_checked_at_run_time():
    w = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        {"x": ((2, 4), "float32")},
        {"y": "float32"},
        13,
        {"w": w},
        input_shapes={"x": ("?", "?")},
    )
    mod = check(model, random_inputs({"x": ((2, 4), "float32")}))
    assert "match_cast" in mod.script()


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_with_negative_indices(axis):
    rng = np.random.default_rng(0)
    inputs = {"x": ((3, 4, 5), "float32"), "i": ((3, 2, 5), "int64")}
    model = make_model(
        [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)],
        inputs,
        {"y": "float32"},
        13,
    )
    dim = (3, 4, 5)[axis]
    feeds = {
        "x": random_inputs(inputs)["x"],
        "i": rng.integers(-dim, dim, (3, 2, 5)).astype("int64"),
    }
    check(model, feeds)
