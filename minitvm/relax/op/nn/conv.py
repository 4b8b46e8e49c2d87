"""`relax.op.nn.conv1d` (NCW / OIW) and `relax.op.nn.conv2d_transpose` (NCHW / IOHW or OIHW)."""

from __future__ import annotations

from typing import Any

from .... import topi
from ....error import ShapeError
from ....topi import reference as ref
from ....topi.nn import conv_ext
from ....topi.nn.conv import conv_out_dim, padding4, pair
from ....topi.utils import const_int, fmt_dim, fmt_shape
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op


def _check_channels(
    call: Call, x: TensorStructInfo, w: TensorStructInfo, w_axis: int, per_group: bool
) -> None:
    """Dim `w_axis` of weight must equal data's in_channels, divided by groups when
    `per_group` (a convolution's kernel; a transposed one's holds all in_channels)."""
    groups = call.attrs["groups"]
    c, kernel_in = x.shape[1], w.shape[w_axis]
    seen = f"data {fmt_shape(x.shape)}, weight {fmt_shape(w.shape)}"
    if const_int(c) is not None and const_int(c) % groups:
        raise ShapeError(
            f"{I.op_name(call)}: in_channels ({fmt_dim(c)}) is not divisible by groups={groups} "
            f"({seen})"
        )
    want = I.dim_arith(lambda v: v * groups, kernel_in) if per_group else kernel_in
    if I.provably_differ(c, want):
        raise ShapeError(
            f"{I.op_name(call)}: channels differ: {seen}: dim {w_axis} of weight "
            f"({fmt_dim(kernel_in)}) must equal dim 1 of data ({fmt_dim(c)})"
            + (f" / groups ({groups})" if per_group else "")
        )


def _positive_out(call: Call, dims: dict) -> None:
    for what, d in dims.items():
        if const_int(d) is not None and const_int(d) <= 0:
            raise ShapeError(
                f"{I.op_name(call)}: output {what} is {const_int(d)}; the kernel does not fit "
                "the (padded) input"
            )


def _operands(call: Call, data_layout: str, kernel_layout: str) -> tuple:
    """data and weight of a conv call (ranks of their fixed layouts, channels that agree when
    both shapes are known) and the output dtype."""
    x = I.tensor_arg(call, 0, "data")
    w = I.tensor_arg(call, 1, "weight")
    I.require_ndim(call, x, "data", (len(data_layout),), f" (layout {data_layout})")
    I.require_ndim(call, w, "weight", (len(kernel_layout),), f" (layout {kernel_layout})")
    dtype = call.attrs["out_dtype"] or I.same_dtype(call, [("data", x), ("weight", w)])
    if x.shape is not None and w.shape is not None:
        per_group = "transpose" not in I.op_name(call)
        _check_channels(call, x, w, kernel_layout.index("I"), per_group)
    return x, w, dtype


# ----------------------------------------------------------------------------- conv1d


def _infer_conv1d(call: Call) -> StructInfo:
    x, w, dtype = _operands(call, "NCW", "OIW")
    if x.shape is None or w.shape is None:
        return TensorStructInfo(None, dtype, 3)
    a = call.attrs
    groups = a["groups"]
    if const_int(w.shape[0]) is not None and const_int(w.shape[0]) % groups:
        raise ShapeError(
            f"relax.nn.conv1d: out_channels ({fmt_dim(w.shape[0])}) of weight "
            f"{fmt_shape(w.shape)} is not divisible by groups={groups}"
        )
    (pl, pr), (s,), (d,) = a["padding"], a["strides"], a["dilation"]
    ow = I.dim(conv_out_dim(x.shape[2], w.shape[2], pl, pr, s, d))
    _positive_out(call, {"width": ow})
    return TensorStructInfo((x.shape[0], w.shape[0], ow), dtype)


# the layouts of conv1d and conv2d_transpose are fixed: the kernels take the other attrs


def _te_conv1d(data, weight, strides, padding, dilation, groups, out_dtype, **layouts):
    return conv_ext.conv1d_ncw(data, weight, strides[0], padding, dilation[0], groups, out_dtype)


def _np_conv1d(data, weight, strides, padding, dilation, groups, out_dtype, **layouts):
    out = ref.conv1d_ncw(data, weight, strides[0], padding, dilation[0], groups)
    return out.astype(out_dtype or data.dtype)


_conv1d = register_op(
    "relax.nn.conv1d", _infer_conv1d, _te_conv1d, _np_conv1d, OpPattern.OUT_EWISE_FUSABLE
)


def _one(v: Any, what: str) -> tuple[int]:
    vals = (v,) if isinstance(v, int) else tuple(v)
    if len(vals) != 1:
        raise ShapeError(f"relax.nn.conv1d: {what} must be an int or one value, got {list(vals)}")
    return (int(vals[0]),)


def _check_layouts(what: str, got: tuple, want: tuple) -> None:
    if got != want:
        raise ShapeError(
            f"{what}: layouts (data, kernel, out) {got} are not supported; use {want} "
            "(permute_dims the operands first)"
        )


