"""ONNX Resize whose scales, sizes or roi are graph inputs (known only at run time). Each model
is imported and built once, then run on several values and compared with ONNX's reference
evaluator (and ONNX Runtime where the two round a tie differently): the same executable must
follow the values it is given, for every mode, coordinate transform, rounding, cubic option,
antialias, axes, keep_aspect_ratio_policy and tf_crop_and_resize's roi."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError, OpAttributeInvalid, OpAttributeUnImplemented
from minitvm.relax.frontend.onnx import from_onnx

X = np.random.default_rng(0).standard_normal((1, 2, 5, 7)).astype("float32")
_TYPES = {"scales": TensorProto.FLOAT, "roi": TensorProto.FLOAT, "sizes": TensorProto.INT64}


def _model(attrs, given, k, shape=(1, 2, 5, 7)):
    """One Resize node; `given` names the run-time inputs among roi, scales, sizes (k values
    each, 2k for roi); a constant of them is not used."""
    slots = ["x", "roi" if "roi" in given else "", "", ""]
    slots[2 if "scales" in given else 3] = "scales" if "scales" in given else "sizes"
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]
    inputs += [
        helper.make_tensor_value_info(n, _TYPES[n], [2 * k if n == "roi" else k]) for n in given
    ]
    node = helper.make_node("Resize", slots, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


class _Built:
    """A model built once by minitvm, checked against the reference on several feeds."""

    def __init__(self, model):
        self.model = model
        self.names = [i.name for i in model.graph.input]
        self.vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())

    def ours(self, *values):
        return self.vm["main"](*[tvm.nd.array(v) for v in values]).numpy()

    def check(self, *values, tol=1e-4):
        feeds = dict(zip(self.names, values))
        got = self.ours(*values)
        want = ReferenceEvaluator(self.model).run(None, feeds)[0]
        if got.shape == want.shape and np.allclose(got, want, rtol=tol, atol=tol):
            return
        sess = ort.InferenceSession(
            self.model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        other = sess.run(None, feeds)[0]
        assert got.shape == other.shape, (got.shape, want.shape, other.shape)
        np.testing.assert_allclose(got, other, rtol=tol, atol=tol)


def _f32(*v):
    return np.asarray(v, "float32")


def _i64(*v):
    return np.asarray(v, "int64")


SCALES = [_f32(1, 1, 1.7, 0.6), _f32(1, 1, 2.0, 3.0), _f32(1, 1, 0.5, 0.75), _f32(1, 1, 1, 1)]
CASES = [
    ("nearest", "half_pixel", {}),
    ("nearest", "asymmetric", {"nearest_mode": "floor"}),
    ("nearest", "align_corners", {"nearest_mode": "ceil"}),
    ("nearest", "pytorch_half_pixel", {"nearest_mode": "round_prefer_ceil"}),
    ("linear", "half_pixel", {}),
    ("linear", "half_pixel_symmetric", {}),
    ("linear", "pytorch_half_pixel", {"antialias": 1}),
    ("cubic", "align_corners", {}),
    ("cubic", "asymmetric", {"exclude_outside": 1, "cubic_coeff_a": -0.5}),
    ("cubic", "half_pixel", {"antialias": 1}),
]


@pytest.mark.parametrize("mode, coord, extra", CASES)
def test_runtime_scales_follow_each_value_through_one_build(mode, coord, extra):
    attrs = {"mode": mode, "coordinate_transformation_mode": coord, **extra}
    built = _Built(_model(attrs, ["scales"], 4))
    for scales in SCALES:
        built.check(X, scales)


def test_runtime_scales_tf_half_pixel_for_nn_opset11_matches_onnxruntime():
    # opset 11 only (later opsets dropped the mode, and the reference evaluator with them)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"}
    model = _model(attrs, ["scales"], 4)
    model.graph.node[0].input[1] = "roi"
    model.graph.initializer.append(onnx.numpy_helper.from_array(_f32(), "roi"))
    model.opset_import[0].version = 11
    model.ir_version = 6
    built = _Built(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for scales in SCALES:
        want = sess.run(None, {"x": X, "scales": scales})[0]
        np.testing.assert_array_equal(built.ours(X, scales), want)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_runtime_sizes_with_axes_and_aspect_policy(policy):
    attrs = {"mode": "linear", "axes": [3, 2], "keep_aspect_ratio_policy": policy}
    built = _Built(_model(attrs, ["sizes"], 2))
    for sizes in (_i64(3, 9), _i64(14, 4), _i64(7, 5), _i64(1, 1)):
        built.check(X, sizes)


def test_runtime_roi_crops_and_extrapolates():
    attrs = {
        "mode": "linear",
        "coordinate_transformation_mode": "tf_crop_and_resize",
        "axes": [2, 3],
        "extrapolation_value": 10.0,
    }
    built = _Built(_model(attrs, ["roi", "scales"], 2))
    for roi, scales in (
        (_f32(0.4, 0.6, 0.6, 0.8), _f32(0.8, 1.3)),
        (_f32(-0.2, 0.1, 1.3, 0.9), _f32(2.0, 1.0)),
        (_f32(0, 0, 1, 1), _f32(0.2, 0.5)),  # one output row: the centre of the roi
    ):
        built.check(X, roi, scales)


def test_runtime_nearest_keeps_integer_data():
    model = _model({"mode": "nearest"}, ["sizes"], 4)
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT32
    built = _Built(model)
    x = np.arange(70, dtype="int32").reshape(1, 2, 5, 7)
    for sizes in (_i64(1, 2, 9, 3), _i64(1, 1, 2, 14)):
        got = built.ours(x, sizes)
        want = ReferenceEvaluator(model).run(None, {"x": x, "sizes": sizes})[0]
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)


def test_runtime_values_onnx_rejects_are_refused_by_the_vm():
    scaled = _Built(_model({"mode": "linear"}, ["scales"], 4))
    for bad in (_f32(1, 1, 0, 1), _f32(1, 1, -2, 1), _f32(1, 1, 0.1, 1)):  # 0 rows out
        with pytest.raises(MiniTVMError, match="dims must be >= 0"):
            scaled.ours(X, bad)
    sized = _Built(_model({"mode": "nearest"}, ["sizes"], 4))
    with pytest.raises(MiniTVMError, match="dims must be >= 0"):
        sized.ours(X, _i64(1, 2, 0, 3))


def test_runtime_resize_import_refusals_name_the_input():
    with pytest.raises(OpAttributeInvalid, match="'scales' has 3 values; it needs one per"):
        from_onnx(_model({"mode": "linear"}, ["scales"], 3))
    with pytest.raises(OpAttributeUnImplemented, match="symbolic|shape_dict"):
        from_onnx(_model({"mode": "linear"}, ["scales"], 4, shape=(1, 2, "h", 7)))
    bad_roi = _model({"coordinate_transformation_mode": "tf_crop_and_resize"}, ["roi", "sizes"], 4)
    bad_roi.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 6
    with pytest.raises(OpAttributeInvalid, match="'roi' has 6 values; it needs 2 \\* 4"):
        from_onnx(bad_roi)
