"""from_onnx's API: inputs (shape_dict, dtype_dict, names), kept params, symbolic shape
chains folded at import, and the errors for unsupported ops and malformed models."""

import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper
from test_onnx_ops import check, make_model, random_inputs

from minitvm import tir
from minitvm.error import (
    FrontendError,
    OpAttributeInvalid,
    OpAttributeRequired,
    OpAttributeUnImplemented,
    OpNotImplemented,
)
from minitvm.relax import eval_ref
from minitvm.relax.frontend import detach_params
from minitvm.relax.frontend.onnx import from_onnx


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _linear_model(opset=17):
    w = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    b = np.arange(3, dtype="float32")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["y"]),
    ]
    inputs = {"x": (("batch", 4), "float32")}
    return make_model(nodes, inputs, {"y": "float32"}, opset, {"w": w, "b": b})


def test_dim_param_becomes_a_symbolic_dim_and_shape_dict_overrides_it():
    model = _linear_model()
    sinfo = from_onnx(model)["main"].params[0].struct_info
    assert isinstance(sinfo.shape[0], tir.Var) and sinfo.shape[0].name == "batch"
    fixed = from_onnx(model, shape_dict={"x": (5, 4)})["main"].params[0].struct_info
    assert [int(d) for d in fixed.shape] == [5, 4]
    named = from_onnx(model, shape_dict={"x": ("n", 4)})["main"].params[0].struct_info
    assert named.shape[0].name == "n"


def test_dtype_dict_overrides_the_declared_input_dtype():
    model = _linear_model()
    assert (
        from_onnx(model, dtype_dict={"x": "float16"})["main"].params[0].struct_info.dtype
        == "float16"
    )
    assert from_onnx(model, dtype_dict="float16")["main"].params[0].struct_info.dtype == "float32"


def test_input_names_are_sanitized_unless_asked_not_to():
    nodes = [helper.make_node("Relu", ["input:0"], ["y"])]
    model = make_model(nodes, {"input:0": ((2, 3), "float32")}, {"y": "float32"}, 13)
    assert from_onnx(model)["main"].params[0].name_hint == "input_0"
    assert from_onnx(model, sanitize_input_names=False)["main"].params[0].name_hint == "input:0"


def test_keep_params_in_input_and_detach_params_round_trip():
    model = _linear_model()
    x = np.random.default_rng(1).standard_normal((2, 4)).astype("float32")
    mod = from_onnx(model, keep_params_in_input=True)
    func = mod["main"]
    assert [p.name_hint for p in func.params] == ["x", "w", "b"]
    assert func.attrs["num_input"] == 1
    mod, params = detach_params(mod)
    got = eval_ref.evaluate(mod, x, *[p.numpy() for p in params["main"]])
    np.testing.assert_allclose(np.asarray(got), _ort(model, {"x": x})[0], rtol=1e-5)


def test_integer_initializers_stay_constants_when_params_are_kept():
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Mul", ["r", "s"], ["y"]),
    ]
    inits = {"shape": np.array([-1, 6], "int64"), "s": np.full((6,), 2.0, "float32")}
    model = make_model(nodes, {"x": ((2, 3, 2), "float32")}, {"y": "float32"}, 14, inits)
    func = from_onnx(model, keep_params_in_input=True)["main"]
    assert [p.name_hint for p in func.params] == ["x", "s"]


def test_shape_gather_concat_chain_folds_over_a_symbolic_batch():
    # the exporters' x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["f"]),
        helper.make_node("Shape", ["f"], ["fs"]),
        helper.make_node(
            "ConstantOfShape",
            ["fs"],
            ["ones"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
        ),
        helper.make_node("Add", ["f", "ones"], ["y"]),
    ]
    inits = {
        "zero": np.array(0, "int64"),
        "axes": np.array([0], "int64"),
        "minus1": np.array([-1], "int64"),
    }
    model = make_model(nodes, {"x": (("batch", 2, 3), "float32")}, {"y": "float32"}, 13, inits)
    mod = from_onnx(model)
    text = mod.script()
    assert "R.shape" not in text.split("R.reshape")[0] and "Shape" not in text
    out = mod["main"].body.body.struct_info
    assert isinstance(out.shape[0], tir.Var) and int(out.shape[1]) == 6
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype("float32")
    np.testing.assert_allclose(
        np.asarray(eval_ref.evaluate(mod, x)), _ort(model, {"x": x})[0], rtol=1e-6
    )


