"""The backward ops the gradient rules need, each an ordinary op-table row (shape rule, TE,
numpy reference): relax.erf, relax.nn.relu_grad, relax.nn.conv2d_backward_data/_weight,
relax.nn.max_pool2d_grad/avg_pool2d_grad, relax.take_backward, relax.broadcast_like."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import te
from ...error import ShapeError
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ...topi.broadcast import _binary as _topi_binary
from ...topi.broadcast import broadcast_index
from ...topi.nn import conv_backward as topi_conv_backward
from ...topi.nn.pooling import _valid_taps
from ...topi.nn.pooling import pool2d as topi_pool2d
from ..expr import Call, Expr, ShapeExpr
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .elementwise import _infer_binary, make_unary

# ============================================================================ backward ops


def _np_erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


def _te_erf(x: te.Tensor) -> te.Tensor:
    return te.compute(x.shape, lambda *i: tir_op.erf(x[i]), name="T_erf", tag="elemwise")


erf = make_unary("erf", _te_erf, _np_erf, True, "Elementwise error function.")


def _te_relu_grad_scalar(x: Any, g: Any) -> Any:
    return tir_op.if_then_else(x > make_const(x.dtype, 0), g, make_const(g.dtype, 0))


_relu_grad = register_op(
    "relax.nn.relu_grad",
    _infer_binary,
    _topi_binary("relu_grad", _te_relu_grad_scalar),
    lambda x, g: np.where(x > 0, g, np.zeros((), g.dtype)).astype(g.dtype),
    OpPattern.BROADCAST,
)


def relu_grad(x: Expr, output_grad: Expr) -> Call:
    """`output_grad` where `x > 0`, else 0 (the dlsys `relu_gradient_op`)."""
    return make_call(_relu_grad, (x, output_grad))


def _infer_from_shape_arg(index: int, grad_index: int = 0) -> Callable[[Call], StructInfo]:
    def infer(call: Call) -> StructInfo:
        g = I.tensor_arg(call, grad_index, "output_grad")
        shape = I.shape_arg(call, index, "shape")
        ndim = call.args[index].struct_info.ndim
        return (
            TensorStructInfo(shape, g.dtype)
            if shape is not None
            else TensorStructInfo(None, g.dtype, ndim)
        )

    return infer


# ----------------------------------------------------------------------------- conv2d backward


def _window_out(pos: Any, tap: Any, s: int, d: int, lo: int, size_out: Any) -> tuple[Any, Any]:
    """(valid, output index) of the window whose tap `tap` reads input `pos`."""
    num = pos + lo - tap * d
    if s == 1:
        return tir_op.all(num >= 0, num < size_out), num
    return (
        tir_op.all(num >= 0, tir_op.floormod(num, s) == 0, tir_op.floordiv(num, s) < size_out),
        tir_op.floordiv(num, s),
    )


def _window_back(pos: Any, back: Any, s: int, k: int, lo: int, size_out: Any) -> tuple[Any, Any]:
    """(valid, output index) of the `back`-th window counted down from the last one starting at
    or before input `pos` (dilation 1: window o covers padded positions [o*s, o*s + k)); valid
    when it exists and still reaches `pos`."""
    out = tir_op.floordiv(pos + lo, s) - back
    return tir_op.all(out >= 0, out < size_out, pos + lo - out * s < k), out


def _te_conv2d_bwd_data(g, weight, data_shape, strides, padding, dilation):
    return topi_conv_backward.conv2d_backward_data(
        g, weight, data_shape, strides, padding, dilation
    )


def _te_conv2d_bwd_weight(g, data, weight_shape, strides, padding, dilation):
    return topi_conv_backward.conv2d_backward_weight(
        g, data, weight_shape, strides, padding, dilation
    )


def _np_conv_taps(h, w, kh, kw, oh, ow, strides, padding, dilation):
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    for i in range(kh):
        for j in range(kw):
            ys = np.arange(oh) * sh + i * dh - pt
            xs = np.arange(ow) * sw + j * dw - pl
            my, mx = (ys >= 0) & (ys < h), (xs >= 0) & (xs < w)
            yield i, j, np.nonzero(my)[0], ys[my], np.nonzero(mx)[0], xs[mx]


def _np_conv2d_bwd_data(g, weight, data_shape, strides, padding, dilation):
    n, c, h, w = (int(s) for s in data_shape)
    _, _, kh, kw = weight.shape
    out = np.zeros((n, c, h, w), dtype=np.float64)
    for i, j, oy, iy, ox, ix in _np_conv_taps(
        h, w, kh, kw, g.shape[2], g.shape[3], strides, padding, dilation
    ):
        part = np.einsum("noyx,oc->ncyx", g[:, :, oy][:, :, :, ox], weight[:, :, i, j])
        out[:, :, iy[:, None], ix[None, :]] += part
    return out.astype(g.dtype)


def _np_conv2d_bwd_weight(g, data, weight_shape, strides, padding, dilation):
    o, c, kh, kw = (int(s) for s in weight_shape)
    _, _, h, w = data.shape
    out = np.zeros((o, c, kh, kw), dtype=np.float64)
    for i, j, oy, iy, ox, ix in _np_conv_taps(
        h, w, kh, kw, g.shape[2], g.shape[3], strides, padding, dilation
    ):
        gs = g[:, :, oy][:, :, :, ox]
        xs = data[:, :, iy][:, :, :, ix]
        out[:, :, i, j] = np.einsum("noyx,ncyx->oc", gs, xs)
    return out.astype(g.dtype)


_conv2d_bwd_data = register_op(
    "relax.nn.conv2d_backward_data",
    _infer_from_shape_arg(2),
    _te_conv2d_bwd_data,
    _np_conv2d_bwd_data,
    OpPattern.OUT_EWISE_FUSABLE,
)
_conv2d_bwd_weight = register_op(
    "relax.nn.conv2d_backward_weight",
    _infer_from_shape_arg(2),
    _te_conv2d_bwd_weight,
    _np_conv2d_bwd_weight,
    OpPattern.OUT_EWISE_FUSABLE,
)


def _conv_attrs(attrs: Any) -> dict:
    return {k: attrs[k] for k in ("strides", "padding", "dilation")}


def conv2d_backward_data(output_grad: Expr, weight: Expr, data_shape: Any, **attrs: Any) -> Call:
    """d(conv2d)/d(data) applied to `output_grad` (a transposed convolution), groups=1."""
    return make_call(_conv2d_bwd_data, (output_grad, weight, _shape_expr(data_shape)), attrs)


def conv2d_backward_weight(output_grad: Expr, data: Expr, weight_shape: Any, **attrs: Any) -> Call:
    """d(conv2d)/d(weight) applied to `output_grad`, groups=1."""
    return make_call(_conv2d_bwd_weight, (output_grad, data, _shape_expr(weight_shape)), attrs)


# ----------------------------------------------------------------------------- pooling backward


def _pool_grad_te(pool_type: str):
    def fn(
        g, data, *fwd, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout
    ):
        n, c, h, w = data.shape
        (kh, kw), (sh, sw), (dh, dw) = pool_size, strides, dilation
        pt, pl, pb, pr = padding
        oh, ow = g.shape[2], g.shape[3]
        # max pooling with stride > 1 runs over the windows holding an input (ceil(k/s) per
        # axis) rather than over its taps: fewer terms and no `% s` test per term (3x3 stride 2:
        # 4 terms instead of 9); average pooling keeps the taps
        cand_h = pool_type == "max" and sh > 1 and dh == 1
        cand_w = pool_type == "max" and sw > 1 and dw == 1
        ri = te.reduce_axis((0, -(-kh // sh) if cand_h else kh), "ri")
        rj = te.reduce_axis((0, -(-kw // sw) if cand_w else kw), "rj")
        zero = make_const(g.dtype, 0)
        if pool_type == "max":
            # the forward output when given (`max_pool2d_grad(..., out=)`); else the max is
            # computed again here, a pass over the input as long as the forward pooling
            out = (
                fwd[0]
                if fwd
                else topi_pool2d(
                    data, pool_size, strides, dilation, padding, "max", ceil_mode, False, layout
                )
            )

            def contrib(b, ch, y, x, iy, ix):
                hit = data[b, ch, y, x] == out[b, ch, iy, ix]
                return tir_op.if_then_else(hit, g[b, ch, iy, ix], zero)

        else:

            def count(iy, ix):
                y0, x0 = iy * sh - pt, ix * sw - pl
                if count_include_pad:
                    hy = _valid_taps(y0 + pt, kh, dh, h + pt + pb)  # taps in the padded input
                    hx = _valid_taps(x0 + pl, kw, dw, w + pl + pr)
                else:
                    hy, hx = _valid_taps(y0, kh, dh, h), _valid_taps(x0, kw, dw, w)
                return tir_cast(g.dtype, tir_op.max(hy * hx, 1))

            def contrib(b, ch, y, x, iy, ix):
                return g[b, ch, iy, ix] / count(iy, ix)

        def body(b, ch, y, x):
            vy, iy = (
                _window_back(y, ri, sh, kh, pt, oh)
                if cand_h
                else _window_out(y, ri, sh, dh, pt, oh)
            )
            vx, ix = (
                _window_back(x, rj, sw, kw, pl, ow)
                if cand_w
                else _window_out(x, rj, sw, dw, pl, ow)
            )
            return te.sum(
                tir_op.if_then_else(tir_op.all(vy, vx), contrib(b, ch, y, x, iy, ix), zero),
                axis=[ri, rj],
            )

        return te.compute((n, c, h, w), body, name=f"T_{pool_type}_pool2d_grad")

    return fn


def _pool_grad_np(pool_type: str):
    def fn(
        g, data, *fwd, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout
    ):
        from ...topi import reference as ref

        (kh, kw), (sh, sw), (dh, dw) = pool_size, strides, dilation
        pt, pl, pb, pr = padding
        _, _, h, w = data.shape
        out = ref.pool2d(
            data, pool_size, strides, dilation, padding, pool_type, ceil_mode, count_include_pad
        )
        dx = np.zeros(data.shape, dtype=np.float64)
        for y in range(g.shape[2]):
            for x in range(g.shape[3]):
                ys = [v for v in (y * sh - pt + i * dh for i in range(kh)) if 0 <= v < h]
                xs = [v for v in (x * sw - pl + j * dw for j in range(kw)) if 0 <= v < w]
                if pool_type == "max":
                    win = data[:, :, ys][:, :, :, xs]
                    hit = win == out[:, :, y : y + 1, x : x + 1]
                    dx[:, :, np.array(ys)[:, None], np.array(xs)[None, :]] += (
                        hit * g[:, :, y : y + 1, x : x + 1]
                    )
                else:
                    if count_include_pad:
                        y0, x0 = y * sh - pt, x * sw - pl
                        cy = ref.padded_taps(y0, kh, dh, h + pb)
                        cx = ref.padded_taps(x0, kw, dw, w + pr)
                        cnt = max(cy * cx, 1)
                    else:
                        cnt = max(len(ys) * len(xs), 1)
                    if ys and xs:
                        dx[:, :, np.array(ys)[:, None], np.array(xs)[None, :]] += (
                            g[:, :, y : y + 1, x : x + 1] / cnt
                        )
        return dx.astype(g.dtype)

    return fn


def _infer_like_arg1(call: Call) -> StructInfo:
    g = I.tensor_arg(call, 0, "output_grad")
    data = I.tensor_arg(call, 1, "data")
    if len(call.args) > 2 and call.op.name == "relax.nn.max_pool2d_grad":
        out = I.tensor_arg(call, 2, "out")
        if g.ndim != -1 and out.ndim != -1 and out.ndim != g.ndim:
            raise ShapeError(
                f"{call.op.name}: out (the forward output) has rank {out.ndim}, expected the "
                f"rank of output_grad ({g.ndim}); pass max_pool2d's result as out="
            )
    elif len(call.args) > 2:
        raise ShapeError(
            f"{call.op.name}: takes (output_grad, data), got {len(call.args)} arguments"
        )
    return data


_max_pool2d_grad = register_op(
    "relax.nn.max_pool2d_grad",
    _infer_like_arg1,
    _pool_grad_te("max"),
    _pool_grad_np("max"),
    OpPattern.OUT_EWISE_FUSABLE,
)
_avg_pool2d_grad = register_op(
    "relax.nn.avg_pool2d_grad",
    _infer_like_arg1,
    _pool_grad_te("avg"),
    _pool_grad_np("avg"),
    OpPattern.OUT_EWISE_FUSABLE,
)


def max_pool2d_grad(
    output_grad: Expr, data: Expr, *, out: Expr | None = None, **attrs: Any
) -> Call:
    """Gradient of max_pool2d (every input equal to its window's max receives the window's grad).

    `out`, max_pool2d's own result for `data`, saves the kernel computing the max again."""
    args = (output_grad, data) if out is None else (output_grad, data, out)
    return make_call(_max_pool2d_grad, args, attrs)


