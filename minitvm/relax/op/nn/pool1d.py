"""`relax.op.nn.max_pool1d / avg_pool1d / adaptive_avg_pool1d` over W of NCW data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....error import ShapeError
from ....topi import nn as topi_nn
from ....topi import reference as ref
from ....topi.nn.conv import conv_out_dim
from ....topi.utils import const_int, fmt_shape
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op


def _infer_pool1d(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_ndim(call, x, "data", (3,), " (layout NCW)")
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, 3)
    a = call.attrs
    (k,), (s,), (d,), (pl, pr) = a["pool_size"], a["strides"], a["dilation"], a["padding"]
    ow = I.dim(conv_out_dim(x.shape[2], k, pl, pr, s, d, a["ceil_mode"]))
    if const_int(ow) is not None and const_int(ow) <= 0:
        raise ShapeError(
            f"{I.op_name(call)}: output width is {const_int(ow)}: pool_size {k} (dilation {d}) "
            f"does not fit data {fmt_shape(x.shape)} padded by {(pl, pr)}"
        )
    return TensorStructInfo((x.shape[0], x.shape[1], ow), x.dtype)


def _pool1d_fns(pool_type: str) -> tuple:
    def te_fn(data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout):
        return topi_nn.pool1d(
            data, pool_size[0], strides[0], dilation[0], padding, pool_type, ceil_mode,
            count_include_pad,
        )  # fmt: skip

    def np_fn(data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout):
        out = ref.pool2d(
            data[:, :, None], (1, pool_size[0]), (1, strides[0]), (1, dilation[0]),
            (0, padding[0], 0, padding[1]), pool_type, ceil_mode, count_include_pad,
        )  # fmt: skip
        return out[:, :, 0]

    return te_fn, np_fn


def _ints(v: Any, n: int, what: str) -> tuple:
    vals = (v,) * n if isinstance(v, int) else tuple(v)
    vals = vals * n if len(vals) == 1 else vals
    if len(vals) != n:
        raise ShapeError(f"relax pool1d: {what} must be an int or {n} values, got {list(vals)}")
    return tuple(int(x) for x in vals)


def _attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout, out_layout):
    if layout != "NCW" or out_layout not in (None, "NCW"):
        raise ShapeError(
            f"relax pool1d: layout {layout!r} / out_layout {out_layout!r} is not supported; use "
            "NCW (permute_dims the data first)"
        )
    return {
        "pool_size": _ints(pool_size, 1, "pool_size"),
        "strides": _ints(strides, 1, "strides"),
        "padding": _ints(padding, 2, "padding"),
        "dilation": _ints(dilation, 1, "dilation"),
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
        "layout": "NCW",
    }


def _pool1d(pool_type: str, doc: str) -> Callable[..., Call]:
    """Register `relax.nn.{pool_type}_pool1d` and build its Python function (TVM's signature)."""
    name = f"{pool_type}_pool1d"
    op = register_op(
        f"relax.nn.{name}", _infer_pool1d, *_pool1d_fns(pool_type), OpPattern.OUT_EWISE_FUSABLE
    )

    def build(
        data: Expr,
        pool_size: Any = (1,),
        strides: Any = (1,),
        padding: Any = (0, 0),
        dilation: Any = (1,),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        layout: str = "NCW",
        out_layout: str | None = None,
    ) -> Call:
        attrs = _attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout,
                       out_layout)  # fmt: skip
        return make_call(op, (data,), attrs)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    return build


max_pool1d = _pool1d("max", "Max over pool_size windows along W of NCW data.")
avg_pool1d = _pool1d(
    "avg", "Mean over pool_size windows along W of NCW data (padding counted only if asked)."
)


def _infer_adaptive1d(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_ndim(call, x, "data", (3,), " (layout NCW)")
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, 3)
    size = call.attrs["output_size"]
    if const_int(x.shape[2]) is None:
        raise ShapeError(
            f"relax.nn.adaptive_avg_pool1d: the width of data {fmt_shape(x.shape)} must be static"
        )
    ow = x.shape[2] if size is None else I.dim(size)
    return TensorStructInfo((x.shape[0], x.shape[1], ow), x.dtype)


def _np_adaptive1d(data, output_size, layout):
    size = None if output_size is None else (1, output_size)
    return ref.adaptive_avg_pool2d(data[:, :, None], size)[:, :, 0]


_adaptive1d = register_op(
    "relax.nn.adaptive_avg_pool1d",
    _infer_adaptive1d,
    lambda data, output_size, layout: topi_nn.adaptive_pool1d(data, output_size, "avg"),
    _np_adaptive1d,
    OpPattern.OUT_EWISE_FUSABLE,
)


def adaptive_avg_pool1d(
    data: Expr, output_size: Any = None, layout: str = "NCW", out_layout: str | None = None
) -> Call:
    """Average over adaptive windows of W so the output width is `output_size` (None keeps W)."""
    if layout != "NCW" or out_layout not in (None, "NCW"):
        raise ShapeError(f"relax.nn.adaptive_avg_pool1d: layout {layout!r} unsupported; use NCW")
    size = None if output_size is None else _ints(output_size, 1, "output_size")[0]
    if size is not None and size <= 0:
        raise ShapeError(f"relax.nn.adaptive_avg_pool1d: output_size must be positive, got {size}")
    return make_call(_adaptive1d, (data,), {"output_size": size, "layout": "NCW"})