def conv1d(
    data: Expr,
    weight: Expr,
    strides: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_layout: str = "NCW",
    kernel_layout: str = "OIW",
    out_layout: str | None = None,
    out_dtype: str | None = None,
) -> Call:
    """1-D convolution: data (N, C, W), weight (O, C/groups, K); padding int, (p,) or (left, right)."""
    _check_layouts(
        "relax.nn.conv1d",
        (data_layout, kernel_layout, out_layout or data_layout),
        ("NCW", "OIW", "NCW"),
    )
    pads = (padding,) * 2 if isinstance(padding, int) else tuple(padding)
    pads = pads * 2 if len(pads) == 1 else pads
    if len(pads) != 2 or int(groups) <= 0:
        raise ShapeError(
            f"relax.nn.conv1d: padding {padding} must be an int, (p,) or (left, right), and "
            f"groups ({groups}) positive"
        )
    attrs = {
        "strides": _one(strides, "strides"),
        "padding": tuple(int(p) for p in pads),
        "dilation": _one(dilation, "dilation"),
        "groups": int(groups),
        "data_layout": "NCW",
        "kernel_layout": "OIW",
        "out_layout": None,
        "out_dtype": out_dtype,
    }
    return make_call(_conv1d, (data, weight), attrs)


# ----------------------------------------------------------------------------- conv2d_transpose


def _infer_conv2d_transpose(call: Call) -> StructInfo:
    kernel_layout = call.attrs["kernel_layout"]
    x, w, dtype = _operands(call, "NCHW", kernel_layout)
    if x.shape is None or w.shape is None:
        return TensorStructInfo(None, dtype, 4)
    a = call.attrs
    if const_int(x.shape[1]) is None:
        raise ShapeError(
            f"relax.nn.conv2d_transpose: in_channels of data {fmt_shape(x.shape)} must be static"
        )
    (sh, sw), (dh, dw), (oph, opw) = a["strides"], a["dilation"], a["output_padding"]
    pt, pl, pb, pr = a["padding"]
    oh = I.dim(conv_ext.conv2d_transpose_out_dim(x.shape[2], w.shape[2], sh, pt, pb, dh, oph))
    ow = I.dim(conv_ext.conv2d_transpose_out_dim(x.shape[3], w.shape[3], sw, pl, pr, dw, opw))
    _positive_out(call, {"height": oh, "width": ow})
    o = I.dim_arith(lambda v: v * a["groups"], w.shape[kernel_layout.index("O")])
    return TensorStructInfo((x.shape[0], o, oh, ow), dtype)


# kernel_layout "OIHW" (TVM reads layouts by letter): weight (O/groups, C, KH, KW), the IOHW
# kernel with its first two dims swapped


def _te_conv2d_transpose(data, weight, data_layout, kernel_layout, out_layout, **attrs):
    if kernel_layout == "OIHW":
        weight = topi.transpose(weight, (1, 0, 2, 3))
    return conv_ext.conv2d_transpose_nchw(data, weight, **attrs)


def _np_conv2d_transpose(data, weight, data_layout, kernel_layout, out_layout, out_dtype, **attrs):
    if kernel_layout == "OIHW":
        weight = weight.transpose(1, 0, 2, 3)
    return ref.conv2d_transpose_nchw(data, weight, **attrs).astype(out_dtype or data.dtype)


_conv2d_transpose = register_op(
    "relax.nn.conv2d_transpose",
    _infer_conv2d_transpose,
    _te_conv2d_transpose,
    _np_conv2d_transpose,
    OpPattern.OUT_EWISE_FUSABLE,
)


def conv2d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    output_padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str | None = None,
    out_dtype: str | None = None,
) -> Call:
    """Transposed 2-D convolution (torch's ConvTranspose2d): data (N, C, H, W), weight
    (C, O/groups, KH, KW) -> (N, O, (H-1)*s - pads + d*(KH-1) + output_padding + 1, ...)."""
    _check_layouts(
        "relax.nn.conv2d_transpose",
        (data_layout, kernel_layout, out_layout or data_layout),
        ("NCHW", kernel_layout if kernel_layout in ("IOHW", "OIHW") else "IOHW", "NCHW"),
    )
    attrs = {
        "strides": tuple(int(v) for v in pair(strides, "relax.nn.conv2d_transpose strides")),
        "padding": tuple(int(v) for v in padding4(padding, "relax.nn.conv2d_transpose")),
        "output_padding": tuple(
            int(v) for v in pair(output_padding, "relax.nn.conv2d_transpose output_padding")
        ),
        "dilation": tuple(int(v) for v in pair(dilation, "relax.nn.conv2d_transpose dilation")),
        "groups": int(groups),
        "data_layout": "NCHW",
        "kernel_layout": kernel_layout,
        "out_layout": None,
        "out_dtype": None if out_dtype in ("void", "") else out_dtype,
    }
    if attrs["groups"] <= 0:
        raise ShapeError(f"relax.nn.conv2d_transpose: groups must be positive, got {groups}")
    for (sv, ov), axis in zip(zip(attrs["strides"], attrs["output_padding"]), "HW"):
        if ov >= max(sv, attrs["dilation"]["HW".index(axis)]):
            raise ShapeError(
                f"relax.nn.conv2d_transpose: output_padding {ov} along {axis} must be smaller "
                f"than the stride ({sv}) or the dilation (as torch requires)"
            )
    return make_call(_conv2d_transpose, (data, weight), attrs)
