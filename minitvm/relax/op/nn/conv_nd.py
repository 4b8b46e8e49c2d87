"""`relax.op.nn.conv3d`, `conv1d_transpose` and `conv3d_transpose` in any layouts.

Both rules work on logical dims: data (N, C, spatial...), kernel (O, I, spatial...), read
through the call's layouts by letter, as TVM does (a kernel_layout "OIW" for conv1d_transpose
says dim 0 is the per-group outputs). Legalization transforms the operands to the kernels'
native layouts (NCDHW / OIDHW, NCW / IOW, NCDHW / IODHW), runs the kernel, and transforms the result to
out_layout (default: data_layout).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ....error import ShapeError
from ....topi import layout as topi_layout
from ....topi import reference as ref
from ....topi.layout import Layout
from ....topi.nn import conv_ext
from ....topi.nn.conv import conv_out_dim
from ....topi.nn.conv3d_transpose import conv3d_transpose_ncdhw, conv3d_transpose_ncdhw_reference
from ....topi.utils import const_int, fmt_dim, fmt_shape
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op
from .nn import _layout_sinfo


@dataclass(frozen=True)
class _Conv:
    """One convolution op: its native layouts, spatial axes, and whether it is transposed."""

    name: str
    data: str  # native data layout, e.g. "NCDHW"
    kernel: str  # native kernel layout, e.g. "OIDHW" or "IOW"
    transposed: bool

    @property
    def spatial(self) -> str:
        return self.data[2:]


CONV3D = _Conv("relax.nn.conv3d", "NCDHW", "OIDHW", False)
CONV1D_TRANSPOSE = _Conv("relax.nn.conv1d_transpose", "NCW", "IOW", True)
CONV3D_TRANSPOSE = _Conv("relax.nn.conv3d_transpose", "NCDHW", "IODHW", True)
_SPECS: dict[str, _Conv] = {
    spec.name: spec for spec in (CONV3D, CONV1D_TRANSPOSE, CONV3D_TRANSPOSE)
}


def _layouts(spec: _Conv, a: Any) -> tuple[Layout, Layout, Layout]:
    return (
        Layout.parse(a["data_layout"]),
        Layout.parse(a["kernel_layout"]),
        Layout.parse(a["out_layout"] or a["data_layout"]),
    )


def _channels(call: Call, spec: _Conv, c: Any, ki: Any, ko: Any) -> Any:
    """Check data's C against the kernel's I (and groups); the output channel count."""
    groups = call.attrs["groups"]
    name = I.op_name(call)
    per_group = c if spec.transposed else I.dim_arith(lambda v: v // groups, c)
    for what, d in (("in_channels", c), ("out_channels", None if spec.transposed else ko)):
        if d is not None and const_int(d) is not None and const_int(d) % groups:
            raise ShapeError(f"{name}: {what} ({fmt_dim(d)}) is not divisible by groups={groups}")
    gap = const_int(I.dim_arith(lambda a, b: a - b, per_group, ki))
    if gap is not None and gap != 0:  # also symbolic dims that differ by a constant: c vs c - 1
        want = "in_channels" if spec.transposed else f"in_channels / groups ({groups})"
        raise ShapeError(
            f"{name}: channels differ: the kernel's I dim is {fmt_dim(ki)}, data's C dim is "
            f"{fmt_dim(c)}; I must equal {want}"
        )
    return I.dim_arith(lambda v: v * groups, ko) if spec.transposed else ko


def _out_size(spec: _Conv, a: Any, i: int, size: Any, k: Any) -> Any:
    n = len(spec.spatial)
    lo, hi = a["padding"][i], a["padding"][i + n]
    s, d = a["strides"][i], a["dilation"][i]
    if spec.transposed:
        op = a["output_padding"][i]
        return I.dim(conv_ext.conv2d_transpose_out_dim(size, k, s, lo, hi, d, op))
    return I.dim(conv_out_dim(size, k, lo, hi, s, d))


def _infer(call: Call) -> StructInfo:
    spec = _SPECS[call.op.name]
    a = call.attrs
    x = I.tensor_arg(call, 0, "data")
    w = I.tensor_arg(call, 1, "weight")
    dl, kl, ol = _layouts(spec, a)
    _layout_sinfo(call, x, "data", dl)
    _layout_sinfo(call, w, "weight", kl)
    dtype = a["out_dtype"] or I.same_dtype(call, [("data", x), ("weight", w)])
    if x.shape is None or w.shape is None:
        return TensorStructInfo(None, dtype, ol.ndim)
    xd = {p: I.dim(dl.logical_dim(x.shape, p)) for p in spec.data}
    wd = {p: I.dim(kl.logical_dim(w.shape, p)) for p in spec.kernel}
    out = {"N": xd["N"], "C": _channels(call, spec, xd["C"], wd["I"], wd["O"])}
    for i, axis in enumerate(spec.spatial):
        out[axis] = _out_size(spec, a, i, xd[axis], wd[axis])
        if const_int(out[axis]) is not None and const_int(out[axis]) <= 0:
            raise ShapeError(
                f"{I.op_name(call)}: output {axis} is {const_int(out[axis])}; the kernel "
                f"{fmt_shape(w.shape)} does not fit the (padded) input {fmt_shape(x.shape)}"
            )
    shape = ol.shape_of(out, f"{I.op_name(call)} out_layout")
    return TensorStructInfo(tuple(I.dim(d) for d in shape), dtype)


def _legalize(spec: _Conv, transform: Callable, kernel_fn: Callable) -> Callable:
    """The op's TE (or numpy) rule: to native layouts, `kernel_fn`, back to out_layout."""

    def fn(data, weight, data_layout, kernel_layout, out_layout, **attrs):
        x = data if data_layout == spec.data else transform(data, data_layout, spec.data)
        w = (
            weight
            if kernel_layout == spec.kernel
            else transform(weight, kernel_layout, spec.kernel)
        )
        out = kernel_fn(x, w, **attrs)
        dst = out_layout or data_layout
        return out if dst == spec.data else transform(out, spec.data, dst)

    return fn


