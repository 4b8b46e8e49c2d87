"""ONNX nn ops through from_onnx against ONNX Runtime and ONNX's reference evaluator: 3-d Conv
and ConvTranspose, MaxUnpool, GlobalLpPool, LpPool with dilations, MaxPool's Indices, LRN,
Col2Im, and the pre-opset-11 versions Unsqueeze-1, Clip-6 and Pad-2."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError
from minitvm.relax.frontend.onnx import from_onnx

_DTYPES = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int64"): TensorProto.INT64}


def _model(op, attrs, inputs, n_out=1, opset=19, consts=()):
    """One-node model: `inputs` maps graph-input names to arrays (their shapes and dtypes);
    `consts` names inputs given as initializers."""
    node = helper.make_node(op, list(inputs), [f"y{i}" for i in range(n_out)], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(k, _DTYPES[v.dtype], v.shape)
            for k, v in inputs.items()
            if k not in consts
        ],
        [onnx.ValueInfoProto(name=f"y{i}") for i in range(n_out)],
        [helper.make_tensor(k, _DTYPES[v.dtype], v.shape, v.flatten()) for k, v in inputs.items()
         if k in consts],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _run(model, feeds):
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(v) for v in feeds.values()])
    return [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]


def _check(model, inputs, consts=(), use_ort=True, use_ref=True, rtol=1e-5, atol=1e-5):
    """Compare with ONNX's reference evaluator (`use_ref`: onnx implements the op) and (when
    installed and `use_ort`) onnxruntime."""
    feeds = {k: v for k, v in inputs.items() if k not in consts}
    got = _run(model, feeds)
    wants = [ReferenceEvaluator(model).run(None, feeds)] if use_ref else []
    if use_ort:
        ort = pytest.importorskip("onnxruntime")
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        wants.append(sess.run(None, feeds))
    for want in wants:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


# ----------------------------------------------------------------------------- Conv 3-d

CONV3D = [
    {},
    {"strides": [2, 1, 2], "pads": [1, 0, 2, 0, 1, 1]},
    {"dilations": [2, 1, 2], "pads": [1, 1, 1, 1, 1, 1]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2, 3]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 2, 3]},
    {"auto_pad": "VALID", "strides": [1, 2, 1]},
    {"group": 2},
]


@pytest.mark.parametrize("attrs", CONV3D)
@pytest.mark.parametrize("bias", [False, True])
def test_conv3d_matches_onnxruntime(attrs, bias):
    groups = attrs.get("group", 1)
    inputs = {"x": _rand(2, 4, 7, 6, 5), "w": _rand(6, 4 // groups, 3, 2, 3, seed=1)}
    if bias:
        inputs["b"] = _rand(6, seed=2)
    _check(_model("Conv", attrs, inputs), inputs, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- pools


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_global_lp_pool_matches_onnxruntime(p, shape):
    x = _rand(*shape)
    got = _check(_model("GlobalLpPool", {"p": p}, {"x": x}), {"x": x}, use_ref=False, rtol=1e-4)
    axes = tuple(range(2, len(shape)))
    want = (np.abs(x.astype("float64")) ** p).sum(axes, keepdims=True) ** (1 / p)
    np.testing.assert_allclose(got[0], want, rtol=1e-4)


LP_DILATED = [
    ({"kernel_shape": [2, 2], "dilations": [2, 2]}, True),
    ({"kernel_shape": [2, 3], "dilations": [2, 3], "pads": [1, 0, 1, 2], "strides": [2, 3]}, True),
    # onnx 1.23's reference sizes VALID windows without their dilation (a 5x7 output)
    ({"kernel_shape": [3, 2], "dilations": [1, 2], "auto_pad": "VALID", "p": 3}, False),
]


@pytest.mark.parametrize("attrs, use_ref", LP_DILATED)
def test_lppool_dilated_matches_onnxruntime(attrs, use_ref):
    inputs = {"x": _rand(1, 2, 7, 8)}
    _check(_model("LpPool", attrs, inputs), inputs, use_ref=use_ref, rtol=1e-4)


@pytest.mark.parametrize(
    "extra, match",
    [({"ceil_mode": 1}, "ceil_mode=1 is not supported"), ({"auto_pad": "SAME_LOWER"}, "auto_pad")],
)
def test_lppool_dilated_windows_the_references_disagree_on_are_refused(extra, match):
    attrs = {"kernel_shape": [2, 3], "dilations": [2, 3], "strides": [2, 3], **extra}
    model = _model("LpPool", attrs, {"x": _rand(1, 1, 7, 8)})
    with pytest.raises(MiniTVMError, match=match):
        from_onnx(model)


@pytest.mark.parametrize(
    "attrs", [{"size": 3}, {"size": 4, "alpha": 0.01, "beta": 0.5, "bias": 2.0}, {"size": 1}]
)
@pytest.mark.parametrize("shape", [(2, 5, 3, 4), (1, 6, 7)])
def test_lrn_matches_onnxruntime(attrs, shape):
    # onnx 1.23's reference evaluator windows LRN over the wrong axis; numpy is the second check
    # and onnxruntime takes odd sizes of 4-d inputs only
    x, size = _rand(*shape), attrs["size"]
    model = _model("LRN", attrs, {"x": x})
    got = _check(model, {"x": x}, use_ort=size % 2 and x.ndim == 4, use_ref=False, rtol=1e-4)
    lo, hi = (size - 1) // 2, size // 2
    squares = np.pad(x.astype("float64") ** 2, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
    window = sum(squares[:, i : i + x.shape[1]] for i in range(size))
    scale = attrs.get("bias", 1.0) + attrs.get("alpha", 1e-4) / size * window
    np.testing.assert_allclose(got[0], x / scale ** attrs.get("beta", 0.75), rtol=1e-5)


# ----------------------------------------------------------------------------- MaxUnpool

UNPOOL = [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [0, 1, 1, 0]},
]


@pytest.mark.parametrize("attrs", UNPOOL)
def test_maxunpool_of_maxpool_indices_matches_onnxruntime(attrs):
    x = _rand(2, 3, 7, 7)  # a size each unpool gives back
    pool = _model("MaxPool", attrs, {"x": x}, n_out=2)
    _, indices = ReferenceEvaluator(pool).run(None, {"x": x})
    inputs = {"y": np.abs(_rand(*indices.shape, seed=3)) + 1, "i": indices}
    _check(_model("MaxUnpool", attrs, inputs), inputs)


def test_maxunpool_repeated_indices_keep_the_last_value():
    inputs = {"x": _rand(2, 2, 3, 3), "i": np.random.default_rng(1).integers(0, 4, (2, 2, 3, 3))}
    got = _check(_model("MaxUnpool", {"kernel_shape": [2, 2]}, inputs), inputs)[0]
    want = np.zeros(2 * 2 * 4 * 4, "float32")
    for j, k in enumerate(inputs["i"].reshape(-1)):
        want[k] = inputs["x"].reshape(-1)[j]
    np.testing.assert_array_equal(got.reshape(-1), want)


@pytest.mark.parametrize("size", [[1, 2, 4, 5], [1, 2, 5, 5]])
def test_maxunpool_output_shape_other_than_the_default_is_refused(size):
    x = _rand(1, 2, 4, 4)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    _, indices = ReferenceEvaluator(_model("MaxPool", attrs, {"x": x}, n_out=2)).run(None, {"x": x})
    inputs = {"y": _rand(*indices.shape), "i": indices, "s": np.array(size, "int64")}
    with pytest.raises(MiniTVMError, match="differs from the default shape"):
        from_onnx(_model("MaxUnpool", attrs, inputs, consts=("s",)))


def test_maxunpool_output_shape_equal_to_the_default_matches_onnxruntime():
    x = _rand(1, 2, 4, 4)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    _, indices = ReferenceEvaluator(_model("MaxPool", attrs, {"x": x}, n_out=2)).run(None, {"x": x})
    inputs = {"y": _rand(*indices.shape), "i": indices, "s": np.array([1, 2, 4, 4], "int64")}
    _check(_model("MaxUnpool", attrs, inputs, consts=("s",)), inputs, consts=("s",))


def test_maxunpool_index_outside_the_output_fails_at_run_time():
    inputs = {"x": _rand(1, 1, 2, 2), "i": np.array([0, 1, 2, 99], "int64").reshape(1, 1, 2, 2)}
    with pytest.raises(Exception, match="scatter_elements"):
        _run(_model("MaxUnpool", {"kernel_shape": [2, 2], "strides": [2, 2]}, inputs), inputs)


# ----------------------------------------------------------------------------- Col2Im

COL2IM = [
    ([5, 5], [1, 5], {}),
    ([5, 6], [2, 3], {"strides": [2, 1]}),
    ([6, 5], [2, 2], {"dilations": [2, 1], "pads": [1, 0, 0, 1]}),
    ([7, 6], [3, 2], {"strides": [2, 3], "pads": [1, 1, 1, 1]}),  # last blocks stop short
]


@pytest.mark.parametrize("image, block, attrs", COL2IM)
def test_col2im_matches_onnxruntime(image, block, attrs):
    nd = len(image)
    s, d = attrs.get("strides", [1] * nd), attrs.get("dilations", [1] * nd)
    p = attrs.get("pads", [0] * 2 * nd)
    blocks = [(image[i] + p[i] + p[i + nd] - d[i] * (block[i] - 1) - 1) // s[i] + 1
              for i in range(nd)]  # fmt: skip
    inputs = {
        "x": _rand(2, 3 * int(np.prod(block)), int(np.prod(blocks))),
        "image": np.array(image, "int64"),
        "block": np.array(block, "int64"),
    }
    consts = ("image", "block")
    _check(_model("Col2Im", attrs, inputs, consts=consts), inputs, consts=consts)


def test_col2im_wrong_column_count_is_refused():
    inputs = {"x": _rand(1, 4, 7), "image": np.array([4, 4]), "block": np.array([2, 2])}
    model = _model("Col2Im", {}, inputs, consts=("image", "block"))
    with pytest.raises(MiniTVMError, match="dim 2 must be 9"):
        from_onnx(model)


def test_col2im_3d_matches_onnx_reference():
    image, block, attrs = [4, 5, 3], [2, 3, 2], {"strides": [2, 1, 1], "pads": [1, 0, 0, 0, 1, 1]}
    blocks = [2, 4, 3]  # (4 + 1 - 2) // 2 + 1, 5 + 1 - 3 + 1, 3 + 1 - 2 + 1
    inputs = {
        "x": _rand(1, 2 * 12, int(np.prod(blocks))),
        "image": np.array(image, "int64"),
        "block": np.array(block, "int64"),
    }
    consts = ("image", "block")  # onnxruntime 1.23 takes 2-d images only
    _check(_model("Col2Im", attrs, inputs, consts=consts), inputs, consts=consts, use_ort=False)


# ----------------------------------------------------------------------------- ConvTranspose 3-d

CONVT3D = [
    {},
    {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1], "output_padding": [1, 0, 0]},
    {"dilations": [1, 2, 1], "group": 2},
    {"strides": [2, 2, 1], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 1, 2], "output_shape": [7, 5, 8]},
]


@pytest.mark.parametrize("attrs", CONVT3D)
def test_convtranspose_3d_matches_onnxruntime(attrs):
    inputs = {"x": _rand(1, 4, 3, 4, 4), "w": _rand(4, 3, 2, 2, 3, seed=1), "b": _rand(6, seed=2)}
    if attrs.get("group", 1) == 1:
        inputs["b"] = inputs["b"][:3]
    # onnx 1.23's reference evaluator fails on grouped 3-d ConvTranspose and on an output_shape
    # past the natural size: onnxruntime alone checks those
    use_ref = attrs.get("group", 1) == 1 and "output_shape" not in attrs
    _check(_model("ConvTranspose", attrs, inputs), inputs, use_ref=use_ref, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- MaxPool Indices

MAXPOOL_INDICES = [
    ({"kernel_shape": [2, 2]}, (2, 3, 5, 6)),
    ({"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}, (1, 2, 7, 6)),
    (
        {"kernel_shape": [2, 3], "dilations": [2, 1], "ceil_mode": 1, "strides": [2, 2]},
        (1, 2, 7, 8),
    ),
    ({"kernel_shape": [3, 3], "storage_order": 1, "strides": [2, 1]}, (2, 2, 6, 5)),
    ({"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, (2, 3, 9)),
    ({"kernel_shape": [2, 2, 2], "pads": [1, 0, 0, 0, 1, 1]}, (1, 2, 3, 4, 5)),
    ({"kernel_shape": [3], "strides": [2], "storage_order": 1}, (1, 2, 9)),
]


def _maxpool_indices(x, out_shape, attrs):
    """numpy oracle: per window the first tap (row-major) holding the largest value, as a flat
    index into x; spatial dims ravelled row-major, or column-major for storage_order 1."""
    nd = x.ndim - 2
    k, s = attrs["kernel_shape"], attrs.get("strides", [1] * nd)
    d, p = attrs.get("dilations", [1] * nd), attrs.get("pads", [0] * 2 * nd)
    order = "CF"[attrs.get("storage_order", 0)]
    want = np.zeros(out_shape, "int64")
    for n, c, *o in np.ndindex(*out_shape):
        best = None
        for tap in np.ndindex(*k):
            pos = [o[i] * s[i] - p[i] + tap[i] * d[i] for i in range(nd)]
            inside = all(0 <= pos[i] < x.shape[2 + i] for i in range(nd))
            if inside and (best is None or x[(n, c, *pos)] > x[(n, c, *best)]):
                best = pos
        spatial = np.ravel_multi_index(best, x.shape[2:], order=order)
        want[(n, c, *o)] = (n * x.shape[1] + c) * int(np.prod(x.shape[2:])) + spatial
    return want


@pytest.mark.parametrize("attrs, shape", MAXPOOL_INDICES)
def test_maxpool_indices_match_onnxruntime(attrs, shape):
    # distinct values: the index of a tie depends on the scan order
    x = np.random.default_rng(0).permutation(int(np.prod(shape))).reshape(shape) - 50.0
    inputs = {"x": x.astype("float32")}
    model = _model("MaxPool", attrs, inputs, n_out=2)
    # onnx 1.23's reference evaluator misplaces indices of 2-d windows: numpy is the second check
    y, indices = _check(model, inputs, use_ref=False)
    np.testing.assert_array_equal(indices, _maxpool_indices(inputs["x"], y.shape, attrs))


def test_maxpool_3d_column_major_indices_are_refused():
    inputs = {"x": _rand(1, 1, 3, 4, 5)}
    model = _model("MaxPool", {"kernel_shape": [2, 2, 2], "storage_order": 1}, inputs, n_out=2)
    with pytest.raises(MiniTVMError, match="storage_order=1 is not supported"):
        from_onnx(model)


def test_maxpool_without_indices_output_ignores_storage_order():
    inputs = {"x": _rand(1, 2, 5, 5)}
    _check(_model("MaxPool", {"kernel_shape": [2, 2], "storage_order": 1}, inputs), inputs)


@pytest.mark.parametrize("image, block, attrs", [*COL2IM[1:], ([4, 5, 3], [2, 3, 2], {})])
def test_col2im_with_run_time_shapes_matches_onnx_reference(image, block, attrs):
    nd = len(image)
    s, d = attrs.get("strides", [1] * nd), attrs.get("dilations", [1] * nd)
    p = attrs.get("pads", [0] * 2 * nd)
    blocks = [(image[i] + p[i] + p[i + nd] - d[i] * (block[i] - 1) - 1) // s[i] + 1
              for i in range(nd)]  # fmt: skip
    inputs = {
        "x": _rand(2, 2 * int(np.prod(block)), int(np.prod(blocks))),
        "image": np.array(image, "int64"),
        "block": np.array(block, "int64"),
    }
    _check(_model("Col2Im", attrs, inputs), inputs, use_ort=nd == 2)


def test_col2im_with_run_time_shapes_refuses_a_mismatched_call():
    inputs = {"x": _rand(1, 4, 9), "image": np.array([4, 4]), "block": np.array([2, 2])}
    model = _model("Col2Im", {}, inputs)
    _run(model, inputs)  # 3 x 3 blocks of 2 x 2 fill a 4 x 4 image
    with pytest.raises(MiniTVMError):
        _run(model, {**inputs, "image": np.array([5, 4])})  # 4 x 3 blocks: not 9 columns


# ----------------------------------------------------------------------------- older versions

OLD_VERSIONS = [
    ("Unsqueeze", {"axes": [0, 3]}),  # Unsqueeze-1: axes attribute
    ("Clip", {"min": -0.5, "max": 0.75}),  # Clip-6: bounds as attributes
    ("Clip", {"max": 0.25}),
    ("Clip", {}),
    ("Pad", {"pads": [0, 1, 2, 1, 0, 0], "value": 1.5}),  # Pad-2: pads/value attributes
    ("Pad", {"pads": [1, 0, 1, 0, 2, 1], "mode": "reflect"}),
    ("Pad", {"pads": [0, 2, 0, 0, 1, 3], "mode": "edge"}),
]


@pytest.mark.parametrize("op, attrs", OLD_VERSIONS)
def test_versions_before_opset_11_match_onnxruntime(op, attrs):
    inputs = {"x": _rand(2, 3, 4)}
    _check(_model(op, attrs, inputs, opset=10), inputs)


def test_pad2_without_pads_is_refused():
    model = _model("Pad", {"mode": "constant"}, {"x": _rand(2, 3)}, opset=10)
    with pytest.raises(MiniTVMError, match="attribute 'pads' is required"):
        from_onnx(model)
