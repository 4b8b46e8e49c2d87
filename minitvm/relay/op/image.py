"""`relay.image`: resize1d and resize2d (rows onto relax.image.resize2d)."""

from __future__ import annotations

from typing import Any

from ...error import OpNotImplemented
from ...relax import op as rop
from ..expr import Expr
from ._registry import call, register
from .tensor import static_shape


def _resize_attrs(size: Any, roi: Any, layout: str, method: str, mode: str, rounding: str,
                  cubic_alpha: float, cubic_exclude: int, extrapolation: float,
                  out_dtype: Any, op: str) -> dict:  # fmt: skip
    if roi is not None:
        raise OpNotImplemented(f"relay.image.{op}: roi (tf_crop_and_resize) is not supported")
    if method == "cubic":
        raise OpNotImplemented(
            f"relay.image.{op}: method 'cubic' is not supported; use 'linear' or 'nearest_neighbor'"
        )
    size = (size,) if isinstance(size, int) else tuple(int(d) for d in size)
    return {
        "size": size,
        "layout": layout,
        "method": method,
        "coordinate_transformation_mode": mode,
        "rounding_method": rounding or "round",
        "cubic_alpha": float(cubic_alpha),
        "cubic_exclude": int(cubic_exclude),
        "extrapolation_value": float(extrapolation),
        "out_dtype": out_dtype or None,
    }


def _relax_resize2d(x: Any, size: Any, attrs: Any, layout: str) -> Any:
    return rop.image.resize2d(
        x, size, None, layout, attrs.method, attrs.coordinate_transformation_mode,
        attrs.rounding_method, attrs.cubic_alpha, attrs.cubic_exclude,
        attrs.extrapolation_value, attrs.out_dtype,
    )  # fmt: skip


def _resize1d(emit, args, attrs):
    # a 1-d resize is a 2-d one with H = 1: every coordinate mode maps row 0 to row 0
    x = args[0]
    n, a, b = static_shape(x, "image.resize1d")
    (width,) = attrs.size
    layout2d = "NCHW" if attrs.layout == "NCW" else "NHWC"
    x4 = emit(rop.reshape(x, (n, a, 1, b) if layout2d == "NCHW" else (n, 1, a, b)))
    out = emit(_relax_resize2d(x4, (1, width), attrs, layout2d))
    shape = (n, a, width) if layout2d == "NCHW" else (n, width, b)
    return rop.reshape(out, shape)


register(
    "image.resize2d",
    lambda emit, args, attrs: _relax_resize2d(args[0], attrs.size, attrs, attrs.layout),
)
register("image.resize1d", _resize1d)


def resize2d(
    data: Expr,
    size: Any,
    roi: Any = None,
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: Any = None,
) -> Expr:
    """Resize H, W of NCHW/NHWC data to `size` = (h, w) (methods nearest_neighbor, linear)."""
    attrs = _resize_attrs(size, roi, layout, method, coordinate_transformation_mode,
                          rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                          out_dtype, "resize2d")  # fmt: skip
    return call("image.resize2d", (data,), attrs)


def resize1d(
    data: Expr,
    size: Any,
    roi: Any = None,
    layout: str = "NCW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: Any = None,
) -> Expr:
    """Resize W of NCW/NWC data to `size` = (w,) (methods nearest_neighbor, linear)."""
    if layout not in ("NCW", "NWC"):
        raise OpNotImplemented(f"relay.image.resize1d: layout {layout!r}; use 'NCW' or 'NWC'")
    attrs = _resize_attrs(size, roi, layout, method, coordinate_transformation_mode,
                          rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                          out_dtype, "resize1d")  # fmt: skip
    if len(attrs["size"]) != 1:
        raise OpNotImplemented(f"relay.image.resize1d: size {size} must be one dim (w,)")
    return call("image.resize1d", (data,), attrs)


__all__ = ["resize1d", "resize2d"]
