"""topi.testing.resize{1,2,3}d_python against torch.nn.functional.interpolate and ONNX Runtime's
Resize, where their definitions overlap."""

import numpy as np
import pytest

import minitvm.topi.testing  # noqa: F401 (topi.testing)
from minitvm import topi
from minitvm.error import ArgumentError

RNG = np.random.default_rng(3)


def _torch(x, size, mode, align_corners=None):
    import torch

    return torch.nn.functional.interpolate(
        torch.from_numpy(x), size=size, mode=mode, align_corners=align_corners
    ).numpy()


def _ort_resize(x, sizes, **attrs):
    """ONNX Runtime's Resize (note: ONNX's default cubic_coeff_a is -0.75, TVM's -0.5)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [helper.make_tensor("sizes", TensorProto.INT64, [len(sizes)], list(sizes))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x})[0]


# (in spatial shape, scale): up, down and mixed
SHAPES = [((5, 7), (2.0, 1.5)), ((8, 6), (0.5, 0.5)), ((4, 9), (1.75, 0.67))]


def _out(shape, scale):
    return tuple(round(s * f) for s, f in zip(shape, scale))


@pytest.mark.parametrize("shape,scale", SHAPES)
@pytest.mark.parametrize(
    "torch_mode,align,method,mode,kw",
    [
        ("nearest", None, "nearest_neighbor", "asymmetric", {}),
        ("nearest-exact", None, "nearest_neighbor", "half_pixel", {"rounding_method": "round"}),
        ("bilinear", False, "linear", "half_pixel", {}),
        ("bilinear", True, "linear", "align_corners", {}),
        ("bicubic", False, "cubic", "half_pixel", {"cubic_alpha": -0.75}),
        ("bicubic", True, "cubic", "align_corners", {"cubic_alpha": -0.75}),
    ],
)
def test_resize2d_python_matches_torch_interpolate(
    shape, scale, torch_mode, align, method, mode, kw
):
    x = RNG.standard_normal((2, 3, *shape)).astype("float32")
    got = topi.testing.resize2d_python(x, scale, "NCHW", method, mode, **kw)
    expected = _torch(x, _out(shape, scale), torch_mode, align)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_resize2d_python_nhwc_is_the_transposed_nchw():
    x = RNG.standard_normal((1, 5, 6, 3)).astype("float32")
    got = topi.testing.resize2d_python(x, (1.6, 0.5), "NHWC", "linear", "half_pixel")
    expected = _torch(x.transpose(0, 3, 1, 2), (8, 3), "bilinear", False).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "torch_mode,align,method,mode",
    [
        ("linear", False, "linear", "half_pixel"),
        ("nearest", None, "nearest_neighbor", "asymmetric"),
    ],
)
def test_resize1d_python_ncw_and_nwc_match_torch(torch_mode, align, method, mode):
    x = RNG.standard_normal((2, 3, 7)).astype("float32")
    expected = _torch(x, (16,), torch_mode, align)
    got = topi.testing.resize1d_python(x, (16 / 7,), "NCW", method, mode)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    got_nwc = topi.testing.resize1d_python(x.transpose(0, 2, 1), (16 / 7,), "NWC", method, mode)
    np.testing.assert_allclose(got_nwc, expected.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "torch_mode,align,method,mode",
    [
        ("trilinear", False, "linear", "half_pixel"),
        ("trilinear", True, "linear", "align_corners"),
        ("nearest", None, "nearest_neighbor", "asymmetric"),
    ],
)
def test_resize3d_python_matches_torch(torch_mode, align, method, mode):
    x = RNG.standard_normal((1, 2, 3, 4, 5)).astype("float32")
    scale = (2.0, 0.5, 1.4)
    got = topi.testing.resize3d_python(x, scale, "NCDHW", method, mode)
    expected = _torch(x, (6, 2, 7), torch_mode, align)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    got_last = topi.testing.resize3d_python(
        x.transpose(0, 2, 3, 4, 1), scale, "NDHWC", method, mode
    )
    np.testing.assert_allclose(got_last, expected.transpose(0, 2, 3, 4, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "attrs,kw",
    [
        (
            {
                "mode": "cubic",
                "coordinate_transformation_mode": "half_pixel",
                "exclude_outside": 1,
                "cubic_coeff_a": -0.5,
            },
            {"method": "cubic", "cubic_exclude": 1},
        ),
        (  # ONNX's default coefficient
            {"mode": "cubic", "coordinate_transformation_mode": "half_pixel"},
            {"method": "cubic", "cubic_alpha": -0.75},
        ),
        (
            {
                "mode": "cubic",
                "coordinate_transformation_mode": "asymmetric",
                "cubic_coeff_a": -0.6,
            },
            {"method": "cubic", "cubic_alpha": -0.6},
        ),
        (
            {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
            {"method": "linear"},
        ),
        (
            {
                "mode": "nearest",
                "coordinate_transformation_mode": "half_pixel",
                "nearest_mode": "round_prefer_floor",
            },
            {"method": "nearest_neighbor", "rounding_method": "round_prefer_floor"},
        ),
        (
            {
                "mode": "nearest",
                "coordinate_transformation_mode": "align_corners",
                "nearest_mode": "ceil",
            },
            {"method": "nearest_neighbor", "rounding_method": "ceil"},
        ),
        (
            {
                "mode": "nearest",
                "coordinate_transformation_mode": "tf_half_pixel_for_nn",
                "nearest_mode": "floor",
            },
            {"method": "nearest_neighbor", "rounding_method": "floor"},
        ),
    ],
)
@pytest.mark.parametrize("shape,out", [((5, 6), (9, 4)), ((4, 4), (1, 7))])
def test_resize2d_python_matches_onnxruntime_resize(attrs, kw, shape, out):
    x = RNG.standard_normal((1, 2, *shape)).astype("float32")
    mode = attrs["coordinate_transformation_mode"]
    scale = tuple(o / i for o, i in zip(out, shape))
    got = topi.testing.resize2d_python(x, scale, "NCHW", coordinate_transformation_mode=mode, **kw)
    expected = _ort_resize(x, (1, 2, *out), **attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_resize_python_tvm_default_is_align_corners_nearest_rounding_half_up():
    # TVM's defaults: nearest_neighbor + align_corners, which rounds the source position
    x = np.arange(4, dtype="float32").reshape(1, 1, 4)
    got = topi.testing.resize1d_python(x, (1.75,))  # 7 outputs, source x * 3/6 = x / 2
    np.testing.assert_array_equal(got[0, 0], [0, 1, 1, 2, 2, 3, 3])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda x: topi.testing.resize2d_python(x, (2, 2), "NCW"), "layout 'NCW'"),
        (lambda x: topi.testing.resize2d_python(x, (2, 2), method="area"), "method 'area'"),
        (
            lambda x: topi.testing.resize2d_python(x, (2, 2), coordinate_transformation_mode="x"),
            "coordinate_transformation_mode 'x'",
        ),
        (lambda x: topi.testing.resize2d_python(x, (2,)), "scale"),
        (lambda x: topi.testing.resize2d_python(x, (0.01, 1.0)), "empty"),
        (lambda x: topi.testing.resize3d_python(x, (2, 2, 2)), "expected 5 dims"),
    ],
)
def test_resize_python_bad_arguments_name_them(call, match):
    x = np.zeros((1, 1, 4, 4), "float32")
    with pytest.raises(ArgumentError, match=match):
        call(x)
