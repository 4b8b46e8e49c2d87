"""crop_and_resize: boxes cut from a batch of images, each resampled to one crop size
(TensorFlow's `tf.image.crop_and_resize`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TEError
from ...tir import op as tir_op
from ...tir.expr import PrimExpr, make_const
from ...tir.expr import cast as tir_cast

_METHODS = ("bilinear", "nearest_neighbor")


def _source(start: PrimExpr, end: PrimExpr, out: Any, size: Any, crop: int) -> PrimExpr:
    """Input coordinate of crop position `out`: box [start, end] (fractions of the image)
    spans crop positions 0 .. crop - 1; a crop of 1 samples the box centre."""
    last = tir_cast("float32", size - 1)
    if crop > 1:
        step = (end - start) * last / make_const("float32", crop - 1)
        return start * last + tir_cast("float32", out) * step
    return make_const("float32", 0.5) * (start + end) * last


def crop_and_resize(
    data: te.Tensor,
    boxes: te.Tensor,
    box_indices: te.Tensor,
    crop_size: Sequence[int],
    layout: str = "NCHW",
    method: str = "bilinear",
    extrapolation_value: float | None = None,
    out_dtype: str | None = None,
) -> te.Tensor:
    """Box b (y1, x1, y2, x2 as fractions of H - 1, W - 1) of image box_indices[b], resized to
    `crop_size` (h, w); samples outside the image are `extrapolation_value`.

    >>> out = topi.image.crop_and_resize(img, boxes, idx, (7, 7), "NHWC")  # (B, 7, 7, C)"""
    if layout not in ("NCHW", "NHWC"):
        raise TEError(f"topi.image.crop_and_resize: layout {layout!r}; use 'NCHW' or 'NHWC'")
    if method not in _METHODS:
        raise TEError(f"topi.image.crop_and_resize: method {method!r}; use one of {_METHODS}")
    crop_h, crop_w = (int(c) for c in crop_size)
    out_dtype = out_dtype or data.dtype
    h_axis, w_axis = layout.index("H"), layout.index("W")
    height, width = data.shape[h_axis], data.shape[w_axis]
    channels = data.shape[layout.index("C")]
    num_boxes = boxes.shape[0]
    out_shape = (
        (num_boxes, channels, crop_h, crop_w)
        if layout == "NCHW"
        else (num_boxes, crop_h, crop_w, channels)
    )
    fill = make_const("float32", float(extrapolation_value or 0.0))

    def body(*idx: Any) -> PrimExpr:
        b, y, x = idx[0], idx[h_axis], idx[w_axis]
        c = idx[layout.index("C")]
        in_y = _source(boxes[b, 0], boxes[b, 2], y, height, crop_h)
        in_x = _source(boxes[b, 1], boxes[b, 3], x, width, crop_w)
        image = box_indices[b]

        def read(iy: PrimExpr, ix: PrimExpr) -> PrimExpr:
            iy = tir_op.max(tir_op.min(iy, height - 1), make_const(iy.dtype, 0))
            ix = tir_op.max(tir_op.min(ix, width - 1), make_const(ix.dtype, 0))
            pos = (image, c, iy, ix) if layout == "NCHW" else (image, iy, ix, c)
            return tir_cast("float32", data[pos])

        if method == "nearest_neighbor":  # ties to even, as numpy's round
            value = read(
                tir_cast("int64", tir_op.nearbyint(in_y)), tir_cast("int64", tir_op.nearbyint(in_x))
            )
        else:
            y0, x0 = tir_op.floor(in_y), tir_op.floor(in_x)
            iy0, ix0 = tir_cast("int64", y0), tir_cast("int64", x0)
            iy1, ix1 = tir_cast("int64", tir_op.ceil(in_y)), tir_cast("int64", tir_op.ceil(in_x))
            dy, dx = in_y - y0, in_x - x0
            top = read(iy0, ix0) + (read(iy0, ix1) - read(iy0, ix0)) * dx
            bottom = read(iy1, ix0) + (read(iy1, ix1) - read(iy1, ix0)) * dx
            value = top + (bottom - top) * dy
        zero = make_const("float32", 0)
        inside = tir_op.all(
            in_y >= zero,
            in_y <= tir_cast("float32", height - 1),
            in_x >= zero,
            in_x <= tir_cast("float32", width - 1),
        )
        return tir_cast(out_dtype, tir_op.Select_(inside, value, fill))

    return te.compute(out_shape, body, name="T_crop_and_resize", tag="injective")