def _te_conv3d(data, weight, strides, padding, dilation, groups, out_dtype):
    return conv_ext.conv3d_ncdhw(data, weight, strides, padding, dilation, groups, out_dtype)


def _np_conv3d(data, weight, strides, padding, dilation, groups, out_dtype):
    out = ref.conv3d_ncdhw(data, weight, strides, padding, dilation, groups)
    return out.astype(out_dtype or data.dtype)


def _te_conv1d_t(data, weight, strides, padding, output_padding, dilation, groups, out_dtype):
    return conv_ext.conv1d_transpose_ncw(
        data, weight, strides[0], padding, out_dtype, output_padding[0], groups, dilation[0]
    )


def _np_conv1d_t(data, weight, strides, padding, output_padding, dilation, groups, out_dtype):
    out = ref.conv1d_transpose_ncw(
        data, weight, strides[0], padding, output_padding[0], dilation[0], groups
    )
    return out.astype(out_dtype or data.dtype)


def _np_conv3d_t(data, weight, strides, padding, output_padding, dilation, groups, out_dtype):
    out = conv3d_transpose_ncdhw_reference(
        data, weight, strides, padding, output_padding, dilation, groups
    )
    return out.astype(out_dtype or data.dtype)


def _register(spec: _Conv, te_fn: Callable, np_fn: Callable):
    """The op-table row of a convolution computed in its native layouts by te_fn / np_fn."""
    return register_op(
        spec.name,
        _infer,
        _legalize(spec, topi_layout.layout_transform, te_fn),
        _legalize(spec, ref.layout_transform, np_fn),
        OpPattern.OUT_EWISE_FUSABLE,
    )


_conv3d = _register(CONV3D, _te_conv3d, _np_conv3d)
_conv1d_transpose = _register(CONV1D_TRANSPOSE, _te_conv1d_t, _np_conv1d_t)
_conv3d_transpose = _register(CONV3D_TRANSPOSE, conv3d_transpose_ncdhw, _np_conv3d_t)


# ----------------------------------------------------------------------------- builders


def _per_axis(value: Any, n: int, what: str) -> tuple[int, ...]:
    """An int or a sequence of 1 or n ints, as n ints (TVM repeats a single value)."""
    vals = (value,) if isinstance(value, int) else tuple(value)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise ShapeError(f"{what} must be an int, one value or {n} values, got {list(vals)}")
    return tuple(int(v) for v in vals)


def _output_padding(spec: _Conv, value: Any, attrs: dict) -> tuple[int, ...]:
    """A transposed conv's output_padding, one per spatial axis; each must be in
    [0, max(stride, dilation)) along its axis, as torch requires."""
    n = len(attrs["strides"])
    out_pad = _per_axis(value, n, f"{spec.name}: output_padding")

    def shown(v: tuple) -> Any:  # 1-D ops speak of one value
        return v[0] if n == 1 else list(v)

    if any(not 0 <= p < max(s, d) for p, s, d in zip(out_pad, attrs["strides"], attrs["dilation"])):
        raise ShapeError(
            f"{spec.name}: output_padding {shown(out_pad)} must be smaller than the stride "
            f"{shown(attrs['strides'])} or the dilation {shown(attrs['dilation'])} (as torch "
            "requires)"
        )
    return out_pad


