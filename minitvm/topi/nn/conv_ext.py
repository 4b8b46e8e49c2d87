"""conv1d (as a conv2d over a height-1 image) and conv2d_transpose (NCHW, IOHW kernel)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..utils import const_int, fmt_shape, simplify
from .conv import conv2d_nchw


def _unsqueeze(t: te.Tensor, axis: int, name: str) -> te.Tensor:
    shape = tuple(t.shape[:axis]) + (1,) + tuple(t.shape[axis:])
    return te.compute(
        shape, lambda *i: t[tuple(i[:axis]) + tuple(i[axis + 1 :])], name=name, tag="injective"
    )


def conv1d_ncw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int = 1,
    padding: tuple[int, int] = (0, 0),
    dilation: int = 1,
    groups: int = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """data (N, C, W) * kernel (O, C/groups, K) -> (N, O, OW): conv2d_nchw with H = 1."""
    out = conv2d_nchw(
        _unsqueeze(data, 2, "data_hw"),
        _unsqueeze(kernel, 2, "kernel_hw"),
        (1, stride),
        (0, padding[0], 0, padding[1]),
        (1, dilation),
        groups,
        out_dtype,
    )
    return te.compute(
        (out.shape[0], out.shape[1], out.shape[3]),
        lambda n, o, x: out[n, o, 0, x],
        name="T_conv1d",
        tag="injective",
    )


def conv2d_transpose_out_dim(
    size: Any, k: Any, stride: int, pad_lo: int, pad_hi: int, dilation: int, output_padding: int
) -> Any:
    """(size - 1) * stride - pads + dilation * (k - 1) + output_padding + 1."""
    return simplify((size - 1) * stride - pad_lo - pad_hi + dilation * (k - 1) + output_padding + 1)


def conv2d_transpose_nchw(
    data: te.Tensor,
    kernel: te.Tensor,
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    output_padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """The transpose (data gradient) of conv2d: data (N, C, H, W), kernel (C, O/groups, KH, KW)
    -> (N, O, OH, OW), each input pixel scattering kernel-weighted values to the output."""
    out_dtype = out_dtype or data.dtype
    n, c, h, w = data.shape
    _, og, kh, kw = kernel.shape
    cc = const_int(c)
    if cc is None or cc % groups:
        raise TEError(
            f"topi.nn.conv2d_transpose_nchw: in_channels of data {fmt_shape(data.shape)} must "
            f"be static and divisible by groups={groups}"
        )
    cg = cc // groups
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = strides, dilation, padding
    oh = conv2d_transpose_out_dim(h, kh, sh, pt, pb, dh, output_padding[0])
    ow = conv2d_transpose_out_dim(w, kw, sw, pl, pr, dw, output_padding[1])
    o = simplify(og * groups)
    rc = te.reduce_axis((0, cg), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    zero = make_const(out_dtype, 0)

    def source(pos: Any, tap: Any, s: int, d: int, lo: int, size: Any) -> tuple[Any, Any]:
        """(valid, input index) of the input pixel whose tap `tap` lands on output `pos`."""
        num = pos + lo - tap * d
        if s == 1:
            return tir_op.all(num >= 0, num < size), num
        ok = tir_op.all(num >= 0, tir_op.floormod(num, s) == 0, tir_op.floordiv(num, s) < size)
        return ok, tir_op.floordiv(num, s)

    def body(b: Any, oc: Any, y: Any, x: Any):
        vy, iy = source(y, ry, sh, dh, pt, h)
        vx, ix = source(x, rx, sw, dw, pl, w)
        ch = rc if groups == 1 else tir_op.floordiv(oc, og) * cg + rc
        oi = oc if groups == 1 else tir_op.floormod(oc, og)
        product = tir_cast(out_dtype, data[b, ch, iy, ix]) * tir_cast(
            out_dtype, kernel[ch, oi, ry, rx]
        )
        return te.sum(tir_op.if_then_else(tir_op.all(vy, vx), product, zero), axis=[rc, ry, rx])

    return te.compute((n, o, oh, ow), body, name="T_conv2d_transpose", tag="conv2d_transpose")
