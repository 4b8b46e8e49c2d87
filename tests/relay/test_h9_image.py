"""relay.image.crop_and_resize and relay.image.dilation2d (topi kernels reached through the
Relay op table's call_te rows), built by relay.build and checked against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, topi
from minitvm.contrib import graph_executor
from minitvm.error import OpNotImplemented
from minitvm.relay.testing import run_infer_type
from minitvm.topi.testing import crop_and_resize_python


def _run(out, params, inputs):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(params, out)), "llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for p, value in zip(params, inputs):
        m.set_input(p.name_hint, value)
    m.run()
    return m.get_output(0).numpy()


def _crop(img, boxes, idx, size, layout, method="bilinear", extrapolation=0.0):
    xs = [relay.var(n, shape=a.shape, dtype=str(a.dtype)) for n, a in
          zip(("img", "boxes", "idx"), (img, boxes, idx))]  # fmt: skip
    out = relay.image.crop_and_resize(*xs, size, layout, method, extrapolation)
    return _run(out, xs, (img, boxes, idx))


def test_crop_and_resize_hand_computed_boxes():
    img = np.arange(9, dtype="float32").reshape(1, 3, 3, 1)
    boxes = np.array(
        [[0, 0, 1, 1], [0, 0, 0.5, 0.5], [0.25, 0, 0.25, 0], [1.5, 0, 2, 1]], "float32"
    )
    idx = np.zeros(4, "int32")
    out = _crop(img, boxes, idx, (2, 2), "NHWC", extrapolation=-1.0)[..., 0]
    np.testing.assert_allclose(out[0], [[0, 2], [6, 8]])  # the whole image's corners
    np.testing.assert_allclose(out[1], [[0, 1], [3, 4]])  # its top-left quarter
    np.testing.assert_allclose(out[2], [[1.5, 1.5], [1.5, 1.5]])  # a point box: one sample
    np.testing.assert_allclose(out[3], [[-1, -1], [-1, -1]])  # below the image: extrapolated


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("method", ["bilinear", "nearest_neighbor"])
def test_crop_and_resize_matches_numpy(layout, method):
    rng = np.random.default_rng(0)
    shape = (3, 13, 11, 2) if layout == "NHWC" else (3, 2, 13, 11)
    img = rng.uniform(size=shape).astype("float32")
    boxes = rng.uniform(-0.2, 1.2, size=(5, 4)).astype("float32")
    idx = rng.integers(0, 3, 5).astype("int32")
    out = _crop(img, boxes, idx, (6, 4), layout, method, 0.25)
    ref = crop_and_resize_python(img, boxes, idx, (6, 4), layout, method, 0.25)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_crop_and_resize_crop_size_one_samples_box_centre():
    rng = np.random.default_rng(0)
    img = rng.uniform(size=(1, 2, 5, 7)).astype("float32")
    boxes = np.array([[0.0, 0.0, 1.0, 1.0]], "float32")  # centre (2, 3)
    out = _crop(img, boxes, np.zeros(1, "int32"), (1, 1), "NCHW")
    np.testing.assert_allclose(out[0, :, 0, 0], img[0, :, 2, 3], rtol=1e-6)


def test_crop_and_resize_type_and_bad_method():
    img = relay.var("img", shape=(2, 8, 8, 3))
    boxes = relay.var("boxes", shape=(5, 4))
    idx = relay.var("idx", shape=(5,), dtype="int32")
    out = run_infer_type(relay.image.crop_and_resize(img, boxes, idx, (4, 6), "NHWC"))
    assert out.checked_type == relay.TensorType((5, 4, 6, 3), "float32")
    with pytest.raises(OpNotImplemented, match="method 'bicubic'"):
        relay.image.crop_and_resize(img, boxes, idx, (4, 6), "NHWC", "bicubic")


def _dilation2d_numpy(x, k, strides, padding, dilations):
    """NCHW data, (C, KH, KW) kernel; padding (top, left, bottom, right) reads 0."""
    top, left, bottom, right = padding
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    c, kh, kw = k.shape
    (sh, sw), (dh, dw) = strides, dilations
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    out = np.full((x.shape[0], c, oh, ow), -np.inf, x.dtype)
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                     j * dw : j * dw + (ow - 1) * sw + 1 : sw]  # fmt: skip
            out = np.maximum(out, win + k[None, :, i, j, None, None])
    return out


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    "strides,padding,dilations",
    [
        ((1, 1), (0, 0, 0, 0), (1, 1)),
        ((2, 1), (1, 0, 2, 1), (1, 2)),
        ((1, 2), (2, 2, 2, 2), (2, 2)),
    ],
)
def test_dilation2d_matches_numpy(layout, strides, padding, dilations):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 8)).astype("float32")
    k = rng.standard_normal((3, 3, 2)).astype("float32")
    ref = _dilation2d_numpy(x, k, strides, padding, dilations)
    if layout == "NHWC":
        x, k, kernel_layout = x.transpose(0, 2, 3, 1), k.transpose(1, 2, 0), "HWI"
    else:
        kernel_layout = "IHW"
    xv, kv = relay.var("x", shape=x.shape), relay.var("k", shape=k.shape)
    out = relay.image.dilation2d(xv, kv, strides, padding, dilations, layout, kernel_layout)
    got = _run(out, [xv, kv], (x, k))
    if layout == "NHWC":
        got = got.transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def test_dilation2d_type_and_layout_check():
    x, w = relay.var("x", shape=(1, 4, 20, 20)), relay.var("w", shape=(4, 3, 5))
    out = run_infer_type(relay.image.dilation2d(x, w, strides=(2, 1)))
    assert out.checked_type == relay.TensorType((1, 4, 9, 16), "float32")
    with pytest.raises(OpNotImplemented, match="layouts"):
        relay.image.dilation2d(x, w, data_layout="NCHW", kernel_layout="HWI")


def test_topi_dilation2d_rejects_channel_mismatch():
    from minitvm import te
    from minitvm.error import TEError

    with pytest.raises(TEError, match="kernel has 3 channels, data has 4"):
        topi.image.dilation2d_nchw(te.placeholder((1, 4, 8, 8)), te.placeholder((3, 2, 2)), 1, 0, 1)


def test_affine_grid_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    theta = rng.standard_normal((3, 2, 3)).astype("float32")
    v = relay.var("theta", shape=theta.shape)
    out = relay.image.affine_grid(v, (5, 7))
    assert run_infer_type(out).checked_type == relay.TensorType((3, 2, 5, 7), "float32")
    got = _run(out, [v], (theta,))
    ref = torch.nn.functional.affine_grid(torch.tensor(theta), (3, 1, 5, 7), align_corners=True)
    np.testing.assert_allclose(got, ref.numpy().transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        topi.testing.affine_grid_python(theta, (5, 7)), got, rtol=1e-5, atol=1e-6
    )
    with pytest.raises(OpNotImplemented, match="both > 1"):
        relay.image.affine_grid(v, (1, 7))
