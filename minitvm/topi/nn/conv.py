"""2-D convolution: NCHW/OIHW (any groups), NHWC with HWIO or OHWI kernels (any groups), and
the blocked NCHW{c}c data with OIHW{i}i{o}o kernels (groups 1) or OIHW1i{c}o (depthwise).

`conv2d_layout` is the one dispatch on layouts (`CONV2D_LAYOUTS` states what is supported);
`topi.nn.conv2d` is TVM's entry onto it. The blocked computes keep their reduction axes in the
order (ic_outer, kh, kw, ic_inner) and pad in a separate stage "data_pad", so the schedule sees
a plain multiply-accumulate with no per-element bounds test."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import ShapeError, TEError
from ...ir.dtype import DataType
from ...tir import op as tir_op
from ...tir.expr import IntImm, make_const
from ...tir.expr import cast as tir_cast
from ..layout import as_layout, layout_transform
from ..utils import const_int, fmt_dim, fmt_shape, prove_equal, simplify
from .conv_backward_rows import FORWARD_ROWS_WIDTH, conv2d_NCHWc_rows
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
    if channels_differ(c, cg, groups):
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

    # symbolic channels that may differ at run time: a mismatch must not read past the data, so
    # each read is guarded and a mismatched call gives NaN (0 for ints), never neighbours' data
    same = None if prove_equal(simplify(cg * groups), c) else (c == cg * groups)

    def body(b: Any, f: Any, y: Any, x: Any):
        ch = rc if groups == 1 else f // ocg * cg + rc
        a = padded[b, ch, window_index(y, ry, sh, dh), window_index(x, rx, sw, dw)]
        if same is not None:
            bad = float("nan") if DataType(data.dtype).is_float else 0
            a = tir_op.if_then_else(same, a, make_const(data.dtype, bad))
        return te.sum(
            tir_cast(out_dtype, a) * tir_cast(out_dtype, kernel[f, rc, ry, rx]), axis=[rc, ry, rx]
        )

    return te.compute((n, o, oh, ow), body, name="conv2d_nchw", tag="conv2d_nchw")


def _pad_hw(data: te.Tensor, h_axis: int, pads: tuple) -> te.Tensor:
    """`data` with H (at `h_axis`) and W (next) padded by (top, left, bottom, right) zeros, as
    its own stage "data_pad" so the conv's body reads without a bounds test."""
    pt, pl, pb, pr = pads
    if (pt, pl, pb, pr) == (0, 0, 0, 0):
        return data
    before, after = [0] * len(data.shape), [0] * len(data.shape)
    before[h_axis : h_axis + 2], after[h_axis : h_axis + 2] = (pt, pl), (pb, pr)
    return pad(data, before, after, name="data_pad")


def _window_args(stride: Any, padding: Any, dilation: Any, what: str) -> tuple:
    return (
        pair(stride, f"{what} stride"),
        padding4(padding, what),
        pair(dilation, f"{what} dilation"),
    )


def _mul(a: Any, b: Any, out_dtype: str) -> Any:
    return tir_cast(out_dtype, a) * tir_cast(out_dtype, b)


def conv2d_NCHWc(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: Any,
    padding: Any,
    dilation: Any,
    layout: str,
    out_layout: str,
    out_dtype: str | None = None,
) -> te.Tensor:
    """data NCHW{c}c [N, C/c, H, W, c] * kernel OIHW{c}i{o}o [O/o, C/c, KH, KW, c, o] →
    NCHW{o}c [N, O/o, OH, OW, o]."""
    out_dtype = out_dtype or data.dtype
    (sh, sw), pads, (dh, dw) = _window_args(stride, padding, dilation, "conv2d_NCHWc")
    if len(data.shape) != 5 or len(kernel.shape) != 6:
        raise TEError(
            f"topi.nn.conv2d_NCHWc: data {fmt_shape(data.shape)} must be 5-D (NCHW{{c}}c) and "
            f"kernel {fmt_shape(kernel.shape)} 6-D (OIHW{{i}}i{{o}}o)"
        )
    n, ic_chunk, h, w, ic_block = data.shape
    oc_chunk, kic_chunk, kh, kw, kic_block, oc_block = kernel.shape
    if not (prove_equal(ic_chunk, kic_chunk) and prove_equal(ic_block, kic_block)):
        raise TEError(
            f"topi.nn.conv2d_NCHWc: data {fmt_shape(data.shape)} ({layout}) and kernel "
            f"{fmt_shape(kernel.shape)} disagree on input channels: kernel dims 1 and 4 must equal "
            "data dims 1 and 4 (the kernel's i block must be the data's c block)"
        )
    _check_block(out_layout, oc_block, "topi.nn.conv2d_NCHWc out_layout")
    oh = conv_out_dim(h, kh, pads[0], pads[2], sh, dh)
    ow = conv_out_dim(w, kw, pads[1], pads[3], sw, dw)
    padded = _pad_hw(data, 2, pads)
    ico = te.reduce_axis((0, ic_chunk), "ic_outer")
    ry = te.reduce_axis((0, kh), "kh")
    rx = te.reduce_axis((0, kw), "kw")
    ici = te.reduce_axis((0, ic_block), "ic_inner")

    def body(n: Any, oc_chunk: Any, oh: Any, ow: Any, oc_block: Any):
        a = padded[n, ico, window_index(oh, ry, sh, dh), window_index(ow, rx, sw, dw), ici]
        wt = kernel[oc_chunk, ico, ry, rx, ici, oc_block]
        return te.sum(_mul(a, wt, out_dtype), axis=[ico, ry, rx, ici])

    return te.compute(
        (n, oc_chunk, oh, ow, oc_block), body, name="conv2d_NCHWc", tag="conv2d_NCHWc"
    )


