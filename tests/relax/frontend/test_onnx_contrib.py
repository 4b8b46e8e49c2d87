"""Ops from other domains (com.microsoft contrib ops, ai.onnx.ml, ai.onnx.preview.training)
and Det / TensorScatter / CumSum with a run-time axis, against onnxruntime (which implements
the contrib ops) and ONNX's reference evaluator."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError, OpNotImplemented
from minitvm.relax.frontend.onnx import from_onnx

_TYPES = {
    "float32": TensorProto.FLOAT,
    "int64": TensorProto.INT64,
    "int32": TensorProto.INT32,
}


def _model(node, feeds, n_out=1, opsets=(("", 17),), initializers=()):
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, _TYPES[str(v.dtype)], v.shape) for n, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in node.output[:n_out]],
        [numpy_helper.from_array(v, n) for n, v in dict(initializers).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 8
    return model


def _run(model, feeds):
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(v) for v in feeds.values()])
    return [o.numpy() for o in (out if isinstance(out, list | tuple) else [out])]


def _check(model, feeds, want, rtol=1e-5, atol=1e-5):
    got = _run(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- com.microsoft

_MS = (("", 14), ("com.microsoft", 1))


def _ort(model, feeds):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _check_ort(node, feeds, n_out=1, rtol=1e-5, atol=1e-5):
    model = _model(node, feeds, n_out, _MS)
    _check(model, feeds, _ort(model, feeds), rtol, atol)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_gelu_and_bias_gelu_match_onnxruntime():
    x, b = _rand(4, 8), _rand(8, seed=1)
    _check_ort(helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft"), {"x": x})
    node = helper.make_node("BiasGelu", ["x", "b"], ["y"], domain="com.microsoft")
    _check_ort(node, {"x": x, "b": b})


@pytest.mark.parametrize("n_in, n_out", [(5, 4), (4, 1), (3, 3)])
def test_skip_layer_normalization_matches_onnxruntime(n_in, n_out):
    feeds = {"x": _rand(2, 3, 16), "s": _rand(2, 3, 16, seed=1), "g": _rand(16, seed=2)}
    feeds.update({"b": _rand(16, seed=3), "bias": _rand(16, seed=4)})
    feeds = dict(list(feeds.items())[:n_in])
    outs = ["y", "mean", "inv_std", "sum"][:n_out]
    node = helper.make_node(
        "SkipLayerNormalization", list(feeds), outs, domain="com.microsoft", epsilon=1e-4
    )
    _check_ort(node, feeds, n_out, atol=1e-4)


@pytest.mark.parametrize("segments, mask", [(True, False), (False, False), (True, True)])
def test_embed_layer_normalization_matches_onnxruntime(segments, mask):
    rng = np.random.default_rng(0)
    feeds = {"ids": rng.integers(0, 10, (2, 5)).astype("int32")}
    if segments:
        feeds["seg"] = rng.integers(0, 2, (2, 5)).astype("int32")
    feeds.update({"word": _rand(10, 16), "pos": _rand(7, 16, seed=1)})
    if segments:
        feeds["segemb"] = _rand(2, 16, seed=2)
    feeds.update({"g": _rand(16, seed=3), "b": _rand(16, seed=4)})
    if mask:
        feeds["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
    names = ["ids", "seg" if segments else "", "word", "pos", "segemb" if segments else ""]
    names += ["g", "b"] + (["mask"] if mask else [])
    node = helper.make_node(
        "EmbedLayerNormalization",
        names,
        ["y", "mask_index"],
        domain="com.microsoft",
        epsilon=1e-5,
    )
    _check_ort(node, feeds, 2, atol=1e-4)


@pytest.mark.parametrize(
    "mask_shape, sizes, unidirectional, with_bias",
    [
        ((2, 4), [24, 24, 16], 0, True),  # (batch, seq) 0/1 mask, V narrower than Q/K
        ((2,), [24, 24, 24], 0, True),  # right-padding end positions
        ((2, 4, 4), [24, 24, 24], 0, False),  # (batch, seq, seq) mask
        (None, [24, 24, 24], 1, False),  # causal
    ],
)
def test_attention_matches_onnxruntime(mask_shape, sizes, unidirectional, with_bias):
    rng = np.random.default_rng(0)
    feeds = {"x": _rand(2, 4, 12), "w": _rand(12, sum(sizes), seed=1) * 0.3}
    feeds["bias"] = _rand(sum(sizes), seed=2)
    names = ["x", "w", "bias"]
    if mask_shape == (2,):
        feeds["mask"] = np.array([3, 4], "int32")
    elif mask_shape is not None:
        feeds["mask"] = rng.integers(0, 2, mask_shape).astype("int32")
        feeds["mask"][..., 0] = 1  # a row with every key masked differs in its softmax only
    names.append("mask" if mask_shape is not None else "")
    if with_bias:
        feeds["rel"] = _rand(2, 4, 4, 4, seed=3)
        names += ["", "rel"]
    node = helper.make_node(
        "Attention",
        names,
        ["y"],
        domain="com.microsoft",
        num_heads=4,
        qkv_hidden_sizes=sizes,
        unidirectional=unidirectional,
    )
    _check_ort(node, feeds, atol=1e-4)


def test_unknown_contrib_op_is_refused_by_name():
    x = _rand(2, 3)
    node = helper.make_node("FastGelu", ["x"], ["y"], domain="com.microsoft")
    with pytest.raises(OpNotImplemented, match="com.microsoft::FastGelu"):
        from_onnx(_model(node, {"x": x}, 1, _MS))


def test_attention_with_a_cache_is_refused():
    feeds = {"x": _rand(1, 2, 8), "w": _rand(8, 24), "past": _rand(2, 1, 2, 0, 4)}
    node = helper.make_node(
        "Attention", ["x", "w", "", "", "past"], ["y"], domain="com.microsoft", num_heads=2
    )
    with pytest.raises(MiniTVMError, match="past"):
        from_onnx(_model(node, feeds, 1, _MS))


# ----------------------------------------------------------------------------- ai.onnx.ml


def test_binarizer_and_array_feature_extractor_match_the_reference():
    x = _rand(3, 5)
    model = _model(
        helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.3),
        {"x": x},
        opsets=(("ai.onnx.ml", 1),),
    )
    _check(model, {"x": x}, ReferenceEvaluator(model).run(None, {"x": x}))
    for data in (x, x[0]):
        idx = np.array([4, 0, 2, 2], "int64")
        feeds = {"x": data, "i": idx}
        node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")
        model = _model(node, feeds, opsets=(("ai.onnx.ml", 1),))
        _check(model, feeds, ReferenceEvaluator(model).run(None, feeds))


def test_array_feature_extractor_index_out_of_range_is_refused():
    feeds = {"x": _rand(3, 5), "i": np.array([1, 5], "int64")}
    node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")
    model = _model(node, feeds, opsets=(("ai.onnx.ml", 1),))
    with pytest.raises(MiniTVMError):
        _run(model, feeds)
    known = _model(
        node, {"x": feeds["x"]}, opsets=(("ai.onnx.ml", 1),), initializers={"i": feeds["i"]}
    )
    with pytest.raises(MiniTVMError, match=r"must lie in \[0, 5\)"):
        from_onnx(known)


# ----------------------------------------------------------------------------- training


_TRAIN = (("ai.onnx.preview.training", 1),)


@pytest.mark.parametrize("step", [0, 3])
@pytest.mark.parametrize(
    "op, groups, attrs",
    [
        ("Adagrad", 3, {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.01}),
        (
            "Adam",
            4,
            {
                "alpha": 0.9,
                "beta": 0.8,
                "epsilon": 1e-3,
                "norm_coefficient": 0.01,
                "norm_coefficient_post": 0.02,
            },
        ),
        ("Momentum", 3, {"alpha": 0.9, "beta": 0.5, "mode": "standard", "norm_coefficient": 0.01}),
        ("Momentum", 3, {"alpha": 0.9, "beta": 0.5, "mode": "nesterov", "norm_coefficient": 0.01}),
    ],
)
def test_optimizer_steps_match_the_reference(op, groups, attrs, step):
    feeds = {"r": np.asarray(0.1, "float32"), "t": np.asarray(step, "int64")}
    shapes = [(3,), (2, 2)]
    for g in range(groups):
        for i, shape in enumerate(shapes):
            value = _rand(*shape, seed=10 * g + i)
            feeds[f"v{g}_{i}"] = np.abs(value) if g == groups - 1 else value  # H >= 0
    n_out = (groups - 1) * len(shapes)
    outs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op, list(feeds), outs, domain="ai.onnx.preview.training", **attrs)
    model = _model(node, feeds, n_out, _TRAIN)
    _check(model, feeds, ReferenceEvaluator(model).run(None, feeds), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- default domain


@pytest.mark.parametrize("shape", [(2, 2), (4, 3, 3), (2, 5, 5), (1, 1), (3, 2, 4, 4)])
def test_det_matches_numpy(shape):
    x = _rand(*shape)
    if shape == (2, 5, 5):
        x[0, :, 2] = 0.0  # a singular matrix: a zero column
        x[1, 0, 0] = 0.0  # a zero in the first pivot's place
    model = _model(helper.make_node("Det", ["x"], ["y"]), {"x": x})
    got = _run(model, {"x": x})[0]
    np.testing.assert_allclose(got, np.linalg.det(x.astype("float64")), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "mode, starts", [("linear", [0, 3]), ("circular", [3, 5]), ("linear", None)]
)
def test_tensor_scatter_matches_the_reference(mode, starts):
    feeds = {"cache": _rand(2, 3, 6, 4), "update": _rand(2, 3, 3, 4, seed=1)}
    names = ["cache", "update"]
    if starts is not None:
        feeds["idx"] = np.asarray(starts, "int64")
        names.append("idx")
    node = helper.make_node("TensorScatter", names, ["y"], mode=mode)
    model = _model(node, feeds, opsets=(("", 24),))
    _check(model, feeds, ReferenceEvaluator(model).run(None, feeds))


def test_tensor_scatter_linear_write_past_the_end_is_refused():
    feeds = {"cache": _rand(2, 1, 4, 3), "update": _rand(2, 1, 2, 3), "idx": np.array([0, 3])}
    node = helper.make_node("TensorScatter", ["cache", "update", "idx"], ["y"])
    with pytest.raises(MiniTVMError):
        _run(_model(node, feeds, opsets=(("", 24),)), feeds)


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_cumulative_with_a_run_time_axis(op, axis, dtype):
    x = np.random.default_rng(0).integers(-3, 4, (3, 4)).astype(dtype)
    feeds = {"x": x, "axis": np.asarray(axis, "int64")}
    model = _model(
        helper.make_node(op, ["x", "axis"], ["y"], exclusive=1), feeds, opsets=(("", 26),)
    )
    _check(model, feeds, ReferenceEvaluator(model).run(None, feeds))


@pytest.mark.parametrize("axis", [2, -3])
def test_cumulative_run_time_axis_out_of_range_is_refused(axis):
    feeds = {"x": np.ones((3, 4), "int32"), "axis": np.asarray(axis, "int64")}
    with pytest.raises(MiniTVMError):
        _run(_model(helper.make_node("CumSum", ["x", "axis"], ["y"]), feeds), feeds)


def _symbolic_batch(model):
    """The model with dim 0 of every graph input named "batch"."""
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if dims:
            dims[0].dim_param = "batch"
    return model


def test_contrib_ops_with_a_symbolic_batch_match_onnxruntime():
    ids = np.random.default_rng(0).integers(0, 10, (3, 5)).astype("int32")
    feeds = {"ids": ids, "word": _rand(10, 16), "pos": _rand(5, 16, seed=1)}
    feeds.update({"g": _rand(16, seed=3), "b": _rand(16, seed=4)})
    node = helper.make_node(
        "EmbedLayerNormalization",
        ["ids", "", "word", "pos", "", "g", "b"],
        ["y", "mask_index"],
        domain="com.microsoft",
    )
    model = _model(node, {"ids": ids}, 2, _MS, {k: v for k, v in feeds.items() if k != "ids"})
    model = _symbolic_batch(model)
    _check(model, {"ids": ids}, _ort(model, {"ids": ids}), atol=1e-4)
    feeds = {"x": _rand(3, 4, 8), "mask": np.array([2, 4, 1], "int32")}
    weights = {"w": _rand(8, 24, seed=1) * 0.3}
    node = helper.make_node(
        "Attention", ["x", "w", "", "mask"], ["y"], domain="com.microsoft", num_heads=2
    )
    model = _symbolic_batch(_model(node, feeds, 1, _MS, weights))
    _check(model, feeds, _ort(model, feeds), atol=1e-4)


def test_det_of_matrices_too_large_to_unroll_is_refused():
    graph = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100_000, 100_000])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(MiniTVMError, match=r"Det of 100000 x 100000 .* up to 256 x 256"):
        from_onnx(model)
