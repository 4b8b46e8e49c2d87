"""relay.image.resize3d (and relax.image.resize3d / topi.image.resize3d) against
topi.testing.resize3d_python and torch's trilinear interpolate."""

import itertools

import numpy as np
import pytest

import minitvm
from minitvm import relay, te, topi
from minitvm.relay.testing import run_infer_type

METHODS = ("nearest_neighbor", "linear", "cubic")
MODES = ("asymmetric", "align_corners", "half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn")


def _run(func, x_data):
    return relay.create_executor("graph", target="llvm").evaluate(func)(x_data).numpy()


def _resize3d(x_data, size, layout, method, mode, **kw):
    x = relay.var("x", relay.TensorType(x_data.shape, "float32"))
    z = relay.image.resize3d(x, size, None, layout, method, mode, **kw)
    assert "size=" in z.astext()
    return _run(relay.Function([x], z), x_data)


@pytest.mark.parametrize(
    "layout,method,mode", list(itertools.product(("NCDHW", "NDHWC"), METHODS, MODES))
)
def test_resize3d_vs_reference(layout, method, mode):
    if method != "nearest_neighbor" and mode == "tf_half_pixel_for_nn":
        pytest.skip("tf_half_pixel_for_nn is a nearest-neighbour mode")
    rng = np.random.default_rng(0)
    dshape = (1, 3, 4, 5, 6) if layout == "NCDHW" else (1, 4, 5, 6, 3)
    x_data = rng.uniform(size=dshape).astype("float32")
    scale = (2, 1.5, 0.5)
    spatial = dshape[2:] if layout == "NCDHW" else dshape[1:4]
    size = tuple(round(n * s) for n, s in zip(spatial, scale))
    rounding = "round" if mode == "align_corners" else "floor"
    ref = topi.testing.resize3d_python(x_data, scale, layout, method, mode, rounding)
    out = _resize3d(x_data, size, layout, method, mode, rounding_method=rounding)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_trilinear_vs_torch(align_corners, layout):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x_data = rng.standard_normal((2, 3, 3, 4, 5)).astype("float32")
    size = (5, 7, 3)
    want = torch.nn.functional.interpolate(
        torch.from_numpy(x_data), size=size, mode="trilinear", align_corners=align_corners
    ).numpy()
    mode = "align_corners" if align_corners else "half_pixel"
    if layout == "NDHWC":
        got = _resize3d(x_data.transpose(0, 2, 3, 4, 1).copy(), size, layout, "linear", mode)
        got = got.transpose(0, 4, 1, 2, 3)
    else:
        got = _resize3d(x_data, size, layout, "linear", mode)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize3d_infer_type_symbolic():
    n, c, d, h, w = (te.size_var(v) for v in "ncdhw")
    x = relay.var("x", relay.TensorType((n, c, d, h, w), "int8"))
    td, th, tw = te.var("td"), te.var("th"), te.var("tw")
    ty = run_infer_type(relay.image.resize3d(x, (td, th, tw))).checked_type
    assert [str(s) for s in ty.shape] == ["n", "c", "td", "th", "tw"]
    assert ty.dtype == "int8"
    z = relay.image.resize3d(x, (10, 10, 20), None, "NCDHW", "linear", "align_corners")
    assert run_infer_type(z).checked_type == relay.TensorType((n, c, 10, 10, 20), "int8")


def test_resize3d_bad_layout():
    x = relay.var("x", relay.TensorType((1, 2, 3, 4, 5), "float32"))
    with pytest.raises(minitvm.error.OpNotImplemented):
        relay.image.resize3d(x, (2, 2, 2), layout="NCHW")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_relax_resize3d_numpy_row_matches_kernel(method, layout):
    from minitvm.relax.op import OP_TABLE

    rng = np.random.default_rng(0)
    x_data = rng.standard_normal((1, 2, 3, 4, 5)).astype("float32")
    size = (4, 3, 7)
    attrs = {
        "roi": None,
        "layout": layout,
        "method": method,
        "coordinate_transformation_mode": "half_pixel",
        "rounding_method": "round",
        "cubic_alpha": -0.75,
        "cubic_exclude": 1,
        "extrapolation_value": 0.0,
        "out_dtype": None,
    }
    want = OP_TABLE["relax.image.resize3d"].numpy(x_data, size, **attrs)
    kw = {k: v for k, v in attrs.items() if k not in ("roi", "layout", "method")}
    kw.pop("coordinate_transformation_mode")
    got = _resize3d(x_data, size, layout, method, "half_pixel", **kw)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
