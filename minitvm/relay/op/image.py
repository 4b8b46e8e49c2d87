"""`relay.image`: resize1d, resize2d and resize3d (rows onto relax.image.resize2d/3d), and
crop_and_resize and dilation2d (rows onto their topi kernels)."""

from __future__ import annotations

from typing import Any

from ... import topi
from ...error import OpNotImplemented
from ...relax import op as rop
from ...tir.expr import PrimExpr
from ..expr import Expr
from ._registry import call, call_te, register
from .tensor import static_shape


def _dim(d: Any) -> Any:
    """An output size: a Python int, or kept as a (symbolic) PrimExpr."""
    return d if isinstance(d, PrimExpr) else int(d)


def _resize_attrs(size: Any, roi: Any, layout: str, method: str, mode: str, rounding: str,
                  cubic_alpha: float, cubic_exclude: int, extrapolation: float,
                  out_dtype: Any, op: str) -> dict:  # fmt: skip
    if roi is not None:
        raise OpNotImplemented(f"relay.image.{op}: roi (tf_crop_and_resize) is not supported")
    if not rounding:  # TVM's default: nearest rounds for align_corners and floors otherwise
        rounding = "round" if mode == "align_corners" else "floor"
    size = (size,) if isinstance(size, int) else tuple(_dim(d) for d in size)
    return {
        "size": size,
        "layout": layout,
        "method": method,
        "coordinate_transformation_mode": mode,
        "rounding_method": rounding,
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


def _relax_resize3d(x: Any, attrs: Any) -> Any:
    return rop.image.resize3d(
        x, attrs.size, None, attrs.layout, attrs.method, attrs.coordinate_transformation_mode,
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
register("image.resize3d", lambda emit, args, attrs: _relax_resize3d(args[0], attrs))


def _check_resize1d(layout: str, size: tuple) -> None:
    if layout not in ("NCW", "NWC"):
        raise OpNotImplemented(f"relay.image.resize1d: layout {layout!r}; use 'NCW' or 'NWC'")
    if len(size) != 1:
        raise OpNotImplemented(f"relay.image.resize1d: size {list(size)} must be one dim (w,)")


def _check_resize3d(layout: str, size: tuple) -> None:
    if layout not in ("NCDHW", "NDHWC"):
        raise OpNotImplemented(f"relay.image.resize3d: layout {layout!r}; use 'NCDHW' or 'NDHWC'")
    if len(size) != 3:
        raise OpNotImplemented(f"relay.image.resize3d: size {list(size)} must be (d, h, w)")


def _resize_op(ndim: int, default_layout: str, check: Any, doc: str) -> Any:
    """`relay.image.resize{ndim}d` (TVM's signature, the same for 1, 2 and 3 spatial dims)."""
    name = f"resize{ndim}d"

    def resize(
        data: Expr,
        size: Any,
        roi: Any = None,
        layout: str = default_layout,
        method: str = "linear",
        coordinate_transformation_mode: str = "half_pixel",
        rounding_method: str = "",
        cubic_alpha: float = -0.5,
        cubic_exclude: int = 0,
        extrapolation_value: float = 0.0,
        out_dtype: Any = None,
    ) -> Expr:
        attrs = _resize_attrs(size, roi, layout, method, coordinate_transformation_mode,
                              rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                              out_dtype, name)  # fmt: skip
        if check is not None:
            check(layout, attrs["size"])
        return call(f"image.{name}", (data,), attrs)

    resize.__name__ = resize.__qualname__ = name
    resize.__doc__ = doc
    return resize


resize2d = _resize_op(
    2,
    "NCHW",
    None,
    "Resize H, W of NCHW/NHWC data to `size` = (h, w) (methods nearest_neighbor, linear).",
)
resize1d = _resize_op(
    1,
    "NCW",
    _check_resize1d,
    "Resize W of NCW/NWC data to `size` = (w,) (methods nearest_neighbor, linear).",
)


resize3d = _resize_op(
    3,
    "NCDHW",
    _check_resize3d,
    "Resize D, H, W of NCDHW/NDHWC data to `size` = (d, h, w) (nearest_neighbor, linear, cubic).",
)


def _crop_and_resize(emit, args, attrs):
    return call_te(
        emit, topi.image.crop_and_resize, *args, attrs.crop_size, attrs.layout, attrs.method,
        attrs.extrapolation_value, attrs.out_dtype, primfunc_name_hint="crop_and_resize",
    )  # fmt: skip


_DILATION_LAYOUTS = {("NCHW", "IHW"): "nchw", ("NHWC", "HWI"): "nhwc"}


def _dilation2d(emit, args, attrs):
    layout = _DILATION_LAYOUTS[(attrs.data_layout, attrs.kernel_layout)]
    compute = getattr(topi.image, f"dilation2d_{layout}")
    return call_te(
        emit, compute, *args, attrs.strides, attrs.padding, attrs.dilations,
        attrs.out_dtype or None, primfunc_name_hint=f"dilation2d_{layout}",
    )  # fmt: skip


register("image.crop_and_resize", _crop_and_resize)
register(
    "image.affine_grid",
    lambda emit, args, attrs: call_te(
        emit, topi.image.affine_grid, args[0], attrs.target_shape, primfunc_name_hint="affine_grid"
    ),
)
register("image.dilation2d", _dilation2d)


def crop_and_resize(
    data: Expr,
    boxes: Expr,
    box_indices: Expr,
    crop_size: Any,
    layout: str,
    method: str = "bilinear",
    extrapolation_value: float = 0,
    out_dtype: Any = None,
) -> Expr:
    """Boxes (y1, x1, y2, x2 as fractions of the image) of images box_indices resized to
    `crop_size` (h, w): TensorFlow's crop_and_resize. Methods bilinear, nearest_neighbor."""
    if layout not in ("NCHW", "NHWC"):
        raise OpNotImplemented(f"relay.image.crop_and_resize: layout {layout!r}; use NCHW or NHWC")
    if method not in ("bilinear", "nearest_neighbor"):
        raise OpNotImplemented(
            f"relay.image.crop_and_resize: method {method!r}; use 'bilinear' or 'nearest_neighbor'"
        )
    size = tuple(int(c) for c in crop_size)
    if len(size) != 2:
        raise OpNotImplemented(f"relay.image.crop_and_resize: crop_size {size} must be (h, w)")
    attrs = {
        "crop_size": size,
        "layout": layout,
        "method": method,
        "extrapolation_value": float(extrapolation_value),
        "out_dtype": out_dtype or None,
    }
    return call("image.crop_and_resize", (data, boxes, box_indices), attrs)


def affine_grid(data: Expr, target_shape: Any = None) -> Expr:
    """The (N, 2, H, W) sampling grid of (N, 2, 3) affine matrices over target (H, W), the
    coordinates spaced evenly over [-1, 1]."""
    shape = () if target_shape is None else tuple(int(d) for d in target_shape)
    if len(shape) != 2 or min(shape) < 2:
        raise OpNotImplemented(
            f"relay.image.affine_grid: target_shape {list(shape)} must be (H, W), both > 1"
        )
    return call("image.affine_grid", (data,), {"target_shape": shape})


def _int_tuple(values: Any) -> tuple[int, ...]:
    return (int(values),) if isinstance(values, int) else tuple(int(v) for v in values)


def dilation2d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilations: Any = (1, 1),
    data_layout: str = "NCHW",
    kernel_layout: str = "IHW",
    out_dtype: str = "",
) -> Expr:
    """Morphological dilation: max over the window of data + weight, per channel. Layouts
    NCHW with an IHW weight or NHWC with HWI; padding (top, left, bottom, right) reads 0."""
    if (data_layout, kernel_layout) not in _DILATION_LAYOUTS:
        raise OpNotImplemented(
            f"relay.image.dilation2d: layouts ({data_layout!r}, {kernel_layout!r}); use "
            "('NCHW', 'IHW') or ('NHWC', 'HWI')"
        )
    strides, dilations = _int_tuple(strides)[:2], _int_tuple(dilations)[:2]  # as TVM reads them
    attrs = {
        "strides": strides,
        "padding": _int_tuple(padding),
        "dilations": dilations,
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        "out_dtype": out_dtype or "",
    }
    return call("image.dilation2d", (data, weight), attrs)


__all__ = ["affine_grid", "crop_and_resize", "dilation2d", "resize1d", "resize2d", "resize3d"]