def avg_pool2d_grad(output_grad: Expr, data: Expr, **attrs: Any) -> Call:
    """Gradient of avg_pool2d: each window's grad spread evenly over the inputs it averaged."""
    return make_call(_avg_pool2d_grad, (output_grad, data), attrs)


# ----------------------------------------------------------------------------- take backward


def _te_take_backward_rows(g, indices, data_shape, mode):
    """axis 0 (an embedding's gradient): zero the table, then add each index's gradient row to
    the row it names: tokens x width adds, where the reduction form below does vocab x tokens x
    width (262 M for a 1000-word table, 1024 tokens, width 256)."""
    from ...tir import ir_builder
    from ...topi.scatter import _loops

    dim = tir_cast("int64", data_shape[0])
    zero = make_const(g.dtype, 0)

    def body(ins: list, outs: list) -> Any:
        ib = ir_builder.create()
        grad, idx, out = (ib.buffer_ptr(b) for b in (*ins, outs[0]))
        with _loops(ib, data_shape, "i") as i:
            out[i] = zero
        with _loops(ib, indices.shape, "t") as t:
            raw = tir_cast("int64", idx[t])
            pos = ib.let(
                "pos",
                tir_op.floormod(raw, dim)
                if mode == "wrap"
                else tir_op.min(tir_op.max(raw, make_const("int64", 0)), dim - 1),
            )
            with _loops(ib, data_shape[1:], "w") as w:
                out[(pos, *w)] = out[(pos, *w)] + grad[(*t, *w)]
        return ib.get()

    return te.extern(tuple(data_shape), [g, indices], body, name="T_take_grad", dtype=g.dtype)


