"""Neural-network ops (`relax.op.nn.*`): activations, linear, conv2d, pooling, normalisation."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .... import te
from ....error import ArgumentError, DTypeError, ShapeError
from ....topi import layout as topi_layout
from ....topi import nn as topi_nn
from ....topi import reference as ref
from ....topi.broadcast import full as topi_full
from ....topi.layout import Layout
from ....topi.nn import conv as topi_conv
from ....topi.nn.conv import conv_out_dim, padding4, pair
from ....topi.utils import const_int, fmt_dim, fmt_shape, normalize_axes, prove_equal
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op
from ..elementwise import clip, make_unary

relu = make_unary("nn.relu", topi_nn.relu, ref.relu, False, "max(x, 0): `relax.op.nn.relu(x)`.")
gelu = make_unary(
    "nn.gelu", topi_nn.gelu, ref.gelu, True, "GELU (erf form): `relax.op.nn.gelu(x)`."
)


def relu6(x: Expr) -> Call:
    """min(max(x, 0), 6) (MobileNet's activation): a `relax.op.clip(x, 0, 6)` call."""
    return clip(x, 0.0, 6.0)


# ----------------------------------------------------------------------------- softmax


def _infer_softmax(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    I.require_float(call, x, "x")
    if x.ndim != -1:
        I.axis_of(call, call.attrs["axis"], x.ndim)
    return x


_softmax = register_op(
    "relax.nn.softmax", _infer_softmax, topi_nn.softmax, ref.softmax, OpPattern.OUT_EWISE_FUSABLE
)
_log_softmax = register_op(
    "relax.nn.log_softmax",
    _infer_softmax,
    topi_nn.log_softmax,
    ref.log_softmax,
    OpPattern.OUT_EWISE_FUSABLE,
)


def softmax(x: Expr, axis: int = -1) -> Call:
    """exp(x) / sum(exp(x)) along `axis` (computed stably)."""
    return make_call(_softmax, (x,), {"axis": axis})


def log_softmax(x: Expr, axis: int = -1) -> Call:
    """log(softmax(x)) along `axis` (computed stably)."""
    return make_call(_log_softmax, (x,), {"axis": axis})


# ----------------------------------------------------------------------------- linear


def _infer_linear(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    w = I.tensor_arg(call, 1, "weight")
    named = [("x", x), ("weight", w)]
    I.require_ndim(call, w, "weight", (2,), " (out_features, in_features)")
    if x.ndim == 0:
        raise ShapeError("relax.nn.linear: x is a scalar; it needs rank >= 1 (..., in_features)")
    b = None
    if len(call.args) > 2:
        b = I.tensor_arg(call, 2, "bias")
        named.append(("bias", b))
        I.require_ndim(call, b, "bias", (1,), " (out_features,)")
    dtype = call.attrs.get("out_dtype") or I.same_dtype(call, named)
    if x.shape is None or w.shape is None:
        return TensorStructInfo(None, dtype, x.ndim)
    if not prove_equal(x.shape[-1], w.shape[1]):
        raise ShapeError(
            f"relax.nn.linear: in_features differ: x has shape {fmt_shape(x.shape)}, weight has shape "
            f"{fmt_shape(w.shape)}: dim {len(x.shape) - 1} of x ({fmt_dim(x.shape[-1])}) must equal "
            f"dim 1 of weight ({fmt_dim(w.shape[1])})."
        )
    if b is not None and b.shape is not None and not prove_equal(b.shape[0], w.shape[0]):
        raise ShapeError(
            f"relax.nn.linear: bias has shape {fmt_shape(b.shape)} but weight has "
            f"{fmt_dim(w.shape[0])} out_features (dim 0 of weight {fmt_shape(w.shape)})."
        )
    return TensorStructInfo(tuple(x.shape[:-1]) + (w.shape[0],), dtype)


def _te_linear(x, weight, bias=None, out_dtype=None):
    return topi_nn.dense(x, weight, bias, out_dtype)


def _np_linear(x, weight, bias=None, out_dtype=None):
    return ref.dense(x, weight, bias).astype(out_dtype or x.dtype)


_linear = register_op(
    "relax.nn.linear", _infer_linear, _te_linear, _np_linear, OpPattern.OUT_EWISE_FUSABLE
)


def linear(x: Expr, weight: Expr, bias: Expr | None = None, out_dtype: str | None = None) -> Call:
    """x @ weight.T + bias: `relax.op.linear(x, w, b)`."""
    args = (x, weight) if bias is None else (x, weight, bias)
    return make_call(_linear, args, {"out_dtype": out_dtype})


# The 2022 op of the MLC notebooks (`relax.op.nn.dense(x, w)` = x @ w.T): its own op, so that
# `tvm.ir.Op.get("relax.nn.dense")` matches it in a pattern, and the linear rules otherwise.
_dense = register_op(
    "relax.nn.dense", _infer_linear, _te_linear, _np_linear, OpPattern.OUT_EWISE_FUSABLE
)


def dense(x: Expr, weight: Expr) -> Call:
    """2022 spelling of `relax.op.linear(x, weight)` (x @ weight.T); warns (DeprecationWarning)."""
    warnings.warn(
        "relax.op.dense / relax.op.nn.dense are the 2022 spelling; use relax.op.linear(x, w) "
        "or relax.op.matmul(x, relax.op.permute_dims(w))",
        DeprecationWarning,
        stacklevel=2,
    )
    return make_call(_dense, (x, weight), {"out_dtype": None})


# ----------------------------------------------------------------------------- conv2d


def _layout_sinfo(call: Call, sinfo: TensorStructInfo, pname: str, layout: Layout) -> None:
    """`sinfo` must have the rank of `layout` and its blocks' extents."""
    I.require_ndim(call, sinfo, pname, (layout.ndim,), f" (layout {layout.name})")
    for (axis, block), d in zip(layout.axes, sinfo.shape or ()):
        if block is not None and not prove_equal(d, block):
            raise ShapeError(
                f"{I.op_name(call)}: {pname} has shape {fmt_shape(sinfo.shape)}, which does not "
                f"match its layout {layout.name!r}: the block axis {axis!r} must have extent "
                f"{block}, got {fmt_dim(d)}"
            )


def _dim_of(pname: str, layout: Layout, primal: str, value: Any) -> str:
    """'dim 1 of weight (4)', or for a blocked axis 'C of data (16: dims 1 and 4 of NCHW4c)'."""
    pos = layout.index_of(primal)
    if layout.block(primal) is None:
        return f"dim {pos} of {pname} ({fmt_dim(value)})"
    inner = layout.index_of(primal.lower())
    return f"{primal} of {pname} ({fmt_dim(value)}: dims {pos} and {inner} of {layout.name})"


def _infer_conv2d(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    w = I.tensor_arg(call, 1, "weight")
    a = call.attrs
    dl, kl = Layout.parse(a["data_layout"]), Layout.parse(a["kernel_layout"])
    ol = Layout.parse(a["out_layout"] or a["data_layout"])
    _layout_sinfo(call, x, "data", dl)
    _layout_sinfo(call, w, "weight", kl)
    dtype = a.get("out_dtype") or I.same_dtype(call, [("data", x), ("weight", w)])
    if x.shape is None or w.shape is None:
        return TensorStructInfo(None, dtype, ol.ndim)
    n, c, h, wd = (I.dim(dl.logical_dim(x.shape, p)) for p in "NCHW")
    o, cg, kh, kw = (I.dim(kl.logical_dim(w.shape, p)) for p in "OIHW")
    groups = a["groups"]
    seen = f"data {fmt_shape(x.shape)} ({dl.name}), weight {fmt_shape(w.shape)} ({kl.name})"
    for what, d in (("in_channels", c), ("out_channels", o)):
        if const_int(d) is not None and const_int(d) % groups:
            raise ShapeError(
                f"relax.nn.conv2d: {what} ({fmt_dim(d)}) is not divisible by groups={groups} "
                f"({seen})."
            )
    if I.provably_differ(c, I.dim_arith(lambda v: v * groups, cg)):
        raise ShapeError(
            f"relax.nn.conv2d: channels differ: {seen}: {_dim_of('weight', kl, 'I', cg)} must "
            f"equal {_dim_of('data', dl, 'C', c)} / groups ({groups})."
        )
    topi_conv.conv2d_kind(dl.name, kl.name, groups, c, "relax.nn.conv2d")
    sh, sw = a["strides"]
    dh, dw = a["dilation"]
    pt, pl, pb, pr = a["padding"]
    oh = I.dim(conv_out_dim(h, kh, pt, pb, sh, dh))
    ow = I.dim(conv_out_dim(wd, kw, pl, pr, sw, dw))
    for what, d in (("height", oh), ("width", ow)):
        if const_int(d) is not None and const_int(d) <= 0:
            raise ShapeError(
                f"relax.nn.conv2d: output {what} is {const_int(d)}: the kernel "
                f"{fmt_shape((kh, kw))} (dilation {a['dilation']}) does not fit the padded input "
                f"{fmt_shape((h, wd))}."
            )
    out = ol.shape_of({"N": n, "C": o, "H": oh, "W": ow}, "relax.nn.conv2d out_layout")
    return TensorStructInfo(tuple(I.dim(d) for d in out), dtype)


def _te_conv2d(data, weight, out_layout, **attrs):
    # the call's None means data_layout; topi's None would mean the compute's native layout
    return topi_conv.conv2d_layout(
        data, weight, out_layout=out_layout or attrs["data_layout"], **attrs
    )


def _np_conv2d(data, weight, out_dtype=None, **attrs):
    return ref.conv2d(data, weight, **attrs).astype(out_dtype or data.dtype)


_conv2d = register_op(
    "relax.nn.conv2d", _infer_conv2d, _te_conv2d, _np_conv2d, OpPattern.OUT_EWISE_FUSABLE
)


def conv2d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str | None = None,
    out_dtype: str | None = None,
) -> Call:
    """2-D convolution; padding is int, (h, w) or (top, left, bottom, right).

    Layouts (TVM's strings): NCHW/OIHW, NHWC/HWIO, NHWC/OHWI, NCHW{c}c/OIHW{c}i{o}o (groups 1)
    and NCHW{c}c/OIHW1i{c}o (depthwise); `out_layout` defaults to `data_layout` (the call's
    attrs hold None for it then).
    """
    for layout in (data_layout, kernel_layout, out_layout or data_layout):
        Layout.parse(layout)
    if int(groups) <= 0:
        raise ShapeError(f"relax.nn.conv2d: groups must be positive, got {groups}")
    topi_conv.conv2d_kind(data_layout, kernel_layout, int(groups), None, "relax.nn.conv2d")
    attrs = {
        "strides": pair(strides, "relax.nn.conv2d strides"),
        "padding": padding4(padding, "relax.nn.conv2d"),
        "dilation": pair(dilation, "relax.nn.conv2d dilation"),
        "groups": int(groups),
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        # None: the same as data_layout (one spelling, so equal convs compare equal)
        "out_layout": None if out_layout in (None, data_layout) else out_layout,
        "out_dtype": out_dtype,
    }
    return make_call(_conv2d, (data, weight), attrs)


# ----------------------------------------------------------------------------- pooling


def _pool_layout(call: Call, x: TensorStructInfo) -> tuple[int, int]:
    """Positions of H and W in the call's layout; x must have that layout's rank and blocks."""
    layout = Layout.parse(call.attrs["layout"])
    _layout_sinfo(call, x, "data", layout)
    return layout.index_of("H"), layout.index_of("W")


def _infer_pool2d(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    ha, wa = _pool_layout(call, x)
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, _out_ndim(call))
    a = call.attrs
    kh, kw = a["pool_size"]
    sh, sw = a["strides"]
    dh, dw = a["dilation"]
    pt, pl, pb, pr = a["padding"]
    h, w = x.shape[ha], x.shape[wa]
    oh = I.dim(conv_out_dim(h, kh, pt, pb, sh, dh, a["ceil_mode"]))
    ow = I.dim(conv_out_dim(w, kw, pl, pr, sw, dw, a["ceil_mode"]))
    for what, d in (("height", oh), ("width", ow)):
        if const_int(d) is not None and const_int(d) <= 0:
            raise ShapeError(
                f"{I.op_name(call)}: output {what} is {const_int(d)}: pool_size {a['pool_size']} does "
                f"not fit the padded input {fmt_shape((h, w))}."
            )
    return _to_out_layout(call, TensorStructInfo(_replace_hw(x.shape, ha, wa, oh, ow), x.dtype))


def _to_out_layout(call: Call, sinfo: TensorStructInfo) -> TensorStructInfo:
    """A pooling result (computed in the call's layout) in its out_layout, when it has one."""
    out_layout = call.attrs.get("out_layout")
    if out_layout is None or sinfo.shape is None:
        return sinfo
    what = f"{I.op_name(call)} out_layout"
    shape = topi_layout.transformed_shape(sinfo.shape, call.attrs["layout"], out_layout, what)
    return TensorStructInfo(tuple(I.dim(d) for d in shape), sinfo.dtype)


def _out_ndim(call: Call) -> int:
    """The rank of a pooling result: its out_layout's (data of unknown rank included)."""
    return Layout.parse(call.attrs.get("out_layout") or call.attrs["layout"]).ndim


def _relayout(result: Any, transform: Any, layout: str, out_layout: str | None) -> Any:
    return result if out_layout is None else transform(result, layout, out_layout)


def _replace_hw(shape: Any, ha: int, wa: int, oh: Any, ow: Any) -> tuple:
    out = list(shape)
    out[ha], out[wa] = oh, ow
    return tuple(out)


def _pool2d_rule(impl: Any, pool_type: str) -> Any:
    """The call's attrs (keywords) onto `impl(data, kernel, stride, dilation, padding, ...)`,
    the positional order that topi.nn.pool2d and its numpy reference share."""

    transform = ref.layout_transform if impl is ref.pool2d else topi_layout.layout_transform

    def fn(
        data,
        pool_size,
        strides,
        padding,
        dilation,
        ceil_mode,
        count_include_pad,
        layout,
        out_layout=None,
    ):
        out = impl(
            data,
            pool_size,
            strides,
            dilation,
            padding,
            pool_type,
            ceil_mode,
            count_include_pad,
            layout,
        )
        return _relayout(out, transform, layout, out_layout)

    return fn


_max_pool2d = register_op(
    "relax.nn.max_pool2d",
    _infer_pool2d,
    _pool2d_rule(topi_nn.pool2d, "max"),
    _pool2d_rule(ref.pool2d, "max"),
    OpPattern.OUT_EWISE_FUSABLE,
)
_avg_pool2d = register_op(
    "relax.nn.avg_pool2d",
    _infer_pool2d,
    _pool2d_rule(topi_nn.pool2d, "avg"),
    _pool2d_rule(ref.pool2d, "avg"),
    OpPattern.OUT_EWISE_FUSABLE,
)


def _check_pool_layout(layout: str, what: str) -> None:
    lay = Layout.parse(layout)
    if sorted(lay.primals) != ["C", "H", "N", "W"] or lay.block("H") or lay.block("W"):
        raise ShapeError(
            f"{what}: layout {layout!r} is not supported; use NCHW, NHWC or NCHW{{c}}c (N, C, "
            "H, W with H and W unblocked)"
        )


def _out_layout_attr(layout: str, out_layout: str | None, what: str) -> dict:
    """{"out_layout": ...} when it differs from `layout`, else {}: the attribute is absent in
    the common case, so a pooling call's attrs still feed the pool gradient ops unchanged."""
    if out_layout is None or out_layout == layout:
        return {}
    _check_pool_layout(out_layout, f"{what} out_layout")
    return {"out_layout": out_layout}


def _pool_attrs(
    pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout, out_layout=None
) -> dict:
    _check_pool_layout(layout, "relax pooling")
    return {
        "pool_size": pair(pool_size, "pool_size"),
        "strides": pair(strides, "strides"),
        "padding": padding4(padding, "pool2d"),
        "dilation": pair(dilation, "dilation"),
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
        "layout": layout,
        **_out_layout_attr(layout, out_layout, "relax pooling"),
    }


def max_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
    out_layout: str | None = None,
) -> Call:
    """Max over pool_size windows of H, W (layout NCHW, NHWC or NCHW{c}c); the result is in
    `out_layout` (default: `layout`). `count_include_pad` is accepted in TVM's position and
    has no effect on a maximum (padding never wins)."""
    return make_call(
        _max_pool2d,
        (data,),
        _pool_attrs(pool_size, strides, padding, dilation, ceil_mode, False, layout, out_layout),
    )


def avg_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
    out_layout: str | None = None,
) -> Call:
    """Mean over pool_size windows of H, W (NCHW, NHWC or NCHW{c}c); padding is excluded from
    the count unless asked. The result is in `out_layout` (default: `layout`)."""
    attrs = _pool_attrs(
        pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout, out_layout
    )
    return make_call(_avg_pool2d, (data,), attrs)


def _infer_adaptive(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    ha, wa = _pool_layout(call, x)
    size = call.attrs["output_size"]
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, _out_ndim(call))
    oh, ow = (x.shape[ha], x.shape[wa]) if size is None else size
    out = TensorStructInfo(_replace_hw(x.shape, ha, wa, I.dim(oh), I.dim(ow)), x.dtype)
    return _to_out_layout(call, out)


def _te_adaptive(data, output_size, layout, out_layout=None):
    out = topi_nn.adaptive_pool2d(data, output_size, "avg", layout)
    return _relayout(out, topi_layout.layout_transform, layout, out_layout)


def _np_adaptive(data, output_size, layout, out_layout=None):
    out = ref.adaptive_avg_pool2d(data, output_size, layout)
    return _relayout(out, ref.layout_transform, layout, out_layout)


_adaptive = register_op(
    "relax.nn.adaptive_avg_pool2d",
    _infer_adaptive,
    _te_adaptive,
    _np_adaptive,
    OpPattern.OUT_EWISE_FUSABLE,
)


def adaptive_avg_pool2d(
    data: Expr, output_size: Any = None, layout: str = "NCHW", out_layout: str | None = None
) -> Call:
    """Average over adaptive windows so the output is `output_size` (None keeps H, W); the
    result is in `out_layout` (default: `layout`)."""
    what = "relax.nn.adaptive_avg_pool2d"
    _check_pool_layout(layout, what)
    size = None if output_size is None else pair(output_size, "output_size")
    attrs = {"output_size": size, "layout": layout, **_out_layout_attr(layout, out_layout, what)}
    return make_call(_adaptive, (data,), attrs)


# ----------------------------------------------------------------------------- normalisation


def _check_param(
    call: Call, x: TensorStructInfo, axes: tuple, index: int, pname: str
) -> TensorStructInfo:
    p = I.tensor_arg(call, index, pname)
    if x.dtype is not None and p.dtype != x.dtype:  # TVM: an unknown dtype is refused too
        raise DTypeError(
            f"{I.op_name(call)}: {pname} has dtype {p.dtype or 'unknown'}, data {x.dtype}; the "
            f"parameters must have data's dtype (cast with relax.op.astype or match_cast)"
        )
    want = tuple(x.shape[a] for a in axes) if x.shape is not None else None
    if (
        want is not None
        and p.shape is not None
        and (len(p.shape) != len(want) or not all(map(prove_equal, p.shape, want)))
    ):
        raise ShapeError(
            f"{I.op_name(call)}: {pname} has shape {fmt_shape(p.shape)}, expected {fmt_shape(want)} "
            f"(dims {list(axes)} of data {fmt_shape(x.shape)})."
        )
    return p


def _infer_batch_norm(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_float(call, x, "data")
    axis = I.axis_of(call, call.attrs["axis"], x.ndim) if x.ndim != -1 else None
    params = []
    for i, pname in enumerate(("gamma", "beta", "moving_mean", "moving_var"), start=1):
        params.append(
            _check_param(call, x, (axis,), i, pname)
            if axis is not None
            else I.tensor_arg(call, i, pname)
        )
    return TupleStructInfo((x, params[2], params[3]))


_batch_norm = register_op(
    "relax.nn.batch_norm",
    _infer_batch_norm,
    topi_nn.batch_norm,
    ref.batch_norm,
    OpPattern.OUT_EWISE_FUSABLE,
)


def batch_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    moving_mean: Expr,
    moving_var: Expr,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
    momentum: float = 0.1,
    training: bool = True,
) -> Call:
    """Batch norm; returns the tuple (out, new_moving_mean, new_moving_var) as in TVM.

    training=True (TVM's default) normalises with the batch's mean and biased variance over
    every axis but `axis` and blends them into the moving statistics:
    `(1 - momentum) * moving + momentum * batch`. training=False normalises with the moving
    statistics and returns them unchanged (what an inference model wants;
    `DecomposeOpsForInference` also turns either form into it).

    >>> out = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, training=False)[0]
    """
    if not 0.0 <= float(momentum) <= 1.0:
        raise ArgumentError(
            f"relax.nn.batch_norm: momentum={momentum} is outside [0, 1]; it is the weight of "
            "the batch statistics in the moving average (torch's default is 0.1)"
        )
    attrs = {
        "axis": int(axis),
        "epsilon": float(epsilon),
        "center": bool(center),
        "scale": bool(scale),
        "momentum": float(momentum),
        "training": bool(training),
    }
    return make_call(_batch_norm, (data, gamma, beta, moving_mean, moving_var), attrs)


def _infer_layer_norm(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_float(call, x, "data")
    if x.ndim == -1:
        return x
    axes = normalize_axes(call.attrs["axes"], x.ndim, "relax.nn.layer_norm")
    _check_param(call, x, axes, 1, "gamma")
    _check_param(call, x, axes, 2, "beta")
    return x


def _te_layer_norm(data, gamma, beta, axes, epsilon, center, scale):
    return topi_nn.layer_norm(data, gamma, beta, axes, epsilon, center, scale)  # topi: `axis`


_layer_norm = register_op(
    "relax.nn.layer_norm",
    _infer_layer_norm,
    _te_layer_norm,
    ref.layer_norm,
    OpPattern.OUT_EWISE_FUSABLE,
)


def layer_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    axes: Any = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Normalise over `axes`, then scale by gamma and shift by beta (both shaped like those axes)."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes)
    attrs = {"axes": axes, "epsilon": float(epsilon), "center": bool(center), "scale": bool(scale)}
    return make_call(_layer_norm, (data, gamma, beta), attrs)


# ----------------------------------------------------------------------------- more activations

silu = make_unary("nn.silu", topi_nn.silu, ref.silu, True, "x * sigmoid(x): `relax.op.nn.silu(x)`.")
gelu_tanh = make_unary(
    "nn.gelu_tanh",
    topi_nn.gelu_tanh,
    ref.gelu_tanh,
    True,
    "GELU, tanh approximation: `relax.op.nn.gelu_tanh(x)`.",
)


def _infer_float_unary(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_float(call, x, "data")
    return x


_leakyrelu = register_op(
    "relax.nn.leakyrelu",
    _infer_float_unary,
    topi_nn.leaky_relu,
    ref.leaky_relu,
    OpPattern.ELEMWISE,
)
_softplus = register_op(
    "relax.nn.softplus",
    _infer_float_unary,
    topi_nn.softplus,
    ref.softplus,
    OpPattern.ELEMWISE,
)


def leakyrelu(data: Expr, alpha: float = 0.01) -> Call:
    """x where x > 0, else alpha * x: `relax.op.nn.leakyrelu(x, 0.2)`."""
    return make_call(_leakyrelu, (data,), {"alpha": float(alpha)})


def softplus(data: Expr, beta: float = 1.0, threshold: float = 20.0) -> Call:
    """log(1 + exp(beta * x)) / beta; x itself where beta * x > threshold (as torch)."""
    if float(beta) == 0.0:
        raise ShapeError("relax.nn.softplus: beta must be non-zero (it divides the result)")
    return make_call(_softplus, (data,), {"beta": float(beta), "threshold": float(threshold)})


# ----------------------------------------------------------------------------- dropout


def _infer_dropout(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_float(call, x, "data")
    return TupleStructInfo((x, x))


def _te_dropout(data, rate):
    out = te.compute(data.shape, lambda *i: data[i], name="T_dropout", tag="elemwise")
    ones = topi_full(data.shape, data.dtype, 1.0)
    return [out, ones]


_dropout = register_op(
    "relax.nn.dropout",
    _infer_dropout,
    _te_dropout,
    lambda data, rate: (data.copy(), np.ones_like(data)),
    OpPattern.ELEMWISE,
)


def dropout(data: Expr, rate: float = 0.5) -> Call:
    """Inference dropout: the tuple (data, mask of ones), as TVM's; take field 0 for the output."""
    if not 0.0 <= float(rate) < 1.0:
        raise ShapeError(f"relax.nn.dropout: rate must be in [0, 1), got {rate}")
    return make_call(_dropout, (data,), {"rate": float(rate)})


# ----------------------------------------------------------------------------- group_norm


def _infer_group_norm(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_float(call, x, "data")
    a = call.attrs
    if x.ndim == -1:
        return x
    c_ax = I.axis_of(call, a["channel_axis"], x.ndim)
    normalize_axes(a["axes"], x.ndim, "relax.nn.group_norm")
    _check_param(call, x, (c_ax,), 1, "gamma")
    _check_param(call, x, (c_ax,), 2, "beta")
    channels = const_int(x.shape[c_ax]) if x.shape is not None else None
    if channels is not None and channels % a["num_groups"]:
        raise ShapeError(
            f"relax.nn.group_norm: the {channels} channels of data {fmt_shape(x.shape)} (axis "
            f"{c_ax}) do not split into num_groups={a['num_groups']} equal groups; pick a "
            "num_groups that divides the channel count"
        )
    return x


_group_norm = register_op(
    "relax.nn.group_norm",
    _infer_group_norm,
    topi_nn.group_norm,
    ref.group_norm,
    OpPattern.OUT_EWISE_FUSABLE,
)


def group_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    num_groups: int,
    channel_axis: int,
    axes: Any,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Normalise over `axes` and the channels of each group (TVM's relax signature).

    NCHW: `group_norm(x, gamma, beta, num_groups=8, channel_axis=1, axes=[2, 3])`; gamma and
    beta have shape (C,)."""
    if int(num_groups) <= 0:
        raise ShapeError(f"relax.nn.group_norm: num_groups must be positive, got {num_groups}")
    attrs = {
        "num_groups": int(num_groups),
        "channel_axis": int(channel_axis),
        "axes": (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes),
        "epsilon": float(epsilon),
        "center": bool(center),
        "scale": bool(scale),
    }
    return make_call(_group_norm, (data, gamma, beta), attrs)