def depthwise_conv2d_NCHWc(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: Any,
    padding: Any,
    dilation: Any,
    layout: str,
    out_layout: str,
    out_dtype: str | None = None,
) -> te.Tensor:
    """Depthwise: data NCHW{c}c [N, C/c, H, W, c] * kernel OIHW1i{c}o [C/c, 1, KH, KW, 1, c]."""
    out_dtype = out_dtype or data.dtype
    (sh, sw), pads, (dh, dw) = _window_args(stride, padding, dilation, "depthwise_conv2d_NCHWc")
    if len(data.shape) != 5 or len(kernel.shape) != 6:
        raise TEError(
            f"topi.nn.depthwise_conv2d_NCHWc: data {fmt_shape(data.shape)} must be 5-D and kernel "
            f"{fmt_shape(kernel.shape)} 6-D (OIHW1i{{c}}o)"
        )
    n, c_chunk, h, w, c_block = data.shape
    k_chunk, one_i, kh, kw, one_ib, k_block = kernel.shape
    if not (
        prove_equal(c_chunk, k_chunk)
        and prove_equal(c_block, k_block)
        and const_int(one_i) == 1
        and const_int(one_ib) == 1
    ):
        raise TEError(
            f"topi.nn.depthwise_conv2d_NCHWc: kernel {fmt_shape(kernel.shape)} must be "
            f"[C/c, 1, KH, KW, 1, c] for data {fmt_shape(data.shape)} (one filter per channel)"
        )
    _check_block(out_layout, c_block, "topi.nn.depthwise_conv2d_NCHWc out_layout")
    oh = conv_out_dim(h, kh, pads[0], pads[2], sh, dh)
    ow = conv_out_dim(w, kw, pads[1], pads[3], sw, dw)
    padded = _pad_hw(data, 2, pads)
    ry = te.reduce_axis((0, kh), "kh")
    rx = te.reduce_axis((0, kw), "kw")

    def body(n: Any, c_chunk: Any, oh: Any, ow: Any, c_block: Any):
        a = padded[n, c_chunk, window_index(oh, ry, sh, dh), window_index(ow, rx, sw, dw), c_block]
        wt = kernel[c_chunk, 0, ry, rx, 0, c_block]
        return te.sum(_mul(a, wt, out_dtype), axis=[ry, rx])

    return te.compute(
        (n, c_chunk, oh, ow, c_block),
        body,
        name="depthwise_conv2d_NCHWc",
        tag="depthwise_conv2d_NCHWc",
    )


def _check_block(out_layout: str, block: Any, what: str) -> None:
    lay = as_layout(out_layout)
    if lay.primals != ("N", "C", "H", "W") or lay.block("C") is None or lay.ndim != 5:
        raise TEError(f"{what}: {out_layout!r} must be NCHW{{o}}c")
    if not prove_equal(lay.block("C"), block):
        raise TEError(
            f"{what}: {out_layout!r} has block {lay.block('C')} but the kernel's output block is "
            f"{block}; the output is NCHW{block}c"
        )


