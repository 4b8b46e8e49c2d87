"""ONNX Resize through from_onnx against ONNX's reference evaluator and ONNX Runtime: every
mode, coordinate transform and nearest rounding, cubic coefficients, exclude_outside,
antialias, axes, keep_aspect_ratio_policy, tf_crop_and_resize, ranks 3 to 5, non-integer
scales on odd sizes; and the refusals."""

import itertools

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import minitvm as tvm
from minitvm import relax
from minitvm.error import OpAttributeInvalid, OpAttributeUnImplemented
from minitvm.relax.frontend.onnx import from_onnx

ELEM = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "uint8": TensorProto.UINT8}


def resize_model(shape, attrs, scales=None, sizes=None, roi=None, dtype="float32"):
    inits = []
    if roi is not None:
        inits.append(numpy_helper.from_array(np.asarray(roi, np.float32), "roi"))
    if scales is not None:
        inputs = ["x", "roi" if roi is not None else "", "scales"]
        inits.append(numpy_helper.from_array(np.asarray(scales, np.float32), "scales"))
    else:
        inputs = ["x", "roi" if roi is not None else "", "", "sizes"]
        inits.append(numpy_helper.from_array(np.asarray(sizes, np.int64), "sizes"))
    node = helper.make_node("Resize", inputs, ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", ELEM[dtype], shape)],
        [helper.make_tensor_value_info("y", ELEM[dtype], None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def ours(model, x):
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    return vm["main"](tvm.nd.array(x)).numpy()


def close(a, b, tol=1e-4):
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def check(model, x, tol=1e-4):
    """Our output equals the reference evaluator's; where that differs from ONNX Runtime (at
    exact rounding ties the two round float coordinates differently), it equals Runtime's."""
    got = ours(model, x)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    if close(got, want, tol):
        return
    runtime = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    other = runtime.run(None, {"x": x})[0]
    assert close(got, other, tol), (got, want, other)


COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]
SCALES = [(1, 1, 1.7, 0.6), (1, 1, 2.0, 3.0), (1, 1, 0.5, 0.75)]
VARIANTS = {
    "nearest": [{}, {"nearest_mode": "ceil"}, {"nearest_mode": "round_prefer_ceil"},
                {"nearest_mode": "floor"}],
    "linear": [{}, {"antialias": 1}],
    "cubic": [{}, {"exclude_outside": 1, "cubic_coeff_a": -0.5}, {"antialias": 1}],
}  # fmt: skip


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("mode", sorted(VARIANTS))
def test_resize_modes_and_coordinate_transforms(mode, coord):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 5)).astype("float32")
    for scales, extra in itertools.product(SCALES, VARIANTS[mode]):
        attrs = {"mode": mode, "coordinate_transformation_mode": coord, **extra}
        check(resize_model(x.shape, attrs, scales=scales), x)


