"""2-D convolution in NCHW layout with OIHW kernels (stride, padding, dilation, groups).

`topi.nn.conv2d` is TVM's layout-dispatching entry; `conv2d_nchw` does the work."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir.expr import IntImm
from ...tir.expr import cast as tir_cast
from ..utils import const_int, fmt_shape, prove_equal, simplify
from .pad import pad


def pair(v: Any, what: str) -> tuple[Any, Any]:
    """An int or a pair → a pair."""
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) != 2:
        raise TEError(f"{what}: expected an int or a pair, got {v}")
    return v


def padding4(padding: Any, what: str) -> tuple[Any, Any, Any, Any]:
    """int | (ph, pw) | (top, left, bottom, right) → (top, left, bottom, right)."""
    if isinstance(padding, int):
        return (padding,) * 4
    p = tuple(padding)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    if len(p) == 4:
        return p
    raise TEError(f"{what}: padding must be an int, 2 or 4 values, got {p}")


def conv_out_dim(
    size: Any, k: Any, pad_lo: Any, pad_hi: Any, stride: int, dilation: int, ceil_mode: bool = False
) -> Any:
    """Output size of a sliding window (floor or ceil mode); an IntImm of the input dim's dtype
    when everything is constant."""
    dtype = getattr(size, "dtype", None)
    size, k, pad_lo, pad_hi = (
        v if const_int(v) is None else const_int(v) for v in (size, k, pad_lo, pad_hi)
    )
    span = dilation * (k - 1) + 1
    extra = stride - 1 if ceil_mode else 0
    out = (size + pad_lo + pad_hi - span + extra) // stride + 1
    if ceil_mode and isinstance(out, int) and (out - 1) * stride >= size + pad_lo:
        out -= 1  # the last window would start in the bottom/right padding only (PyTorch's rule)
    if isinstance(out, int):
        return IntImm(dtype, out) if dtype is not None else out
    return simplify(out)


def window_index(out_idx: Any, tap: Any, stride: int, dilation: int) -> Any:
    """Input index of tap `tap` of the window at output `out_idx` (no multiply by 1)."""
    base = out_idx if stride == 1 else out_idx * stride
    return base + (tap if dilation == 1 else tap * dilation)


def conv2d_nchw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """data (N, C, H, W) * kernel (O, C/groups, KH, KW) → (N, O, OH, OW)."""
    out_dtype = out_dtype or data.dtype
    if len(data.shape) != 4 or len(kernel.shape) != 4:
        raise TEError(
            f"topi.nn.conv2d_nchw: data {fmt_shape(data.shape)} and kernel {fmt_shape(kernel.shape)} must both be 4-D"
        )
    sh, sw = pair(stride, "conv2d stride")
    dh, dw = pair(dilation, "conv2d dilation")
    pt, pl, pb, pr = padding4(padding, "conv2d")
    n, c, h, w = data.shape
    o, cg, kh, kw = kernel.shape
    cc, oc = const_int(c), const_int(o)
    if cc is not None and cc % groups or oc is not None and oc % groups:
        raise TEError(
            f"topi.nn.conv2d_nchw: channels in ({c}) and out ({o}) must be divisible by groups={groups}"
        )
    if not prove_equal(simplify(c // groups) if cc is None else cc // groups, cg):
        raise TEError(
            f"topi.nn.conv2d_nchw: kernel dim 1 ({cg}) must equal in_channels / groups ({c} / {groups})"
        )
    oh = conv_out_dim(h, kh, pt, pb, sh, dh)
    ow = conv_out_dim(w, kw, pl, pr, sw, dw)
    padded = (
        data
        if (pt, pl, pb, pr) == (0, 0, 0, 0)
        else pad(data, (0, 0, pt, pl), (0, 0, pb, pr), name="pad_temp")
    )
    rc = te.reduce_axis((0, cg), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    ocg = o if groups == 1 else (oc // groups if oc is not None else simplify(o // groups))

    def body(b: Any, f: Any, y: Any, x: Any):
        ch = rc if groups == 1 else f // ocg * cg + rc
        a = padded[b, ch, window_index(y, ry, sh, dh), window_index(x, rx, sw, dw)]
        return te.sum(
            tir_cast(out_dtype, a) * tir_cast(out_dtype, kernel[f, rc, ry, rx]), axis=[rc, ry, rx]
        )

    return te.compute((n, o, oh, ow), body, name="conv2d_nchw", tag="conv2d_nchw")


def conv2d(
    input: te.Tensor,  # noqa: A002 (TVM's parameter name)
    filter: te.Tensor,  # noqa: A002
    strides: Any,
    padding: Any,
    dilation: Any,
    data_layout: str = "NCHW",
    kernel_layout: str = "",
    out_dtype: str | None = None,
) -> te.Tensor:
    """TVM's `topi.nn.conv2d(input, filter, strides, padding, dilation)`; NCHW data, OIHW kernel."""
    if data_layout != "NCHW" or kernel_layout not in ("", "OIHW"):
        raise TEError(
            f"topi.nn.conv2d: layout {data_layout!r}/{kernel_layout or 'OIHW'!r} is not supported; "
            "use data_layout='NCHW' with an OIHW kernel (transpose the tensors first)"
        )
    return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype=out_dtype)
