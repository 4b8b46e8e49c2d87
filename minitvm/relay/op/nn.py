"""`relay.nn`: convolution, dense, pooling, normalisation and activations (one row per op)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ShapeError
from ...relax import op as rop
from ...relax.expr import Tuple as RTuple
from ...relax.expr import const as rconst
from ...topi.nn.conv import padding4, pair
from ..expr import Expr, const
from ._registry import call, register
from .tensor import static_shape


def _pair(value: Any) -> tuple[int, int]:
    return tuple(int(v) for v in pair(value, "relay.nn"))


def _pad4(padding: Any) -> tuple[int, int, int, int]:
    """Relay's padding forms: p, (h, w) or (top, left, bottom, right)."""
    return tuple(int(v) for v in padding4(padding, "relay.nn"))


def _opt(value: Any) -> Any:
    """Relay writes an unset dtype/layout as ""; relax uses None."""
    return value or None


# ----------------------------------------------------------------------------- conv2d


def _conv2d(emit, args, attrs):
    data, weight = args
    _check_conv_attrs(weight, attrs)
    return rop.nn.conv2d(
        data,
        weight,
        strides=attrs.strides,
        padding=attrs.padding,
        dilation=attrs.dilation,
        groups=attrs.groups,
        data_layout=attrs.data_layout,
        kernel_layout=attrs.kernel_layout,
        out_layout=_opt(attrs.out_layout),
        out_dtype=_opt(attrs.out_dtype),
    )


def _check_conv_attrs(weight: Any, attrs: Any) -> None:
    """`channels` and `kernel_size`, when given, must agree with the weight's shape."""
    sinfo = weight.struct_info
    shape = sinfo.static_shape() if hasattr(sinfo, "static_shape") else None
    if shape is None or len(shape) != 4:
        return
    dims = dict(zip(attrs.kernel_layout, shape))
    if not {"O", "H", "W"} <= set(dims):
        return
    if attrs.channels is not None and dims["O"] != attrs.channels:
        raise ShapeError(
            f"nn.conv2d: channels={attrs.channels} but the weight {tuple(shape)} "
            f"({attrs.kernel_layout}) has {dims['O']} output channels"
        )
    if attrs.kernel_size is not None and (dims["H"], dims["W"]) != tuple(attrs.kernel_size):
        raise ShapeError(
            f"nn.conv2d: kernel_size={list(attrs.kernel_size)} but the weight {tuple(shape)} "
            f"({attrs.kernel_layout}) has a {dims['H']}x{dims['W']} window"
        )


register("nn.conv2d", _conv2d)


def conv2d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Expr:
    """2-D convolution: `relay.nn.conv2d(x, w, padding=(1, 1), channels=64, kernel_size=(3, 3))`."""
    attrs = {
        "strides": _pair(strides),
        "padding": _pad4(padding),
        "dilation": _pair(dilation),
        "groups": int(groups),
        "channels": None if channels is None else int(channels),
        "kernel_size": None if kernel_size is None else _pair(kernel_size),
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        "out_layout": out_layout or "",
        "out_dtype": out_dtype or "",
    }
    return call("nn.conv2d", (data, weight), attrs)


# ----------------------------------------------------------------------------- dense / bias


def _dense(emit, args, attrs):
    data, weight = args
    if attrs.units is not None:
        w = static_shape(weight, "nn.dense", "weight")
        if w[0] != attrs.units:
            raise ShapeError(f"nn.dense: units={attrs.units} but the weight {w} has {w[0]} rows")
    return rop.linear(data, weight, out_dtype=_opt(attrs.out_dtype))


def _bias_add(emit, args, attrs):
    data, bias = args
    ndim = data.struct_info.ndim
    axis = attrs.axis % ndim
    (c,) = static_shape(bias, "nn.bias_add", "bias")
    shape = data.struct_info.static_shape()
    if shape is not None and shape[axis] != c:
        raise ShapeError(
            f"nn.bias_add: bias has {c} elements, data {shape} has {shape[axis]} along axis "
            f"{attrs.axis}"
        )
    if axis != ndim - 1:
        bias = emit(rop.reshape(bias, [c] + [1] * (ndim - axis - 1)))
    return rop.add(data, bias)


register("nn.dense", _dense)
register("nn.bias_add", _bias_add)


def dense(data: Expr, weight: Expr, units: int | None = None, out_dtype: str = "") -> Expr:
    """data @ weight.T (weight is (units, in))."""
    attrs = {"units": None if units is None else int(units), "out_dtype": out_dtype or ""}
    return call("nn.dense", (data, weight), attrs)


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Expr:
    """Add a 1-D bias along `axis` of data."""
    return call("nn.bias_add", (data, bias), {"axis": int(axis)})