def _te_take_backward(g, indices, data_shape, axis, mode):
    if axis == 0:
        return _te_take_backward_rows(g, indices, data_shape, mode)
    ni = len(indices.shape)
    dim = data_shape[axis]
    raxes = [te.reduce_axis((0, e), f"r{k}") for k, e in enumerate(indices.shape)]
    zero = make_const(g.dtype, 0)

    def body(*idx):
        raw = tir_cast(dim.dtype, indices[tuple(raxes)])
        pos = raw % dim if mode == "wrap" else tir_op.min(tir_op.max(raw, 0), dim - 1)
        src = tuple(idx[:axis]) + tuple(raxes) + tuple(idx[axis + 1 :])
        return te.sum(tir_op.if_then_else(pos == idx[axis], g[src], zero), axis=raxes)

    del ni
    return te.compute(tuple(data_shape), body, name="T_take_grad")


def _np_take_backward(g, indices, data_shape, axis, mode):
    shape = tuple(int(s) for s in data_shape)
    dim = shape[axis]
    pos = np.mod(indices, dim) if mode == "wrap" else np.clip(indices, 0, dim - 1)
    out = np.zeros(shape, dtype=np.float64)
    moved = np.moveaxis(out, axis, 0)  # a view: writes land in `out`
    gm = np.moveaxis(g.reshape(shape[:axis] + (-1,) + shape[axis + 1 :]), axis, 0)
    np.add.at(moved, pos.reshape(-1), gm)
    return out.astype(g.dtype)


