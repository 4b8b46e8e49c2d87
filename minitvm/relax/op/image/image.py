"""`relax.op.image.resize2d`: nearest-neighbour, bilinear and bicubic resize of H and W."""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import DTypeError, ShapeError
from ....ir.dtype import DataType
from ....topi import reference as ref
from ....topi.image import resize as topi_resize
from ....topi.utils import const_int
from ...expr import Call, Expr, ShapeExpr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op


def _infer_resize2d(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    a = call.attrs
    I.require_ndim(call, x, "data", (4,), f" (layout {a['layout']})")
    dtype = a["out_dtype"] or x.dtype
    if a["method"] in ("linear", "cubic"):
        I.require_float(call, x, "data")
    size = I.shape_arg(call, 1, "size")
    if x.shape is None or size is None:
        return TensorStructInfo(None, dtype, 4)
    shape = list(x.shape)
    shape[a["layout"].index("H")], shape[a["layout"].index("W")] = size
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


def _check_choice(what: str, value: str, choices: Any) -> None:
    if value not in choices:
        raise ShapeError(
            f"relax.image.resize2d: {what} {value!r} is not supported; use one of {tuple(choices)}"
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
    _check_choice("layout", layout, ("NCHW", "NHWC"))
    _check_choice("method", method, topi_resize.METHODS)
    _check_choice(
        "coordinate_transformation_mode",
        coordinate_transformation_mode,
        topi_resize.COORDINATE_MODES,
    )
    _check_choice("rounding_method", rounding_method, topi_resize.ROUNDING_METHODS)
    if not isinstance(size, Expr):
        dims = [size] if isinstance(size, int) or not hasattr(size, "__len__") else list(size)
        if len(dims) == 1:
            dims = dims * 2
        if len(dims) != 2:
            raise ShapeError(f"relax.image.resize2d: size {dims} must be one or two dims (h, w)")
        for d in dims:
            if const_int(d) is not None and const_int(d) <= 0:
                raise ShapeError(f"relax.image.resize2d: size {dims} must be positive")
        size = ShapeExpr(tuple(dims))
    if isinstance(out_dtype, DataType):
        out_dtype = str(out_dtype)
    if out_dtype in ("void", ""):  # TVM prints an unset out_dtype as "void": data's dtype
        out_dtype = None
    elif out_dtype is not None and not isinstance(out_dtype, str):
        raise DTypeError(
            f"relax.image.resize2d: out_dtype must be a dtype string, got {out_dtype!r}"
        )
    attrs = {
        "roi": None,
        "layout": layout,
        "method": method,
        "coordinate_transformation_mode": coordinate_transformation_mode,
        "rounding_method": rounding_method,
        "cubic_alpha": float(cubic_alpha),
        "cubic_exclude": int(cubic_exclude),
        "extrapolation_value": float(extrapolation_value),
        "out_dtype": out_dtype,
    }
    return make_call(_resize2d, (data, size), attrs)