# ----------------------------------------------------------------------------- activations


def _leaky_relu(emit, args, attrs):
    x = args[0]
    dtype = str(x.struct_info.dtype)
    return rop.maximum(x, emit(rop.multiply(x, rconst(attrs.alpha, dtype))))


register("nn.relu", lambda emit, args, attrs: rop.nn.relu(args[0]))
register("nn.leaky_relu", _leaky_relu)
register("nn.softmax", lambda emit, args, attrs: rop.nn.softmax(args[0], attrs.axis))
register("nn.log_softmax", lambda emit, args, attrs: rop.nn.log_softmax(args[0], attrs.axis))


def relu(data: Expr) -> Expr:
    """max(x, 0)."""
    return call("nn.relu", (data,))


def leaky_relu(data: Expr, alpha: float = 0.01) -> Expr:
    """x where x > 0, alpha * x elsewhere."""
    return call("nn.leaky_relu", (data,), {"alpha": float(alpha)})


def softmax(data: Expr, axis: int = -1) -> Expr:
    """exp(x) / sum(exp(x)) along `axis`."""
    return call("nn.softmax", (data,), {"axis": int(axis)})


def log_softmax(data: Expr, axis: int = -1) -> Expr:
    """log(softmax(x)) along `axis`."""
    return call("nn.log_softmax", (data,), {"axis": int(axis)})


# ----------------------------------------------------------------------------- pooling


def _pool(fn):
    def to_relax(emit, args, attrs):
        kwargs = (
            {"count_include_pad": attrs.count_include_pad} if "count_include_pad" in attrs else {}
        )
        return fn(
            args[0],
            pool_size=attrs.pool_size,
            strides=attrs.strides,
            padding=attrs.padding,
            dilation=attrs.dilation,
            ceil_mode=attrs.ceil_mode,
            layout=attrs.layout,
            **kwargs,
        )

    return to_relax


def _hw_axes(layout: str) -> tuple[int, int]:
    return layout.index("H"), layout.index("W")


def _global_max(emit, args, attrs):
    return rop.max(args[0], _hw_axes(attrs.layout), keepdims=True)


register("nn.max_pool2d", _pool(rop.nn.max_pool2d))
register("nn.avg_pool2d", _pool(rop.nn.avg_pool2d))
register(
    "nn.global_avg_pool2d",
    lambda emit, args, attrs: rop.nn.adaptive_avg_pool2d(args[0], (1, 1), attrs.layout),
)
register("nn.global_max_pool2d", _global_max)
register(
    "nn.adaptive_avg_pool2d",
    lambda emit, args, attrs: rop.nn.adaptive_avg_pool2d(args[0], attrs.output_size, attrs.layout),
)


def _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode) -> dict:
    return {
        "pool_size": _pair(pool_size),
        "strides": _pair(strides),
        "dilation": _pair(dilation),
        "padding": _pad4(padding),
        "layout": layout,
        "out_layout": out_layout or "",
        "ceil_mode": bool(ceil_mode),
    }


def max_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Expr:
    """Max over pool_size windows of H, W."""
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    return call("nn.max_pool2d", (data,), attrs)


def avg_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Expr:
    """Mean over pool_size windows of H, W (padding counted only if asked)."""
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = bool(count_include_pad)
    return call("nn.avg_pool2d", (data,), attrs)


def global_avg_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Expr:
    """Mean over all of H, W (keeps them as size 1)."""
    return call("nn.global_avg_pool2d", (data,), {"layout": layout, "out_layout": out_layout})


def global_max_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Expr:
    """Max over all of H, W (keeps them as size 1)."""
    return call("nn.global_max_pool2d", (data,), {"layout": layout, "out_layout": out_layout})


def adaptive_avg_pool2d(
    data: Expr, output_size: Any = None, layout: str = "NCHW", out_layout: str = ""
) -> Expr:
    """Mean over adaptive windows so H, W become `output_size`."""
    size = None if output_size is None else _pair(output_size)
    attrs = {"output_size": size, "layout": layout, "out_layout": out_layout}
    return call("nn.adaptive_avg_pool2d", (data,), attrs)


# ----------------------------------------------------------------------------- shape / norm


def _batch_flatten(emit, args, attrs):
    x = args[0]
    shape = static_shape(x, "nn.batch_flatten")
    rest = 1
    for d in shape[1:]:
        rest *= d
    return rop.reshape(x, [shape[0], rest])


def _batch_norm(emit, args, attrs):
    return rop.nn.batch_norm(
        *args, attrs.axis, attrs.epsilon, attrs.center, attrs.scale, training=False
    )


