"""`relax.op.nn.max_pool3d / avg_pool3d` over D, H, W of NCDHW data."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from ....error import ShapeError
from ....topi import nn as topi_nn
from ....topi.nn.conv import conv_out_dim
from ....topi.utils import const_int, fmt_shape
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op


def _infer_pool3d(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    I.require_ndim(call, x, "data", (5,), " (layout NCDHW)")
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, 5)
    a = call.attrs
    pads = a["padding"]
    outs = []
    for i in range(3):
        o = I.dim(
            conv_out_dim(
                x.shape[2 + i], a["pool_size"][i], pads[i], pads[3 + i], a["strides"][i],
                a["dilation"][i], a["ceil_mode"],
            )
        )  # fmt: skip
        if const_int(o) is not None and const_int(o) <= 0:
            raise ShapeError(
                f"{I.op_name(call)}: output dim {2 + i} is {const_int(o)}: pool_size "
                f"{list(a['pool_size'])} (dilation {list(a['dilation'])}) does not fit data "
                f"{fmt_shape(x.shape)} padded by {list(pads)}"
            )
        outs.append(o)
    return TensorStructInfo((x.shape[0], x.shape[1], *outs), x.dtype)


def _np_pool3d(data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, pool):
    """Window by window in float64: the reference the TE version is checked against."""
    sizes = data.shape[2:]
    lo, hi = padding[:3], padding[3:]
    outs = [
        int(conv_out_dim(n, k, a, b, s, d, ceil_mode))
        for n, k, a, b, s, d in zip(sizes, pool_size, lo, hi, strides, dilation)
    ]
    out = np.zeros((*data.shape[:2], *outs), np.float64)
    for o in itertools.product(*(range(n) for n in outs)):
        starts = [i * s - a for i, s, a in zip(o, strides, lo)]
        taps = [
            [t for t in range(st, st + d * k, d) if 0 <= t < n]
            for st, k, d, n in zip(starts, pool_size, dilation, sizes)
        ]
        win = data[:, :, taps[0]][:, :, :, taps[1]][:, :, :, :, taps[2]].astype(np.float64)
        if pool == "max":
            out[(..., *o)] = win.max(axis=(2, 3, 4)) if win.size else -np.inf
            continue
        if count_include_pad:  # taps inside the padded input
            count = np.prod(
                [
                    sum(-a <= t < n + b for t in range(st, st + d * k, d))
                    for st, k, d, n, a, b in zip(starts, pool_size, dilation, sizes, lo, hi)
                ]
            )
        else:
            count = np.prod([len(t) for t in taps])
        out[(..., *o)] = win.sum(axis=(2, 3, 4)) / max(count, 1)
    return out.astype(data.dtype)


def _pool3d_fns(pool_type: str) -> tuple:
    def te_fn(data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout):
        return topi_nn.pool3d(
            data, pool_size, strides, dilation, padding, pool_type, ceil_mode, count_include_pad,
        )  # fmt: skip

    def np_fn(data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout):
        return _np_pool3d(
            data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, pool_type
        )

    return te_fn, np_fn


def _ints(v: Any, n: int, what: str) -> tuple:
    vals = (v,) if isinstance(v, int) else tuple(v)
    if len(vals) == 1:
        vals = vals * n
    elif n == 6 and len(vals) == 3:
        vals = vals + vals
    if len(vals) != n:
        raise ShapeError(f"relax pool3d: {what} must be an int or {n} values, got {list(vals)}")
    return tuple(int(x) for x in vals)


def _attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout, out_layout):
    if layout != "NCDHW" or out_layout not in (None, "NCDHW"):
        raise ShapeError(
            f"relax pool3d: layout {layout!r} / out_layout {out_layout!r} is not supported; use "
            "NCDHW (permute_dims the data first)"
        )
    return {
        "pool_size": _ints(pool_size, 3, "pool_size"),
        "strides": _ints(strides, 3, "strides"),
        "padding": _ints(padding, 6, "padding"),
        "dilation": _ints(dilation, 3, "dilation"),
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
        "layout": "NCDHW",
    }


def _grad_rule(pool_type: str) -> Callable:
    def rule(var, call, g, bb):
        from ..grad_pool3d import pool3d_grad  # the gradient ops import this module's ops

        return pool3d_grad(pool_type, call, g, bb)

    return rule


def _pool3d(pool_type: str, doc: str) -> Callable[..., Call]:
    """Register `relax.nn.{pool_type}_pool3d` and build its Python function (TVM's signature)."""
    name = f"{pool_type}_pool3d"
    op = register_op(
        f"relax.nn.{name}",
        _infer_pool3d,
        *_pool3d_fns(pool_type),
        OpPattern.OUT_EWISE_FUSABLE,
        _grad_rule(pool_type),
    )

    def build(
        data: Expr,
        pool_size: Any = (1, 1, 1),
        strides: Any = (1, 1, 1),
        padding: Any = (0, 0, 0),
        dilation: Any = (1, 1, 1),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        layout: str = "NCDHW",
        out_layout: str | None = None,
    ) -> Call:
        attrs = _attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout,
                       out_layout)  # fmt: skip
        if pool_type == "max":
            attrs["count_include_pad"] = False
        return make_call(op, (data,), attrs)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    return build


max_pool3d = _pool3d("max", "Max over pool_size windows of D, H, W of NCDHW data.")
avg_pool3d = _pool3d(
    "avg", "Mean over pool_size windows of D, H, W of NCDHW data (padding counted only if asked)."
)