def test_expand_to_a_shape_computed_from_another_input():
    nodes = [
        helper.make_node("Shape", ["big"], ["s"]),
        helper.make_node("Expand", ["x", "s"], ["e"]),
        helper.make_node("Add", ["e", "big"], ["y"]),
    ]
    inputs = {"x": ((1, 4), "float32"), "big": ((3, 4), "float32")}
    check(make_model(nodes, inputs, {"y": "float32"}, 13), random_inputs(inputs))


def test_constant_subgraphs_fold_through_the_reference_evaluator():
    nodes = [
        helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        helper.make_node("Sqrt", ["wt"], ["ws"]),
        helper.make_node("MatMul", ["x", "ws"], ["y"]),
    ]
    w = np.random.default_rng(0).uniform(0.1, 1, (3, 4)).astype("float32")
    model = make_model(nodes, {"x": ((2, 4), "float32")}, {"y": "float32"}, 13, {"w": w})
    mod = check(model, random_inputs({"x": ((2, 4), "float32")}))
    assert "permute_dims" not in mod.script() and "sqrt" not in mod.script()


def test_every_unsupported_node_is_named_in_one_error():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="ok"),
        helper.make_node("MaxRoiPool", ["r", "r"], ["n"], name="nms_1"),
        helper.make_node("Custom", ["r"], ["c"], name="mine", domain="com.example"),
        helper.make_node("Add", ["n", "c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 3))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    )
    with pytest.raises(OpNotImplemented) as info:
        from_onnx(model)
    msg = str(info.value)
    assert "2 operator(s)" in msg
    assert "ai.onnx::MaxRoiPool" in msg and "'nms_1'" in msg
    assert "com.example::Custom" in msg and "'mine'" in msg


def _relu_model(**kwargs):
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        {"x": ((2, 3), "float32")},
        {"y": "float32"},
        13,
        **kwargs,
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: from_onnx("model.onnx"),
            FrontendError,
            "expected an onnx.ModelProto, got str; load a file with minitvm.relax.frontend.onnx.load_model",
        ),
        (
            lambda: from_onnx(_relu_model(), shape_dict={"data": (1, 3)}),
            FrontendError,
            r"shape_dict names \['data'\], which are not inputs of the graph; its inputs are \['x'\]",
        ),
        (
            lambda: from_onnx(_relu_model(), dtype_dict={"z": "float16"}),
            FrontendError,
            r"dtype_dict names \['z'\]",
        ),
        (
            lambda: from_onnx(_relu_model(), opset=5),
            FrontendError,
            r"Relu-1 \(opset 5, older than the versions minitvm converts: 6 and later; upgrade",
        ),
    ],
)
def test_api_misuse_errors_say_what_to_do(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _single(node, inputs, opset=17, inits=()):
    return make_model([node], inputs, {"y": "float32"}, opset, inits)


X = {"x": ((1, 2, 4, 4), "float32")}


@pytest.mark.parametrize(
    "model, error, match",
    [
        (
            _single(helper.make_node("Relu", ["nowhere"], ["y"], name="r1"), X),
            FrontendError,
            r"node 'r1' \(Relu\): input 'nowhere' is neither a graph input, an initializer nor the output",
        ),
        (
            _single(helper.make_node("Concat", ["x", "x"], ["y"], name="cat"), X),
            OpAttributeRequired,
            r"node 'cat' \(Concat\): attribute 'axis' is required",
        ),
        (
            _single(
                helper.make_node("Resize", ["x", "", "s"], ["y"], name="up", mode="bicubic"),
                X,
                13,
                {"s": np.array([1, 1, 2, 2], "float32")},
            ),
            OpAttributeUnImplemented,
            r"node 'up' \(Resize\): attribute mode='bicubic' is not supported; supported: \['nearest', 'linear', 'cubic'\]",
        ),
        (
            _single(
                helper.make_node("Resize", ["x", "", "s"], ["y"], name="up", mode="linear"),
                {"x": ((1, 2, 3, 3), "float32")},
                13,
                {"s": np.array([2, 2], "float32")},
            ),
            OpAttributeInvalid,
            r"Resize scales \[2.0, 2.0\] must hold one value per resized axis \(4\)",
        ),
        (
            _single(helper.make_node("Reshape", ["x", "x"], ["y"], name="rs"), X),
            FrontendError,
            r"node 'rs' \(Reshape\): input 'shape' is computed at run time",
        ),
        (
            _single(helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=4), X),
            OpAttributeInvalid,
            r"node 'sm' \(Softmax\): axis 4 is out of range for a tensor of rank 4",
        ),
        (
            _single(
                helper.make_node("Gather", ["x", "i"], ["y"], name="g", axis=1),
                X,
                13,
                {"i": np.array([2], "int64")},
            ),
            OpAttributeInvalid,
            r"node 'g' \(Gather\): indices \[2\] are out of range for a dim of size 2",
        ),
        (
            make_model(
                [
                    helper.make_node(
                        "BatchNormalization", ["x", "g", "b", "m", "v"], ["y", "rm", "rv"], name="d"
                    )
                ],
                X,
                {"y": "float32"},
                13,
                {k: np.ones(2, "float32") for k in "gbmv"},
            ),
            OpAttributeInvalid,
            r"node 'd' \(BatchNormalization\): outputs \['rm', 'rv'\] are not supported",
        ),
    ],
)
def test_malformed_models_name_the_node_and_what_to_do(model, error, match):
    with pytest.raises(error, match=match):
        from_onnx(model)