def _dropout(emit, args, attrs):
    return RTuple((args[0], args[0]))  # inference: the identity (and an unused mask)


register("nn.batch_flatten", _batch_flatten)
register("nn.batch_norm", _batch_norm, num_outputs=3)
register("nn.dropout", _dropout, num_outputs=2)


def batch_flatten(data: Expr) -> Expr:
    """(N, ...) -> (N, prod(...))."""
    return call("nn.batch_flatten", (data,))


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
) -> Any:
    """Inference batch norm; a 3-tuple (out, mean, var): use `relay.nn.batch_norm(...)[0]`."""
    attrs = {"axis": int(axis), "epsilon": float(epsilon), "center": center, "scale": scale}
    return call("nn.batch_norm", (data, gamma, beta, moving_mean, moving_var), attrs)


def dropout_raw(data: Expr, rate: float = 0.5) -> Any:
    """Dropout as Relay's tuple (out, mask); identity at inference."""
    return call("nn.dropout", (data,), {"rate": float(rate)})


def dropout(data: Expr, rate: float = 0.5) -> Expr:
    """Dropout's output (identity at inference)."""
    return dropout_raw(data, rate)[0]


# ----------------------------------------------------------------------------- padding


def _pad(emit, args, attrs):
    x, value = args
    shape = list(static_shape(x, "nn.pad"))
    dtype = str(x.struct_info.dtype)
    for axis, (lo, hi) in enumerate(attrs.pad_width):
        parts = []
        for size in (lo, hi):
            block = shape[:axis] + [size] + shape[axis + 1 :]
            parts.append(emit(rop.full(block, value, dtype)) if size else None)
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        if len(pieces) > 1:
            x = emit(rop.concat(pieces, axis))
        shape[axis] += lo + hi
    return x


register("nn.pad", _pad)


def pad(data: Expr, pad_width: Any, pad_value: Any = 0.0, pad_mode: str = "constant") -> Expr:
    """Pad each axis by (before, after) with `pad_value`: `relay.nn.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))`."""
    if pad_mode != "constant":
        raise ShapeError(f"nn.pad: pad_mode {pad_mode!r} is not supported; use 'constant'")
    width = tuple((int(lo), int(hi)) for lo, hi in pad_width)
    if any(v < 0 for pair in width for v in pair):
        raise ShapeError(f"nn.pad: pad_width {list(width)} has a negative entry")
    if not isinstance(pad_value, Expr):
        pad_value = const(pad_value)
    return call("nn.pad", (data, pad_value), {"pad_width": width, "pad_mode": pad_mode})


# ----------------------------------------------------------------------------- matmul / layer norm


def _swap_last(emit, x):
    ndim = x.struct_info.ndim
    return emit(rop.permute_dims(x, [*range(ndim - 2), ndim - 1, ndim - 2]))


def _matmul(emit, args, attrs):
    a, b = args
    a = _swap_last(emit, a) if attrs.transpose_a else a
    b = _swap_last(emit, b) if attrs.transpose_b else b
    return rop.matmul(a, b, out_dtype=_opt(attrs.out_dtype))


def _layer_norm(emit, args, attrs):
    return rop.nn.layer_norm(*args, attrs.axis, attrs.epsilon, attrs.center, attrs.scale)


register("nn.matmul", _matmul)
register("nn.batch_matmul", _matmul)
register("nn.layer_norm", _layer_norm)


def matmul(tensor_a: Expr, tensor_b: Expr, units: int | None = None, out_dtype: str = "",
           transpose_a: bool = False, transpose_b: bool = False) -> Expr:  # fmt: skip
    """tensor_a @ tensor_b, either side transposed first."""
    attrs = {"units": units, "out_dtype": out_dtype or "", "transpose_a": bool(transpose_a),
             "transpose_b": bool(transpose_b)}  # fmt: skip
    return call("nn.matmul", (tensor_a, tensor_b), attrs)


def batch_matmul(x: Expr, y: Expr, out_dtype: str = "", transpose_a: bool = False,
                 transpose_b: bool = True) -> Expr:  # fmt: skip
    """Batched x @ y.T (TVM's default transpose_b=True)."""
    attrs = {"out_dtype": out_dtype or "", "transpose_a": bool(transpose_a),
             "transpose_b": bool(transpose_b)}  # fmt: skip
    return call("nn.batch_matmul", (x, y), attrs)


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axis: int = -1, epsilon: float = 1e-5,
               center: bool = True, scale: bool = True) -> Expr:  # fmt: skip
    """Normalise over `axis`, then scale by gamma and shift by beta."""
    attrs = {
        "axis": int(axis),
        "epsilon": float(epsilon),
        "center": bool(center),
        "scale": bool(scale),
    }
    return call("nn.layer_norm", (data, gamma, beta), attrs)


