"""conv1d (as a conv2d over a height-1 image), conv2d_transpose (NCHW, IOHW kernel),
conv1d_transpose (through conv2d_transpose with H = 1) and conv3d (NCDHW, OIDHW kernel)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..utils import const_int, fmt_shape, prove_equal, simplify
from .conv import conv2d_nchw, conv_out_dim, window_index
from .pad import pad


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
    return _drop_height(out, "T_conv1d")


def _drop_height(out: te.Tensor, name: str) -> te.Tensor:
    """(N, O, 1, W) -> (N, O, W): a 1-d conv computed as a 2-d one over a height-1 image."""
    return te.compute(
        (out.shape[0], out.shape[1], out.shape[3]),
        lambda n, o, x: out[n, o, 0, x],
        name=name,
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


def conv1d_transpose_ncw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int = 1,
    padding: tuple[int, int] = (0, 0),
    out_dtype: str | None = None,
    output_padding: int = 0,
    groups: int = 1,
    dilation: int = 1,
) -> te.Tensor:
    """data (N, C, W), kernel (C, O/groups, K) -> (N, O, (W-1)*s - pads + d*(K-1) + op + 1):
    conv2d_transpose_nchw over a height-1 image (TVM's argument order, then groups, dilation)."""
    out = conv2d_transpose_nchw(
        _unsqueeze(data, 2, "data_hw"),
        _unsqueeze(kernel, 2, "kernel_hw"),
        (1, stride),
        (0, padding[0], 0, padding[1]),
        (0, output_padding),
        (1, dilation),
        groups,
        out_dtype,
    )
    return _drop_height(out, "T_conv1d_transpose")


def conv3d_ncdhw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: tuple[int, int, int],
    padding: tuple[int, ...],
    dilation: tuple[int, int, int],
    groups: int = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """data (N, C, D, H, W) * kernel (O, C/groups, KD, KH, KW) -> (N, O, OD, OH, OW); padding
    is (front, top, left, back, bottom, right)."""
    out_dtype = out_dtype or data.dtype
    if len(data.shape) != 5 or len(kernel.shape) != 5 or len(padding) != 6:
        raise TEError(
            f"topi.nn.conv3d_ncdhw: data {fmt_shape(data.shape)} and kernel "
            f"{fmt_shape(kernel.shape)} must be 5-D and padding {padding} 6 values"
        )
    n, c, *size = data.shape
    o, cg, *ks = kernel.shape
    cc, oc = const_int(c), const_int(o)
    if cc is not None and cc % groups or oc is not None and oc % groups:
        raise TEError(
            f"topi.nn.conv3d_ncdhw: channels in ({c}) and out ({o}) must be divisible by "
            f"groups={groups}"
        )
    if not prove_equal(simplify(c // groups) if cc is None else cc // groups, cg):
        raise TEError(
            f"topi.nn.conv3d_ncdhw: kernel dim 1 ({cg}) must equal in_channels / groups "
            f"({c} / {groups})"
        )
    lo, hi = padding[:3], padding[3:]
    out_sizes = [
        conv_out_dim(size[i], ks[i], lo[i], hi[i], stride[i], dilation[i]) for i in range(3)
    ]
    padded = data if not any(padding) else pad(data, (0, 0, *lo), (0, 0, *hi), name="pad_temp")
    rc = te.reduce_axis((0, cg), "rc")
    taps = [te.reduce_axis((0, k), name) for k, name in zip(ks, ("rz", "ry", "rx"))]
    ocg = o if groups == 1 else (oc // groups if oc is not None else simplify(o // groups))

    def body(b: Any, f: Any, z: Any, y: Any, x: Any):
        pos = (z, y, x)
        ch = rc if groups == 1 else f // ocg * cg + rc
        where = [window_index(pos[i], taps[i], stride[i], dilation[i]) for i in range(3)]
        a = tir_cast(out_dtype, padded[(b, ch, *where)])
        return te.sum(a * tir_cast(out_dtype, kernel[(f, rc, *taps)]), axis=[rc, *taps])

    return te.compute((n, o, *out_sizes), body, name="conv3d_ncdhw", tag="conv3d_ncdhw")
