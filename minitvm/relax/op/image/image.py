"""`relax.op.image.resize2d`: nearest-neighbour and bilinear resize of H and W."""

from __future__ import annotations

from typing import Any

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
    if a["method"] == "linear":
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
        data, size, layout, method, coordinate_transformation_mode, rounding_method, out_dtype
    )


def _np_resize2d(data, size, roi, layout, method, coordinate_transformation_mode,
                 rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype):  # fmt: skip
    return ref.resize2d(
        data, size, layout, method, coordinate_transformation_mode, rounding_method, out_dtype
    )


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