# ----------------------------------------------------------------------------- conv2d_transpose
# Composed from relax ops: the input dilated by the strides (zeros interleaved through
# reshape + concat), padded by kernel - 1 - padding, and convolved with the weight flipped in
# space and with its in/out channels swapped.


def _dilate(emit, x: Any, axis: int, stride: int) -> Any:
    """Insert stride - 1 zeros after every element along `axis` (none after the last)."""
    if stride == 1:
        return x
    shape = list(static_shape(x, "nn.conv2d_transpose"))
    dtype = str(x.struct_info.dtype)
    spread = shape[: axis + 1] + [1] + shape[axis + 1 :]
    zeros = emit(rop.zeros(shape[: axis + 1] + [stride - 1] + shape[axis + 1 :], dtype))
    x = emit(rop.concat([emit(rop.reshape(x, spread)), zeros], axis + 1))
    merged = shape[:axis] + [shape[axis] * stride] + shape[axis + 1 :]
    x = emit(rop.reshape(x, merged))
    return emit(rop.strided_slice(x, [axis], [0], [(shape[axis] - 1) * stride + 1]))


def _flip(emit, w: Any, axis: int) -> Any:
    n = static_shape(w, "nn.conv2d_transpose", "weight")[axis]
    return emit(rop.take(w, rconst(np.arange(n - 1, -1, -1, dtype="int64")), axis))


def _conv2d_transpose(emit, args, attrs):
    data, weight = args
    if (attrs.data_layout, attrs.kernel_layout, attrs.groups) != ("NCHW", "IOHW", 1):
        raise ShapeError(
            "nn.conv2d_transpose: only data_layout NCHW, kernel_layout IOHW and groups 1 are "
            f"supported, got {attrs.data_layout}, {attrs.kernel_layout}, groups {attrs.groups}"
        )
    if attrs.dilation != (1, 1):
        raise ShapeError(f"nn.conv2d_transpose: dilation {list(attrs.dilation)} is not supported")
    kh, kw = static_shape(weight, "nn.conv2d_transpose", "weight")[2:]
    pt, pl, pb, pr = attrs.padding
    oh, ow = attrs.output_padding
    pads = (kh - 1 - pt, kw - 1 - pl, kh - 1 - pb + oh, kw - 1 - pr + ow)
    if min(pads) < 0:
        raise ShapeError(
            f"nn.conv2d_transpose: padding {list(attrs.padding)} larger than kernel - 1 "
            f"({kh - 1}, {kw - 1}) is not supported"
        )
    x = _dilate(emit, _dilate(emit, data, 2, attrs.strides[0]), 3, attrs.strides[1])
    w = emit(rop.permute_dims(_flip(emit, _flip(emit, weight, 2), 3), [1, 0, 2, 3]))
    return rop.nn.conv2d(x, w, padding=pads, out_dtype=_opt(attrs.out_dtype))


register("nn.conv2d_transpose", _conv2d_transpose)


def conv2d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str = "",
    output_padding: Any = (0, 0),
    out_dtype: str = "",
) -> Expr:
    """Transposed 2-D convolution (the gradient of conv2d wrt its input); weight is IOHW."""
    attrs = {
        "strides": _pair(strides),
        "padding": _pad4(padding),
        "dilation": _pair(dilation),
        "groups": int(groups),
        "channels": None if channels is None else int(channels),
        "kernel_size": None if kernel_size is None else _pair(kernel_size),
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        "out_layout": out_layout or "",
        "output_padding": _pair(output_padding),
        "out_dtype": out_dtype or "",
    }
    return call("nn.conv2d_transpose", (data, weight), attrs)


def deformable_conv2d(data: Expr, offset: Expr, weight: Expr, *args: Any, **kwargs: Any) -> Expr:
    """Refused: minitvm has no deformable convolution kernel yet (OpNotImplemented)."""
    from ...error import OpNotImplemented

    raise OpNotImplemented(
        "relay.nn.deformable_conv2d is not implemented in minitvm (there is no deformable "
        "convolution kernel in topi); express the sampling with relay.image.resize2d / "
        "relay.gather and nn.conv2d, or run the model in TVM"
    )


from .nn_loss import nll_loss  # noqa: F401 (relay.nn.nll_loss; its row lives there)
from .nn_space import batch_to_space_nd, space_to_batch_nd  # noqa: F401 (rows live there)
from .sparse import sparse_dense  # noqa: F401 (relay.nn.sparse_dense; its row lives there)
