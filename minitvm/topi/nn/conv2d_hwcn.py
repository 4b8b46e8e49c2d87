"""`topi.nn.conv2d_hwcn`: 2-D convolution with data [H, W, C, N] and kernel [KH, KW, C, O],
giving [OH, OW, O, N] (the layout of TVM's classic tedd and GPU tutorials)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ..utils import const_int, fmt_shape, prove_equal
from .conv import _mul, _pad_hw, _window_args, conv_out_dim, pair, window_index


def conv2d_hwcn(
    Input: te.Tensor,
    Filter: te.Tensor,
    stride: Any,
    padding: Any,
    dilation: Any,
    out_dtype: str | None = None,
) -> te.Tensor:
    """out[y, x, f, b] = sum over (ky, kx, c) of Input[y*sh + ky*dh, x*sw + kx*dw, c, b] *
    Filter[ky, kx, c, f], with zero padding (int, (ph, pw) or (top, left, bottom, right))."""
    out_dtype = out_dtype or Input.dtype
    if len(Input.shape) != 4 or len(Filter.shape) != 4:
        raise TEError(
            f"topi.nn.conv2d_hwcn: data {fmt_shape(Input.shape)} and kernel "
            f"{fmt_shape(Filter.shape)} must both be 4-D (data HWCN, kernel HWIO)"
        )
    h, w, c, n = Input.shape
    kh, kw, kc, o = Filter.shape
    if isinstance(padding, str):
        padding = _named_padding(padding, kh, kw, dilation)
    (sh, sw), pads, (dh, dw) = _window_args(stride, padding, dilation, "conv2d_hwcn")
    if not prove_equal(c, kc):
        raise TEError(
            f"topi.nn.conv2d_hwcn: the kernel's input channels ({kc}, dim 2 of "
            f"{fmt_shape(Filter.shape)}) must equal the data's ({c}, dim 2 of "
            f"{fmt_shape(Input.shape)})"
        )
    oh = conv_out_dim(h, kh, pads[0], pads[2], sh, dh)
    ow = conv_out_dim(w, kw, pads[1], pads[3], sw, dw)
    padded = _pad_hw(Input, 0, pads)
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    rc = te.reduce_axis((0, c), "rc")

    def body(y: Any, x: Any, f: Any, b: Any):
        a = padded[window_index(y, ry, sh, dh), window_index(x, rx, sw, dw), rc, b]
        return te.sum(_mul(a, Filter[ry, rx, rc, f], out_dtype), axis=[ry, rx, rc])

    return te.compute((oh, ow, o, n), body, name="Conv2dOutput", tag="conv2d_hwcn")


def _named_padding(padding: str, kh: Any, kw: Any, dilation: Any) -> tuple:
    """TVM's "VALID" (none) and "SAME" (output size = ceil(input / stride) at stride 1: the
    dilated kernel's extra rows split with the odd one at the top/left) as 4 pads."""
    if padding.upper() == "VALID":
        return (0, 0, 0, 0)
    if padding.upper() != "SAME":
        raise TEError(f"topi.nn.conv2d_hwcn: padding {padding!r}; use 'SAME', 'VALID' or numbers")
    (dh, dw), kh_c, kw_c = pair(dilation, "conv2d_hwcn dilation"), const_int(kh), const_int(kw)
    if kh_c is None or kw_c is None:
        raise TEError("topi.nn.conv2d_hwcn: padding 'SAME' needs a kernel of constant size")
    pad_h, pad_w = (kh_c - 1) * dh, (kw_c - 1) * dw
    top, left = (pad_h + 1) // 2, (pad_w + 1) // 2
    return (top, left, pad_h - top, pad_w - left)


__all__ = ["conv2d_hwcn"]
