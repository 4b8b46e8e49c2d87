"""conv1d (as a conv2d over a height-1 image) and conv2d_transpose (NCHW, IOHW kernel)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir import op as tir_op
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
    -> (N, O, OH, OW).

    Computed as a stride-1 conv2d_nchw (the register-tiled conv kernel) of the input with
    stride - 1 zeros between its pixels and d * (k - 1) - pad of border, by the kernel flipped
    and with its two channel dims swapped per group: s * s more multiplies than the scatter
    form, but each in a vector loop."""
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
    # the dilated, padded input: row y holds input row (y - lo) / s where that is whole
    lo_h, lo_w = dh * (const_int(kh) - 1) - pt, dw * (const_int(kw) - 1) - pl
    span_h, span_w = simplify(oh + dh * (kh - 1)), simplify(ow + dw * (kw - 1))
    zero = make_const(data.dtype, 0)

    def source(pos: Any, lo: int, s: int, size: Any) -> tuple[Any, Any]:
        num = pos - lo
        if s == 1:
            return tir_op.all(num >= 0, num < size), num
        ok = tir_op.all(num >= 0, tir_op.floormod(num, s) == 0, tir_op.floordiv(num, s) < size)
        return ok, tir_op.floordiv(num, s)

    def dilated_body(b: Any, ch: Any, y: Any, x: Any):
        vy, iy = source(y, lo_h, sh, h)
        vx, ix = source(x, lo_w, sw, w)
        return tir_op.if_then_else(tir_op.all(vy, vx), data[b, ch, iy, ix], zero)

    dilated = te.compute(
        (n, c, span_h, span_w), dilated_body, name="data_dilate_pad", tag="injective,pad"
    )

    def flipped_body(o: Any, ci: Any, ky: Any, kx: Any):
        ch = ci if groups == 1 else tir_op.floordiv(o, og) * cg + ci
        oi = o if groups == 1 else tir_op.floormod(o, og)
        return kernel[ch, oi, kh - 1 - ky, kw - 1 - kx]

    flipped = te.compute(
        (simplify(og * groups), cg, kh, kw), flipped_body, name="kernel_flip", tag="injective"
    )
    return conv2d_nchw(dilated, flipped, 1, 0, (dh, dw), groups, out_dtype)
