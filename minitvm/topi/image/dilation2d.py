"""Morphological dilation: out = max over the window of (input + kernel), per channel."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir.expr import PrimExpr
from ...tir.expr import cast as tir_cast
from ..nn.pad import pad


def _pair(value: Any, what: str) -> tuple[int, int]:
    values = (value, value) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(values) != 2:
        raise TEError(f"topi.image.dilation2d: {what} {value!r}; give one or two integers")
    return values  # type: ignore[return-value]


def _pad4(padding: Any) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, (pad_h, pad_w) or four values."""
    values = (padding,) * 4 if isinstance(padding, int) else tuple(int(p) for p in padding)
    if len(values) == 2:
        values = values * 2
    if len(values) != 4:
        raise TEError(f"topi.image.dilation2d: padding {padding!r}; give 1, 2 or 4 integers")
    return values  # type: ignore[return-value]


def _dilation2d(data, kernel, stride, padding, dilations, out_dtype, layout: str) -> te.Tensor:
    """The body of both layouts: NCHW data with a (C, KH, KW) kernel, or NHWC with (KH, KW, C).
    Padding reads 0, as TVM pads."""
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilations, "dilations")
    top, left, bottom, right = _pad4(padding)
    out_dtype = out_dtype or data.dtype
    nchw = layout == "NCHW"
    h_axis, w_axis, c_axis = (2, 3, 1) if nchw else (1, 2, 3)
    kh, kw = (kernel.shape[1], kernel.shape[2]) if nchw else (kernel.shape[0], kernel.shape[1])
    kc = kernel.shape[0] if nchw else kernel.shape[2]
    if int(kc) != int(data.shape[c_axis]):
        raise TEError(
            f"topi.image.dilation2d: kernel has {kc} channels, data has {data.shape[c_axis]}"
        )
    before, after = [0, 0, 0, 0], [0, 0, 0, 0]
    before[h_axis], before[w_axis], after[h_axis], after[w_axis] = top, left, bottom, right
    padded = pad(data, before, after, name="pad_temp")
    out_h = (data.shape[h_axis] + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
    out_w = (data.shape[w_axis] + left + right - ((kw - 1) * dw + 1)) // sw + 1
    out_shape = list(data.shape)
    out_shape[h_axis], out_shape[w_axis] = out_h, out_w
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")

    def body(*idx: Any) -> PrimExpr:
        src = list(idx)
        src[h_axis] = idx[h_axis] * sh + ry * dh
        src[w_axis] = idx[w_axis] * sw + rx * dw
        c = idx[c_axis]
        k = kernel[c, ry, rx] if nchw else kernel[ry, rx, c]
        value = tir_cast(out_dtype, padded[tuple(src)]) + tir_cast(out_dtype, k)
        return te.max(value, axis=[ry, rx])

    return te.compute(tuple(out_shape), body, name="T_dilation2d", tag=f"dilation2d_{layout}")


def dilation2d_nchw(
    input: te.Tensor,
    filter: te.Tensor,
    stride: Any,
    padding: Any,
    dilations: Any,
    out_dtype: str | None = None,
) -> te.Tensor:
    """Dilation of NCHW data by a (C, KH, KW) kernel: out[n, c, y, x] = max over (ry, rx) of
    pad(input)[n, c, y*sh + ry*dh, x*sw + rx*dw] + filter[c, ry, rx]."""
    return _dilation2d(input, filter, stride, padding, dilations, out_dtype, "NCHW")


def dilation2d_nhwc(
    input: te.Tensor,
    filter: te.Tensor,
    stride: Any,
    padding: Any,
    dilations: Any,
    out_dtype: str | None = None,
) -> te.Tensor:
    """dilation2d_nchw for NHWC data and a (KH, KW, C) kernel."""
    return _dilation2d(input, filter, stride, padding, dilations, out_dtype, "NHWC")