def conv2d_nhwc(
    Input: te.Tensor,
    Filter: te.Tensor,
    stride: Any,
    padding: Any,
    dilation: Any,
    out_dtype: str | None = None,
    kernel_layout: str = "HWIO",
    groups: int = 1,
) -> te.Tensor:
    """data NHWC * kernel HWIO [KH, KW, C/groups, O] (or OHWI [O, KH, KW, C/groups]) → NHWC."""
    data, kernel = Input, Filter
    out_dtype = out_dtype or data.dtype
    (sh, sw), pads, (dh, dw) = _window_args(stride, padding, dilation, "conv2d_nhwc")
    klay = as_layout(kernel_layout)
    if kernel_layout not in ("HWIO", "OHWI"):
        raise TEError(f"topi.nn.conv2d_nhwc: kernel_layout {kernel_layout!r}; use 'HWIO' or 'OHWI'")
    if len(data.shape) != 4 or len(kernel.shape) != 4:
        raise TEError(
            f"topi.nn.conv2d_nhwc: data {fmt_shape(data.shape)} and kernel "
            f"{fmt_shape(kernel.shape)} must both be 4-D"
        )
    n, h, w, c = data.shape
    o, cg = kernel.shape[klay.index_of("O")], kernel.shape[klay.index_of("I")]
    kh, kw = kernel.shape[klay.index_of("H")], kernel.shape[klay.index_of("W")]
    _check_groups("topi.nn.conv2d_nhwc", c, o, cg, groups)
    oh = conv_out_dim(h, kh, pads[0], pads[2], sh, dh)
    ow = conv_out_dim(w, kw, pads[1], pads[3], sw, dw)
    padded = _pad_hw(data, 1, pads)
    ry = te.reduce_axis((0, kh), "kh")
    rx = te.reduce_axis((0, kw), "kw")
    rc = te.reduce_axis((0, cg), "rc")
    ocg = _per_group(o, groups)

    def body(b: Any, y: Any, x: Any, f: Any):
        ch = rc if groups == 1 else f // ocg * cg + rc
        a = padded[b, window_index(y, ry, sh, dh), window_index(x, rx, sw, dw), ch]
        wt = kernel[tuple(klay.split_index({"O": f, "I": rc, "H": ry, "W": rx}))]
        return te.sum(_mul(a, wt, out_dtype), axis=[ry, rx, rc])

    return te.compute((n, oh, ow, o), body, name="conv2d_nhwc", tag="conv2d_nhwc")


def _per_group(dim: Any, groups: int) -> Any:
    if groups == 1:
        return dim
    c = const_int(dim)
    return c // groups if c is not None else simplify(dim // groups)


def channels_differ(c: Any, cg: Any, groups: int) -> bool:
    """True when in_channels `c` can never equal the kernel's `cg` times `groups`. As TVM, a
    symbolic count is refused only then: data (n, c, h, w) with kernel (o, k, 3, 3) is legal
    (conv2d_nchw guards its reads for a call with c != k at run time)."""
    cc, ccg = const_int(c), const_int(cg)
    if cc is not None and ccg is not None:
        return cc != ccg * groups
    from ...arith import Analyzer

    return bool(Analyzer().can_prove(simplify(c) != simplify(cg * groups)))


def _check_groups(what: str, c: Any, o: Any, cg: Any, groups: int) -> None:
    cc, oc = const_int(c), const_int(o)
    if cc is not None and cc % groups or oc is not None and oc % groups:
        raise TEError(
            f"{what}: channels in ({c}) and out ({o}) must be divisible by groups={groups}"
        )
    if channels_differ(c, cg, groups):
        raise TEError(
            f"{what}: the kernel's input channels ({cg}) must equal in_channels / groups "
            f"({c} / {groups})"
        )


# ----------------------------------------------------------------------------- layout dispatch

_SUPPORTED = (
    "NCHW/OIHW (any groups), NHWC/HWIO and NHWC/OHWI (any groups), NCHW{c}c/OIHW{c}i{o}o "
    "(groups 1), NCHW{c}c/OIHW1i{c}o (depthwise: groups == channels == out channels)"
)


def conv2d_kind(
    data_layout: str, kernel_layout: str, groups: int, channels: Any = None, what: str = "conv2d"
) -> str:
    """Which compute runs a conv2d: 'nchw', 'nhwc', 'NCHWc' or 'depthwise_NCHWc'; ShapeError
    when the layouts are not one of the supported combinations (`channels` None: not known yet,
    the depthwise rule groups == channels is then left to the caller's later check)."""
    d, k = as_layout(data_layout), as_layout(kernel_layout)
    if data_layout == "NCHW" and kernel_layout == "OIHW":
        return "nchw"
    if data_layout == "NHWC" and kernel_layout in ("HWIO", "OHWI"):
        return "nhwc"
    blocked_data = d.primals == ("N", "C", "H", "W") and d.ndim == 5 and d.block("C")
    blocked_kernel = (
        k.primals == ("O", "I", "H", "W")
        and k.ndim == 6
        and k.axes[4:]
        == (
            ("i", k.block("I")),
            ("o", k.block("O")),
        )
    )
    if blocked_data and blocked_kernel:
        if groups == 1 and k.block("I") == d.block("C"):
            return "NCHWc"
        depthwise = k.block("I") == 1 and k.block("O") == d.block("C")
        if depthwise and groups > 1 and (channels is None or prove_equal(channels, groups)):
            return "depthwise_NCHWc"
        if groups == 1:
            raise ShapeError(
                f"{what}: kernel layout {kernel_layout!r} blocks input channels by "
                f"{k.block('I')} but data layout {data_layout!r} by {d.block('C')}; they must "
                f"be equal (use OIHW{d.block('C')}i{k.block('O')}o)"
            )
    raise ShapeError(
        f"{what}: layouts {data_layout}/{kernel_layout} are not supported with groups={groups}"
        f"{'' if channels is None else f' and {fmt_dim(channels)} channels'}; supported: {_SUPPORTED}"
    )


