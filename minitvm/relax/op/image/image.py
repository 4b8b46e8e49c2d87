"""`relax.op.image.resize2d` / `resize3d`: nearest-neighbour, linear and cubic resize of the
spatial dims (H, W or D, H, W)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import DTypeError, ShapeError
from ....ir.dtype import DataType
from ....topi import reference as ref
from ....topi.image import resize as topi_resize
from ....topi.testing.resize_python import interpolation_matrix
from ....topi.utils import const_int
from ...expr import Call, Expr, ShapeExpr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op


def _infer_resize2d(call: Call) -> StructInfo:
    return _infer_resize(call, "HW")


def _infer_resize3d(call: Call) -> StructInfo:
    return _infer_resize(call, "DHW")


def _infer_resize(call: Call, spatial: str) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    a = call.attrs
    rank = len(spatial) + 2
    I.require_ndim(call, x, "data", (rank,), f" (layout {a['layout']})")
    dtype = a["out_dtype"] or x.dtype
    # resize2d keeps its float-only check; resize3d types integer data as TVM does (the
    # kernel interpolates in float32 and casts back, truncating)
    if a["method"] in ("linear", "cubic") and spatial == "HW":
        I.require_float(call, x, "data")
    size = I.shape_arg(call, 1, "size")
    if x.shape is None or size is None:
        return TensorStructInfo(None, dtype, rank)
    shape = list(x.shape)
    for d, s in zip(spatial, size):
        shape[a["layout"].index(d)] = s
    return TensorStructInfo(tuple(shape), dtype)


def _te_resize2d(data, size, roi, layout, method, coordinate_transformation_mode,
                 rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype):  # fmt: skip
    return topi_resize.resize2d(
        data, size, layout, method, coordinate_transformation_mode, rounding_method, out_dtype,
        cubic_alpha, cubic_exclude,
    )  # fmt: skip


def _np_resize2d(data, size, roi, layout, method, coordinate_transformation_mode,
                 rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype):  # fmt: skip
    if method == "cubic":
        return _np_bicubic(
            data,
            size,
            layout,
            coordinate_transformation_mode,
            cubic_alpha,
            cubic_exclude,
            out_dtype,
        )
    return ref.resize2d(
        data, size, layout, method, coordinate_transformation_mode, rounding_method, out_dtype
    )


def _np_keys(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _np_bicubic(data, size, layout, mode, alpha, exclude, out_dtype):
    """Bicubic resize in float64: per axis a [out, in] matrix of Keys weights (taps clamped
    into the input, or dropped and renormalised with `exclude`)."""
    x = data if layout == "NCHW" else data.transpose(0, 3, 1, 2)
    fdt = x.dtype if x.dtype.kind == "f" else np.dtype("float32")

    def matrix(n_in: int, n_out: int) -> np.ndarray:
        pos = np.arange(n_out).astype(fdt)
        src = np.asarray(
            ref._COORDINATE_MODES[mode](pos, fdt.type(n_in), fdt.type(n_out)), np.float64
        )
        base = np.floor(src)
        m = np.zeros((n_out, n_in))
        for k in range(-1, 3):
            tap = base + k
            w = _np_keys(src - tap, alpha)
            if exclude:
                w = np.where((tap < 0) | (tap >= n_in), 0.0, w)
            np.add.at(m, (np.arange(n_out), np.clip(tap, 0, n_in - 1).astype(int)), w)
        return m / m.sum(axis=1, keepdims=True) if exclude else m

    _, _, h, w = x.shape
    oh, ow = (int(v) for v in size)
    out = np.einsum("oh,nchw,pw->ncop", matrix(h, oh), x.astype(np.float64), matrix(w, ow))
    out = out if layout == "NCHW" else out.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(out).astype(out_dtype or data.dtype)


_resize2d = register_op(
    "relax.image.resize2d", _infer_resize2d, _te_resize2d, _np_resize2d, OpPattern.INJECTIVE
)


def _te_resize3d(data, size, roi, layout, method, coordinate_transformation_mode,
                 rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype):  # fmt: skip
    return topi_resize.resize3d(
        data, size, layout, method, coordinate_transformation_mode, rounding_method, out_dtype,
        cubic_alpha, cubic_exclude,
    )  # fmt: skip


def _np_resize3d(data, size, roi, layout, method, coordinate_transformation_mode,
                 rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype):  # fmt: skip
    """Separable float64 reference: one interpolation matrix per spatial dim."""
    x = data if layout == "NCDHW" else data.transpose(0, 4, 1, 2, 3)
    out = x.astype(np.float64)
    for k, n_out in enumerate(int(v) for v in size):
        mat = interpolation_matrix(
            out.shape[2 + k], n_out, method, coordinate_transformation_mode, rounding_method,
            cubic_alpha, cubic_exclude,
        )  # fmt: skip
        out = np.moveaxis(np.tensordot(out, mat, axes=([2 + k], [1])), -1, 2 + k)
    out = out if layout == "NCDHW" else out.transpose(0, 2, 3, 4, 1)
    return np.ascontiguousarray(out).astype(out_dtype or data.dtype)


_resize3d = register_op(
    "relax.image.resize3d", _infer_resize3d, _te_resize3d, _np_resize3d, OpPattern.INJECTIVE
)


def _check_choice(what: str, value: str, choices: Any, op: str = "resize2d") -> None:
    if value not in choices:
        raise ShapeError(
            f"relax.image.{op}: {what} {value!r} is not supported; use one of {tuple(choices)}"
        )


def resize2d(
    data: Expr,
    size: Any,
    roi: Any = None,  # read only by tf_crop_and_resize, which is not supported
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str | None = None,
) -> Call:
    """Resize H, W of `data` to `size` (TVM's relax signature; NCHW or NHWC).

    method "nearest_neighbor" or "linear"; coordinate_transformation_mode "half_pixel",
    "align_corners", "asymmetric", "pytorch_half_pixel" or "tf_half_pixel_for_nn";
    rounding_method (nearest only) "round" (= "round_prefer_ceil"), "round_prefer_floor",
    "floor", "ceil". torch: nearest = asymmetric + floor, bilinear = half_pixel (or
    align_corners=True)."""
    return _resize_call(
        _resize2d, ("NCHW", "NHWC"), data, size, layout, method, coordinate_transformation_mode,
        rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype,
    )  # fmt: skip


def resize3d(
    data: Expr,
    size: Any,
    roi: Any = None,  # read only by tf_crop_and_resize, which is not supported
    layout: str = "NCDHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str | None = None,
) -> Call:
    """Resize D, H, W of `data` to `size` (NCDHW or NDHWC); the options of resize2d.
    torch's trilinear = "linear" with half_pixel (or align_corners=True)."""
    return _resize_call(
        _resize3d, ("NCDHW", "NDHWC"), data, size, layout, method,
        coordinate_transformation_mode, rounding_method, cubic_alpha, cubic_exclude,
        extrapolation_value, out_dtype,
    )  # fmt: skip


_DIMS = {2: "two dims (h, w)", 3: "three dims (d, h, w)"}


def _resize_call(op, layouts, data, size, layout, method, mode, rounding_method, cubic_alpha,
                 cubic_exclude, extrapolation_value, out_dtype) -> Call:  # fmt: skip
    """The checked call of resize op `op` (resize2d or resize3d) with TVM's attrs."""
    name = op.name.split(".")[-1]
    ndim = len(layouts[0]) - 2
    _check_choice("layout", layout, layouts, name)
    _check_choice("method", method, topi_resize.METHODS, name)
    _check_choice("coordinate_transformation_mode", mode, topi_resize.COORDINATE_MODES, name)
    _check_choice("rounding_method", rounding_method, topi_resize.ROUNDING_METHODS, name)
    if not isinstance(size, Expr):
        dims = [size] if isinstance(size, int) or not hasattr(size, "__len__") else list(size)
        if len(dims) == 1:
            dims = dims * ndim
        if len(dims) != ndim:
            raise ShapeError(f"relax.image.{name}: size {dims} must be one or {_DIMS[ndim]}")
        for d in dims:
            if const_int(d) is not None and const_int(d) <= 0:
                raise ShapeError(f"relax.image.{name}: size {dims} must be positive")
        size = ShapeExpr(tuple(dims))
    if isinstance(out_dtype, DataType):
        out_dtype = str(out_dtype)
    if out_dtype in ("void", ""):  # TVM prints an unset out_dtype as "void": data's dtype
        out_dtype = None
    elif out_dtype is not None and not isinstance(out_dtype, str):
        raise DTypeError(f"relax.image.{name}: out_dtype must be a dtype string, got {out_dtype!r}")
    attrs = {
        "roi": None,
        "layout": layout,
        "method": method,
        "coordinate_transformation_mode": mode,
        "rounding_method": rounding_method,
        "cubic_alpha": float(cubic_alpha),
        "cubic_exclude": int(cubic_exclude),
        "extrapolation_value": float(extrapolation_value),
        "out_dtype": out_dtype,
    }
    return make_call(op, (data, size), attrs)