CASES = [
    ((3, 8, 5), {"mode": "linear"}, {"scales": (1, 1, 1.5)}),
    ((3, 8, 5), {"mode": "cubic"}, {"scales": (1, 0.5, 1.4)}),
    ((4, 9, 7), {"mode": "linear"}, {"scales": (0.5, 1, 1)}),
    ((2, 2, 5, 6, 7), {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     {"scales": (1, 1, 1.6, 0.5, 1.3)}),
    ((2, 2, 5, 6, 7), {"mode": "nearest", "axes": [2, 4]}, {"sizes": (9, 3)}),
    ((2, 2, 5, 6, 7), {"mode": "cubic", "antialias": 1, "axes": [4, 2, 3]}, {"sizes": (2, 3, 3)}),
    ((2, 3, 9, 7), {"mode": "linear", "keep_aspect_ratio_policy": "not_larger", "axes": [2, 3]},
     {"sizes": (5, 5)}),
    ((2, 3, 9, 7), {"mode": "nearest", "keep_aspect_ratio_policy": "not_smaller",
                    "axes": [3, 2]}, {"sizes": (5, 5)}),
    ((2, 3, 9, 7), {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                    "extrapolation_value": 3.0, "axes": [2, 3]},
     {"sizes": (5, 8), "roi": (0.2, -0.3, 1.1, 0.9)}),
    ((2, 3, 9, 7), {"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize"},
     {"scales": (1, 1, 0.8, 1.9), "roi": (0, 0, 0.1, 0.2, 1, 1, 0.7, 0.9)}),
    ((1, 1, 1, 1), {"mode": "cubic"}, {"sizes": (1, 1, 3, 1)}),
]  # fmt: skip


@pytest.mark.parametrize("shape, attrs, inputs", CASES)
def test_resize_ranks_axes_policies_and_crops(shape, attrs, inputs):
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    check(resize_model(shape, attrs, **inputs), x)


def test_resize_float16_linear_and_uint8_nearest_match_onnxruntime():
    rng = np.random.default_rng(2)
    for dtype, attrs in (("float16", {"mode": "linear"}), ("uint8", {"mode": "nearest"})):
        x = (rng.uniform(0, 200, (1, 2, 5, 7))).astype(dtype)
        model = resize_model(x.shape, attrs, scales=(1, 1, 1.6, 0.6), dtype=dtype)
        runtime = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        want = runtime.run(None, {"x": x})[0]
        got = ours(model, x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.astype("float32"), want.astype("float32"), rtol=2e-3)


def test_resize_exact_2d_cases_stay_one_resize2d_call():
    exact = from_onnx(resize_model((1, 2, 4, 6), {"mode": "linear"}, scales=(1, 1, 2.0, 0.5)))
    assert "image.resize2d" in exact.script()
    cubic = from_onnx(resize_model((1, 2, 4, 6), {"mode": "cubic"}, scales=(1, 1, 2.0, 0.5)))
    assert "image.resize2d" in cubic.script() and 'method="cubic"' in cubic.script()
    inexact = from_onnx(resize_model((1, 2, 5, 6), {"mode": "cubic"}, scales=(1, 1, 1.5, 0.5)))
    assert "image.resize2d" not in inexact.script() and "take" in inexact.script()


def test_resize_refusals_name_the_problem():
    shape = (1, 1, 4, 4)
    with pytest.raises(OpAttributeUnImplemented, match=r"mode='bicubic' is not supported"):
        from_onnx(resize_model(shape, {"mode": "bicubic"}, scales=(1, 1, 2, 2)))
    with pytest.raises(OpAttributeInvalid, match=r"antialias=1 applies to linear and cubic"):
        from_onnx(resize_model(shape, {"mode": "nearest", "antialias": 1}, scales=(1, 1, 2, 2)))
    with pytest.raises(OpAttributeInvalid, match=r"must hold one value per resized axis \(4\)"):
        from_onnx(resize_model(shape, {"mode": "linear"}, scales=(2, 2)))
    with pytest.raises(OpAttributeUnImplemented, match=r"mode='linear' of uint8 data"):
        from_onnx(resize_model(shape, {"mode": "linear"}, scales=(1, 1, 1.5, 2), dtype="uint8"))


@pytest.mark.parametrize("size, align", [((11, 9), False), ((4, 3), False), ((3, 8), True)])
def test_relax_resize2d_cubic_matches_torch_bicubic(size, align):
    torch = pytest.importorskip("torch")
    from minitvm.relax import op as R

    x = np.random.default_rng(3).standard_normal((2, 3, 7, 5)).astype("float32")
    xv = relax.Var("x", relax.TensorStructInfo(x.shape, "float32"))
    bb = relax.BlockBuilder()
    mode = "align_corners" if align else "half_pixel"
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(
                R.image.resize2d(
                    xv, size, method="cubic", coordinate_transformation_mode=mode, cubic_alpha=-0.75
                )
            )
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x)).numpy()
    want = torch.nn.functional.interpolate(
        torch.tensor(x), size=size, mode="bicubic", align_corners=align
    ).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