def native_out_layout(kind: str, data_layout: str, kernel_layout: str) -> str:
    """The layout a conv2d compute of `kind` writes."""
    if kind in ("nchw", "nhwc"):
        return data_layout
    return f"NCHW{as_layout(kernel_layout).block('O')}c"


def _rows_form_window(data: te.Tensor, kernel: te.Tensor, *args: Any) -> tuple | None:
    """(strides, pads, dilation, (OH, OW)) as ints when a blocked conv runs as one matmul over
    the batch's output pixels (constant shapes, an output narrower than FORWARD_ROWS_WIDTH: a
    deep layer's 1x1..3x3 images), else None."""
    if not all(const_int(d) is not None for d in (*data.shape, *kernel.shape)):
        return None
    window = [tuple(const_int(v) for v in part) for part in _window_args(*args, "topi.nn.conv2d")]
    if any(v is None for part in window for v in part):
        return None
    (sh, sw), pads, (dh, dw) = window
    oh, ow = (
        const_int(conv_out_dim(data.shape[a], kernel.shape[a], pads[a - 2], pads[a], s, d))
        for a, s, d in ((2, sh, dh), (3, sw, dw))
    )
    if not 0 < ow < FORWARD_ROWS_WIDTH or oh <= 0:
        return None
    return (sh, sw), pads, (dh, dw), (oh, ow)


def conv2d_layout(
    data: te.Tensor,
    kernel: te.Tensor,
    strides: Any,
    padding: Any,
    dilation: Any,
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str | None = None,
    out_dtype: str | None = None,
) -> te.Tensor:
    """conv2d in any supported layout combination (see `conv2d_kind`); an `out_layout` other
    than the compute's own adds a layout transform after it."""
    channels = as_layout(data_layout).logical_dim(data.shape, "C")
    kind = conv2d_kind(data_layout, kernel_layout, groups, channels, "topi.nn.conv2d")
    native = native_out_layout(kind, data_layout, kernel_layout)
    args = (strides, padding, dilation)
    if kind == "nchw":
        out = conv2d_nchw(data, kernel, *args, groups, out_dtype)
    elif kind == "nhwc":
        out = conv2d_nhwc(data, kernel, *args, out_dtype, kernel_layout, groups)
    elif kind == "NCHWc" and _rows_form_window(data, kernel, *args):
        window = _rows_form_window(data, kernel, *args)
        out = conv2d_NCHWc_rows(data, kernel, *window, out_dtype or data.dtype)
    elif kind == "NCHWc":
        out = conv2d_NCHWc(data, kernel, *args, data_layout, native, out_dtype)
    else:
        out = depthwise_conv2d_NCHWc(data, kernel, *args, data_layout, native, out_dtype)
    out_layout = out_layout or native
    return out if out_layout == native else layout_transform(out, native, out_layout)


def conv2d(
    input: te.Tensor,
    filter: te.Tensor,
    strides: Any,
    padding: Any,
    dilation: Any,
    data_layout: str = "NCHW",
    kernel_layout: str = "",
    out_dtype: str | None = None,
) -> te.Tensor:
    """TVM's `topi.nn.conv2d(input, filter, strides, padding, dilation, data_layout)`: NCHW
    (OIHW kernel), NHWC (HWIO kernel) or NCHW{c}c (OIHW{c}i{o}o kernel), groups 1."""
    default_kernel = {"NCHW": "OIHW", "NHWC": "HWIO"}
    if not kernel_layout:
        blocked = as_layout(data_layout).block("C")
        kernel_layout = default_kernel.get(data_layout) or (
            f"OIHW{blocked}i{const_int(filter.shape[-1])}o" if blocked else ""
        )
    try:
        return conv2d_layout(
            input,
            filter,
            strides,
            padding,
            dilation,
            1,
            data_layout,
            kernel_layout,
            None,
            out_dtype,
        )
    except ShapeError as err:
        raise TEError(str(err)) from err