def test_missing_onnx_is_a_clear_error():
    code = (
        "import sys; sys.modules['onnx'] = None\n"
        "from minitvm.relax.frontend.onnx import from_onnx\n"
        "from minitvm.error import FrontendError\n"
        "try:\n    from_onnx(object())\nexcept FrontendError as e:\n    print('OK', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "OK from_onnx needs the 'onnx' package; install it with `pip install onnx`" in out.stdout


@pytest.mark.parametrize(
    "names, expected",
    [
        ([".", "123"], ["_", "input_123"]),
        ([".", "_"], ["_", "__1"]),
        (["123", "input_123"], ["input_123", "input_123_1"]),
    ],
)
def test_sanitized_names_are_identifiers_and_distinct(names, expected):
    node = helper.make_node("Add", names, ["y"])
    model = make_model([node], {n: ((2, 2), "float32") for n in names}, {"y": "float32"}, 13)
    assert [p.name_hint for p in from_onnx(model)["main"].params] == expected


def test_flatten_of_a_symbolic_batch_keeps_the_plain_dim():
    # 1 * batch would leave the compiled kernel unable to size its output
    model = make_model(
        [helper.make_node("Flatten", ["x"], ["y"], axis=1)],
        {"x": (("batch", 3, 4), "float32")},
        {"y": "float32"},
        13,
    )
    out = from_onnx(model)["main"].body.body.struct_info
    assert isinstance(out.shape[0], tir.Var) and out.shape[0].name == "batch"
    assert int(out.shape[1]) == 12


def test_an_input_without_shape_must_be_given_one():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        FrontendError, match="input 'x' has no shape in the model; give it in shape_dict"
    ):
        from_onnx(model)
    sinfo = from_onnx(model, shape_dict={"x": (2, 3)})["main"].params[0].struct_info
    assert [int(d) for d in sinfo.shape] == [2, 3]


def test_kept_params_have_identifier_names():
    w = np.ones((3, 3), "float32")
    model = make_model(
        [helper.make_node("MatMul", ["x", "onnx::MatMul_7"], ["y"])],
        {"x": ((2, 3), "float32")},
        {"y": "float32"},
        13,
        {"onnx::MatMul_7": w},
    )
    params = from_onnx(model, keep_params_in_input=True)["main"].params
    assert [p.name_hint for p in params] == ["x", "onnx__MatMul_7"]


def test_range_over_a_static_dim_folds_to_a_constant():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "rf"], ["y"]),
    ]
    inits = {"zero": np.array(0, "int64"), "one": np.array(1, "int64")}
    inputs = {"x": (("batch", 4), "float32")}
    model = make_model(nodes, inputs, {"y": "float32"}, 13, inits)
    mod = from_onnx(model)
    assert "R.full" not in mod.script() and "astype" not in mod.script()
    x = random_inputs({"x": ((3, 4), "float32")})["x"]
    np.testing.assert_allclose(np.asarray(eval_ref.evaluate(mod, x)), _ort(model, {"x": x})[0])


@pytest.mark.parametrize(
    "dims, expected",
    [
        (["A", "B", "A + B"], "A + B"),
        (["A", "B", "A / B"], "A // B"),
        (["n", "2*n"], "T.int64(2) * n"),
        (["n", "seq-len"], "seq_len"),  # no dims "seq" and "len": one name, not a difference
    ],
)
def test_dim_params_may_be_arithmetic_over_other_dims(dims, expected):
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    sinfo = from_onnx(model)["main"].params[0].struct_info
    assert expected in str(sinfo)
    sizes = {"A": 6, "B": 3, "n": 2}
    shape = [sizes.get(d, {"A + B": 9, "A / B": 2, "2*n": 4}.get(d, 5)) for d in dims]
    x = np.ones(shape, "float32")
    np.testing.assert_array_equal(np.asarray(eval_ref.evaluate(from_onnx(model), x)), x)