def _padding(value: Any, n: int, what: str) -> tuple[int, ...]:
    """An int, n values (the same before and after) or 2n values (all befores, then afters)."""
    vals = (value,) if isinstance(value, int) else tuple(value)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) == n:
        vals = vals * 2
    if len(vals) != 2 * n:
        raise ShapeError(
            f"{what} must be an int, {n} values or {2 * n} values (befores, then afters), "
            f"got {list(vals)}"
        )
    return tuple(int(v) for v in vals)


def _dtype_attr(out_dtype: Any) -> str | None:
    if out_dtype is None or str(out_dtype) in ("", "void"):  # TVM prints "no dtype" as void
        return None
    return str(out_dtype)


def _attrs(spec: _Conv, strides, padding, dilation, groups, layouts, out_dtype) -> dict:
    name, n = spec.name, len(spec.spatial)
    data_layout, kernel_layout, out_layout = layouts
    for pname, layout, native in zip(
        ("data_layout", "kernel_layout", "out_layout"),
        (data_layout, kernel_layout, out_layout or data_layout),
        (spec.data, spec.kernel, spec.data),
    ):
        parsed = Layout.parse(layout)
        if sorted(parsed.primals) != sorted(native):
            raise ShapeError(
                f"{name}: {pname} {layout!r} must name the axes of {native!r} (in any order, "
                "optionally blocked)"
            )
    if int(groups) <= 0:
        raise ShapeError(f"{name}: groups must be positive, got {groups}")
    return {
        "strides": _per_axis(strides, n, f"{name}: strides"),
        "padding": _padding(padding, n, f"{name}: padding"),
        "dilation": _per_axis(dilation, n, f"{name}: dilation"),
        "groups": int(groups),
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        # None: the same as data_layout (one spelling, so equal convs compare equal)
        "out_layout": None if out_layout in (None, data_layout) else out_layout,
        "out_dtype": _dtype_attr(out_dtype),
    }


def conv3d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    data_layout: str = "NCDHW",
    kernel_layout: str = "OIDHW",
    out_layout: str | None = None,
    out_dtype: str | None = None,
) -> Call:
    """3-D convolution: data (N, C, D, H, W), weight (O, C/groups, KD, KH, KW) in the default
    layouts; padding int, 3 values or 6 (front, top, left, back, bottom, right)."""
    layouts = (data_layout, kernel_layout, out_layout)
    attrs = _attrs(CONV3D, strides, padding, dilation, groups, layouts, out_dtype)
    return make_call(_conv3d, (data, weight), attrs)


def conv1d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_layout: str = "NCW",
    kernel_layout: str = "IOW",
    out_layout: str | None = None,
    out_dtype: str | None = None,
) -> Call:
    """Transposed 1-D convolution (torch's ConvTranspose1d): data (N, C, W), weight
    (C, O/groups, K) -> (N, O, (W-1)*s - pads + d*(K-1) + output_padding + 1)."""
    layouts = (data_layout, kernel_layout, out_layout)
    attrs = _attrs(CONV1D_TRANSPOSE, strides, padding, dilation, groups, layouts, out_dtype)
    out_pad = _output_padding(CONV1D_TRANSPOSE, output_padding, attrs)
    return make_call(_conv1d_transpose, (data, weight), {**attrs, "output_padding": out_pad})


def conv3d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    output_padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    data_layout: str = "NCDHW",
    kernel_layout: str = "IODHW",
    out_layout: str | None = None,
    out_dtype: str | None = None,
) -> Call:
    """Transposed 3-D convolution (torch's ConvTranspose3d): data (N, C, D, H, W), weight
    (C, O/groups, KD, KH, KW) -> (N, O, (D-1)*s - pads + d*(KD-1) + output_padding + 1, ...)."""
    layouts = (data_layout, kernel_layout, out_layout)
    attrs = _attrs(CONV3D_TRANSPOSE, strides, padding, dilation, groups, layouts, out_dtype)
    out_pad = _output_padding(CONV3D_TRANSPOSE, output_padding, attrs)
    return make_call(_conv3d_transpose, (data, weight), {**attrs, "output_padding": out_pad})