_take_backward = register_op(
    "relax.take_backward",
    _infer_from_shape_arg(2),
    _te_take_backward,
    _np_take_backward,
    OpPattern.OPAQUE,
)


def take_backward(
    output_grad: Expr, indices: Expr, data_shape: Any, axis: int, mode: str = "clip"
) -> Call:
    """Scatter-add `output_grad` into a zero tensor of `data_shape` at `indices` along `axis`."""
    return make_call(
        _take_backward,
        (output_grad, indices, _shape_expr(data_shape)),
        {"axis": int(axis), "mode": mode},
    )


# ----------------------------------------------------------------------------- broadcast_like


def _infer_broadcast_like(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    like = I.tensor_arg(call, 1, "like")
    if like.shape is None:
        return TensorStructInfo(None, x.dtype, like.ndim)
    I.broadcast(call, "x", x, "like", like)
    return TensorStructInfo(like.shape, x.dtype)


def _te_broadcast_like(x, like):
    return te.compute(
        like.shape,
        lambda *i: x[broadcast_index(x, like.shape, i)],
        name="T_broadcast_like",
        tag="broadcast",
    )


_broadcast_like = register_op(
    "relax.broadcast_like",
    _infer_broadcast_like,
    _te_broadcast_like,
    lambda x, like: np.broadcast_to(x, like.shape).astype(x.dtype),
    OpPattern.BROADCAST,
)


def broadcast_like(x: Expr, like: Expr) -> Call:
    """`x` broadcast to the shape of `like` (only like's shape is used; symbolic dims fine)."""
    return make_call(_broadcast_like, (x, like))


def _shape_expr(shape: Any) -> Expr:
    return shape if isinstance(shape, Expr) else ShapeExpr(tuple(shape))
