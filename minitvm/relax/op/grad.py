"""Gradient rules: the `grad` column of the op table, and the few backward ops they need.

Each rule is `rule(orig_var, orig_call, output_grad, builder) -> [grad of each argument]`,
built from relax op calls so the backward graph goes through the same pipeline as the forward
one (legalized, fused, memory-planned). `orig_var` is the forward result (rules reuse it:
exp, tanh, softmax, ...), `output_grad` the adjoint of that result (a Tuple for tuple-valued
ops), `builder` has `emit(expr)` for values a rule uses twice. An argument that has no gradient
(indices, shapes) gets `None`; a Tuple argument (concat) gets a list, one entry per field.
Broadcasting is undone by summing over the broadcast axes (`collapse_sum_to`).

New ops (each an ordinary table row: shape rule, TE, numpy reference):
`relax.erf`, `relax.nn.relu_grad(x, g)` (g where x > 0), `relax.nn.conv2d_backward_data`,
`relax.nn.conv2d_backward_weight`, `relax.nn.max_pool2d_grad`, `relax.nn.avg_pool2d_grad`,
`relax.take_backward` (scatter-add of an embedding gradient); `relax.equal` (elementwise.py)
masks the arg-max/min of max/min reductions (ties: every tied element gets the gradient).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import te
from ...error import MiniTVMError, ShapeError
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ...topi.broadcast import _binary as _topi_binary
from ...topi.broadcast import broadcast_index
from ...topi.nn.pooling import _valid_taps
from ...topi.nn.pooling import pool2d as topi_pool2d
from ...topi.transform import slice_bounds
from ...topi.utils import const_int, fmt_dim, fmt_shape, normalize_axes, normalize_axis, prove_equal
from ..expr import Call, Expr, ShapeExpr, Tuple, TupleGetItem, const
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from . import create, elementwise, linear_algebra, manipulate, statistical
from ._table import OP_TABLE, OpPattern, make_call, register_op
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


def _tap(out_idx: Any, tap: Any, s: int, d: int, lo: int) -> Any:
    """Input position of tap `tap` of output `out_idx` (may be out of range)."""
    return out_idx * s + tap * d - lo


def _window_out(pos: Any, tap: Any, s: int, d: int, lo: int, size_out: Any) -> tuple[Any, Any]:
    """(valid, output index) of the window whose tap `tap` reads input `pos`."""
    num = pos + lo - tap * d
    if s == 1:
        return tir_op.all(num >= 0, num < size_out), num
    return (
        tir_op.all(num >= 0, tir_op.floormod(num, s) == 0, tir_op.floordiv(num, s) < size_out),
        tir_op.floordiv(num, s),
    )


def _te_conv2d_bwd_data(g, weight, data_shape, strides, padding, dilation):
    n, c, h, w = data_shape
    o, _, kh, kw = weight.shape
    oh, ow = g.shape[2], g.shape[3]
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    ro = te.reduce_axis((0, o), "ro")
    ri = te.reduce_axis((0, kh), "ri")
    rj = te.reduce_axis((0, kw), "rj")
    zero = make_const(g.dtype, 0)

    def body(b, ch, y, x):
        vy, iy = _window_out(y, ri, sh, dh, pt, oh)
        vx, ix = _window_out(x, rj, sw, dw, pl, ow)
        value = tir_op.if_then_else(
            tir_op.all(vy, vx), g[b, ro, iy, ix] * weight[ro, ch, ri, rj], zero
        )
        return te.sum(value, axis=[ro, ri, rj])

    return te.compute((n, c, h, w), body, name="T_conv2d_grad_data")


def _te_conv2d_bwd_weight(g, data, weight_shape, strides, padding, dilation):
    o, c, kh, kw = weight_shape
    n, _, h, w = data.shape
    oh, ow = g.shape[2], g.shape[3]
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    rn = te.reduce_axis((0, n), "rn")
    ry = te.reduce_axis((0, oh), "ry")
    rx = te.reduce_axis((0, ow), "rx")
    zero = make_const(g.dtype, 0)

    def body(oc, ch, i, j):
        py, px = _tap(ry, i, sh, dh, pt), _tap(rx, j, sw, dw, pl)
        ok = tir_op.all(py >= 0, py < h, px >= 0, px < w)
        value = tir_op.if_then_else(ok, g[rn, oc, ry, rx] * data[rn, ch, py, px], zero)
        return te.sum(value, axis=[rn, ry, rx])

    return te.compute((o, c, kh, kw), body, name="T_conv2d_grad_weight")


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
    def fn(g, data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout):
        n, c, h, w = data.shape
        (kh, kw), (sh, sw), (dh, dw) = pool_size, strides, dilation
        pt, pl, pb, pr = padding
        oh, ow = g.shape[2], g.shape[3]
        ri = te.reduce_axis((0, kh), "ri")
        rj = te.reduce_axis((0, kw), "rj")
        zero = make_const(g.dtype, 0)
        if pool_type == "max":
            out = topi_pool2d(
                data, pool_size, strides, dilation, padding, "max", ceil_mode, False, layout
            )

            def contrib(b, ch, y, x, iy, ix):
                hit = data[b, ch, y, x] == out[b, ch, iy, ix]
                return tir_op.if_then_else(hit, g[b, ch, iy, ix], zero)

        else:

            def count(iy, ix):
                y0, x0 = iy * sh - pt, ix * sw - pl
                if count_include_pad:
                    hy = tir_op.min(y0 + dh * (kh - 1) + 1, h + pb) - tir_op.max(y0, -pt)
                    hx = tir_op.min(x0 + dw * (kw - 1) + 1, w + pr) - tir_op.max(x0, -pl)
                else:
                    hy, hx = _valid_taps(y0, kh, dh, h), _valid_taps(x0, kw, dw, w)
                return tir_cast(g.dtype, tir_op.max(hy * hx, 1))

            def contrib(b, ch, y, x, iy, ix):
                return g[b, ch, iy, ix] / count(iy, ix)

        def body(b, ch, y, x):
            vy, iy = _window_out(y, ri, sh, dh, pt, oh)
            vx, ix = _window_out(x, rj, sw, dw, pl, ow)
            return te.sum(
                tir_op.if_then_else(tir_op.all(vy, vx), contrib(b, ch, y, x, iy, ix), zero),
                axis=[ri, rj],
            )

        return te.compute((n, c, h, w), body, name=f"T_{pool_type}_pool2d_grad")

    return fn


def _pool_grad_np(pool_type: str):
    def fn(g, data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout):
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
                        cy = min(y0 + dh * (kh - 1) + 1, h + pb) - max(y0, -pt)
                        cx = min(x0 + dw * (kw - 1) + 1, w + pr) - max(x0, -pl)
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
    I.tensor_arg(call, 0, "output_grad")
    return I.tensor_arg(call, 1, "data")


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


def max_pool2d_grad(output_grad: Expr, data: Expr, **attrs: Any) -> Call:
    """Gradient of max_pool2d (every input equal to its window's max receives the window's grad)."""
    return make_call(_max_pool2d_grad, (output_grad, data), attrs)


def avg_pool2d_grad(output_grad: Expr, data: Expr, **attrs: Any) -> Call:
    """Gradient of avg_pool2d: each window's grad spread evenly over the inputs it averaged."""
    return make_call(_avg_pool2d_grad, (output_grad, data), attrs)


# ----------------------------------------------------------------------------- take backward


def _te_take_backward(g, indices, data_shape, axis, mode):
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


# ============================================================================ helpers


def _shape_expr(shape: Any) -> Expr:
    return shape if isinstance(shape, Expr) else ShapeExpr(tuple(shape))


def shape_of(e: Expr, what: str = "") -> tuple:
    sinfo = e.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        raise ShapeError(
            f"relax.Gradient: {what or 'a value'} has no known shape ({sinfo}); gradients need "
            "tensors of known rank and shape (symbolic dims are fine)"
        )
    return tuple(sinfo.shape)


def dtype_of(e: Expr) -> str:
    return str(e.struct_info.dtype)


def zeros_like(e: Expr) -> Call:
    return broadcast_like(const(0, dtype_of(e)), e)


def ones_like(e: Expr) -> Call:
    return broadcast_like(const(1, dtype_of(e)), e)


def _same_shape(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(prove_equal(x, y) for x, y in zip(a, b))


def broadcast_to(e: Expr, like: Expr) -> Expr:
    """`e` broadcast (numpy rules) to the shape of `like`."""
    if _same_shape(shape_of(e), shape_of(like)):
        return e
    return broadcast_like(e, like)


def collapse_sum_to(g: Expr, shape: Sequence[Any]) -> Expr:
    """Sum `g` over the axes along which a tensor of `shape` was broadcast to g's shape."""
    gshape = shape_of(g, "an output gradient")
    shape = tuple(shape)
    lead = len(gshape) - len(shape)
    axes = list(range(lead)) + [
        lead + k
        for k, d in enumerate(shape)
        if const_int(d) == 1 and const_int(gshape[lead + k]) != 1
    ]
    if not axes:
        return g
    # keepdims=False, then reshape: the reshape fuses into consumers (a keepdims sum leaves an
    # extent-1 spatial loop in the reduction block, which the default schedule handles worse)
    out = statistical.sum(g, axes, keepdims=False)
    return manipulate.reshape(out, shape)


def _reduce_to(g: Expr, like: Expr) -> Expr:
    return collapse_sum_to(g, shape_of(like))


# ============================================================================ rules


def _binary(fn: Callable[[Any, Call, Expr, Any, Expr, Expr], tuple]) -> Callable:
    def rule(var: Any, call: Call, g: Expr, bb: Any) -> list:
        a, b = call.args
        ga, gb = fn(var, call, g, bb, a, b)
        return [_reduce_to(ga, a), _reduce_to(gb, b)]

    return rule


def _maximum(var, call, g, bb, a, b):
    ga = bb.emit(relu_grad(elementwise.subtract(a, b), g))
    return ga, elementwise.subtract(g, ga)


def _minimum(var, call, g, bb, a, b):
    ga = bb.emit(relu_grad(elementwise.subtract(b, a), g))
    return ga, elementwise.subtract(g, ga)


def _power(var, call, g, bb, a, b):
    ga = elementwise.multiply(
        g, elementwise.multiply(b, elementwise.power(a, elementwise.subtract(b, 1.0)))
    )
    gb = elementwise.multiply(elementwise.multiply(g, var), elementwise.log(a))
    return ga, gb


def _unary(fn: Callable[[Any, Expr, Expr], Expr]) -> Callable:
    return lambda var, call, g, bb: [fn(var, call.args[0], g)]


E = elementwise
_SQRT_2_OVER_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu(y, x, g):
    cdf = E.multiply(E.add(erf(E.multiply(x, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
    pdf = E.multiply(E.exp(E.multiply(E.multiply(x, x), -0.5)), _INV_SQRT_2PI)
    return E.multiply(g, E.add(cdf, E.multiply(x, pdf)))


def _keepdims_shape(call: Call) -> tuple:
    x = call.args[0]
    xs = shape_of(x)
    axes = normalize_axes(call.attrs["axis"], len(xs), call.op.name)
    return tuple(1 if k in axes else d for k, d in enumerate(xs)), axes


def _sum(var, call, g, bb):
    x = call.args[0]
    keep, _ = _keepdims_shape(call)
    return [broadcast_to(manipulate.reshape(g, keep), x)]


def _mean(var, call, g, bb):
    x = call.args[0]
    keep, axes = _keepdims_shape(call)
    xs = shape_of(x)
    counts = [const_int(xs[a]) for a in axes]
    if any(c is None for c in counts):
        raise MiniTVMError(
            f"relax.Gradient: mean over the symbolic dims of {fmt_shape(xs)} is not supported; "
            "use relax.op.sum and divide by the count"
        )
    scale = 1.0 / float(np.prod(counts)) if counts else 1.0
    return [broadcast_to(manipulate.reshape(E.multiply(g, scale), keep), x)]


def _sum_keepdims(x: Expr, axis: int) -> Expr:
    shape = shape_of(x)
    axis = normalize_axis(axis, len(shape), "relax.sum")
    keep = tuple(1 if k == axis else d for k, d in enumerate(shape))
    return manipulate.reshape(statistical.sum(x, [axis]), keep)


def _softmax(y, call, g, bb):
    axis = call.attrs["axis"]
    dot = _sum_keepdims(E.multiply(g, y), axis)
    return [E.multiply(y, E.subtract(g, dot))]


def _log_softmax(y, call, g, bb):
    axis = call.attrs["axis"]
    total = _sum_keepdims(g, axis)
    return [E.subtract(g, E.multiply(E.exp(y), total))]


def _swap_last(e: Expr) -> Expr:
    n = len(shape_of(e))
    return manipulate.permute_dims(e, list(range(n - 2)) + [n - 1, n - 2])


def _matmul(var, call, g, bb):
    a, b = call.args
    sa, sb = shape_of(a), shape_of(b)
    a2 = manipulate.expand_dims(a, 0) if len(sa) == 1 else a  # (1, K)
    b2 = manipulate.expand_dims(b, 1) if len(sb) == 1 else b  # (K, 1)
    g2 = g
    if len(sa) == 1:
        g2 = manipulate.expand_dims(g2, len(shape_of(g2)) - (0 if len(sb) == 1 else 1))
    if len(sb) == 1:
        g2 = manipulate.expand_dims(g2, len(shape_of(g2)))
    a2s = shape_of(a2) if len(sa) == 1 else sa
    b2s = shape_of(b2) if len(sb) == 1 else sb
    ga = collapse_sum_to(linear_algebra.matmul(g2, _swap_last(b2)), a2s)
    gb = collapse_sum_to(linear_algebra.matmul(_swap_last(a2), g2), b2s)
    if len(sa) == 1:
        ga = manipulate.reshape(ga, sa)
    if len(sb) == 1:
        gb = manipulate.reshape(gb, sb)
    return [ga, gb]


def _linear(var, call, g, bb):
    x, w = call.args[0], call.args[1]
    xs, ws = shape_of(x), shape_of(w)
    gx = linear_algebra.matmul(g, w)
    g2 = g if len(xs) == 2 else manipulate.reshape(g, (-1, ws[0]))
    x2 = x if len(xs) == 2 else manipulate.reshape(x, (-1, ws[1]))
    gw = linear_algebra.matmul(manipulate.permute_dims(g2, [1, 0]), x2)
    grads = [gx, gw]
    if len(call.args) > 2:
        grads.append(statistical.sum(g, list(range(len(shape_of(g)) - 1))))
    return grads


def _reshape_back(var, call, g, bb):
    return [manipulate.reshape(g, shape_of(call.args[0]))] + [None] * (len(call.args) - 1)


def _permute(var, call, g, bb):
    n = len(shape_of(call.args[0]))
    axes = call.attrs["axes"] or tuple(reversed(range(n)))
    inv = [0] * n
    for k, a in enumerate(axes):
        inv[normalize_axis(a, n, "relax.permute_dims")] = k
    return [manipulate.permute_dims(g, inv)]


def _astype(var, call, g, bb):
    x = call.args[0]
    return [manipulate.astype(g, dtype_of(x)) if x.struct_info.dtype.is_float else None]


def _strided_slice(var, call, g, bb):
    x = call.args[0]
    xs = list(shape_of(x))
    a = call.attrs
    strides = a["strides"] or (1,) * len(a["axes"])
    out = g
    cur = list(shape_of(g))
    for ax, b, e, s in zip(a["axes"], a["begin"], a["end"], strides):
        axis = normalize_axis(ax, len(xs), "relax.strided_slice")
        size = const_int(xs[axis])
        if s != 1 or size is None:
            raise MiniTVMError(
                f"relax.Gradient: strided_slice with stride {s} on axis {axis} of x {fmt_shape(xs)}: "
                "only stride 1 over a static dim has a gradient rule"
            )
        start, ext = slice_bounds(size, b, e, s)
        parts = []
        for width in (start, size - start - ext):
            if width > 0:
                parts.append(
                    create.zeros(
                        tuple(width if k == axis else d for k, d in enumerate(cur)), dtype_of(g)
                    )
                )
        if start > 0:
            parts = [parts[0], out] + parts[1:]
        else:
            parts = [out] + parts
        out = manipulate.concat(parts, axis) if len(parts) > 1 else out
        cur[axis] = size
    return [out]


def _concat(var, call, g, bb):
    fields = call.args[0].fields if isinstance(call.args[0], Tuple) else None
    if fields is None:
        raise MiniTVMError("relax.Gradient: concat of a tuple variable; pass the tensors as a list")
    ndim = len(shape_of(g))
    axis = normalize_axis(call.attrs["axis"], ndim, "relax.concat")
    grads, start = [], 0
    for f in fields:
        ext = const_int(shape_of(f)[axis])
        if ext is None:
            raise MiniTVMError("relax.Gradient: concat along a symbolic dim has no gradient rule")
        grads.append(manipulate.strided_slice(g, [axis], [start], [start + ext]))
        start += ext
    return [grads]


def _split(var, call, g, bb):
    parts = (
        g.fields
        if isinstance(g, Tuple)
        else [bb.emit(TupleGetItem(g, i)) for i in range(len(var.struct_info.fields))]
    )
    return [manipulate.concat(list(parts), call.attrs["axis"])]


def _take(var, call, g, bb):
    x, idx = call.args
    xs = shape_of(x)
    axis, mode = call.attrs["axis"], call.attrs["mode"]
    if axis is None:
        flat = take_backward(g, idx, (int(np.prod([const_int(d) for d in xs])),), 0, mode)
        return [manipulate.reshape(flat, xs), None]
    return [take_backward(g, idx, xs, normalize_axis(axis, len(xs), "relax.take"), mode), None]


def _require_layouts(call: Call, **want: str) -> None:
    """The gradient rules are written for NCHW data; other layouts are refused, not guessed."""
    for key, layout in want.items():
        got = call.attrs.get(key) or layout  # conv2d's out_layout None follows data_layout
        if got != layout:
            raise MiniTVMError(
                f"relax.Gradient: {call.op.name} with {key}={got!r} has no gradient rule "
                f"({key}={layout!r} only); differentiate the graph before converting layouts"
            )


def _conv2d(var, call, g, bb):
    data, weight = call.args
    _require_layouts(call, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW")
    if call.attrs["groups"] != 1:
        raise MiniTVMError(
            f"relax.Gradient: conv2d with groups={call.attrs['groups']} has no gradient rule (groups=1 only)"
        )
    attrs = _conv_attrs(call.attrs)
    return [
        conv2d_backward_data(g, weight, shape_of(data), **attrs),
        conv2d_backward_weight(g, data, shape_of(weight), **attrs),
    ]


def _pool(grad_op: Callable) -> Callable:
    def rule(var, call, g, bb):
        _require_layouts(call, layout="NCHW")
        return [grad_op(g, call.args[0], **dict(call.attrs))]

    return rule


def _relu_grad_rule(var, call, g, bb):
    x, _ = call.args
    return [None, _reduce_to(relu_grad(x, g), call.args[1])]


def _sign_mask(x: Expr, g: Expr) -> Expr:
    return E.subtract(relu_grad(x, g), relu_grad(E.negative(x), g))


def _max_min(var, call, g, bb):
    """Every input equal to its (broadcast) result gets the whole output grad (ties: all of them,
    as in max_pool2d_grad)."""
    x = call.args[0]
    keep, _ = _keepdims_shape(call)
    y = manipulate.reshape(var, keep)
    mask = manipulate.astype(elementwise.equal(x, y), dtype_of(x))
    return [E.multiply(mask, manipulate.reshape(g, keep))]


def _prod(var, call, g, bb):
    """d prod / d x_i = prod / x_i: exact for nonzero inputs; a zero input gives inf/nan (the
    division is not special-cased)."""
    x = call.args[0]
    keep, _ = _keepdims_shape(call)
    scaled = E.multiply(manipulate.reshape(g, keep), manipulate.reshape(var, keep))
    return [E.divide(scaled, x)]


def _static_count(x: Expr, axes: Sequence[int], what: str) -> int:
    xs = shape_of(x)
    counts = [const_int(xs[a]) for a in axes]
    if any(c is None for c in counts):
        raise MiniTVMError(
            f"relax.Gradient: {what} over the symbolic dims {[fmt_dim(xs[a]) for a in axes]} of "
            f"data {fmt_shape(xs)} is not supported; make those dims static"
        )
    return int(np.prod(counts)) if counts else 1


def _param_layout(x: Expr, axes: Sequence[int]) -> tuple:
    """Shape of a per-`axes` parameter broadcast against `x` (1 on the other axes)."""
    xs = shape_of(x)
    return tuple(d if k in axes else 1 for k, d in enumerate(xs))


def _layer_norm(var, call, g, bb):
    """dx = rstd * (dxh - mean(dxh) - xh * mean(dxh * xh)) over the normalised axes, where
    xh = (x - mean) * rstd and dxh = g * gamma; dgamma = sum(g * xh), dbeta = sum(g) over the
    other axes."""
    x, gamma, beta = call.args
    a = call.attrs
    xs = shape_of(x)
    axes = list(normalize_axes(a["axes"], len(xs), "relax.nn.layer_norm"))
    other = [k for k in range(len(xs)) if k not in axes]
    inv_n = 1.0 / _static_count(x, axes, "layer_norm")
    layout = _param_layout(x, axes)

    def mean_keep(e: Expr) -> Expr:
        return E.multiply(statistical.sum(e, axes, keepdims=True), inv_n)

    xc = bb.emit(E.subtract(x, mean_keep(x)))
    var_ = mean_keep(E.multiply(xc, xc))
    rstd = bb.emit(E.divide(1.0, E.sqrt(E.add(var_, a["epsilon"]))))
    xh = bb.emit(E.multiply(xc, rstd))
    dxh = bb.emit(E.multiply(g, manipulate.reshape(gamma, layout)) if a["scale"] else g)
    dx = E.multiply(
        rstd,
        E.subtract(E.subtract(dxh, mean_keep(dxh)), E.multiply(xh, mean_keep(E.multiply(dxh, xh)))),
    )

    def param_grad(e: Expr, p: Expr) -> Expr:
        out = statistical.sum(e, other, keepdims=False) if other else e
        return manipulate.reshape(out, shape_of(p))

    dgamma = param_grad(E.multiply(g, xh), gamma) if a["scale"] else None
    dbeta = param_grad(g, beta) if a["center"] else None
    return [dx, dgamma, dbeta]


def _batch_norm(var, call, g, bb):
    """Inference batch norm: out = (x - m) * rstd * gamma + beta with rstd = 1/sqrt(v + eps);
    grads w.r.t. data, gamma, beta, moving_mean and moving_var (which the op also returns)."""
    x, gamma, _beta, m, v = call.args
    a = call.attrs
    xs = shape_of(x)
    axis = normalize_axis(a["axis"], len(xs), "relax.nn.batch_norm")
    other = [k for k in range(len(xs)) if k != axis]
    layout = _param_layout(x, [axis])
    g0, g1, g2 = (
        g.fields if isinstance(g, Tuple) else [bb.emit(TupleGetItem(g, i)) for i in range(3)]
    )
    rstd = bb.emit(E.divide(1.0, E.sqrt(E.add(v, a["epsilon"]))))  # (C,)
    scale = bb.emit(E.multiply(rstd, gamma) if a["scale"] else rstd)  # (C,)
    xc = bb.emit(E.subtract(x, manipulate.reshape(m, layout)))

    def per_channel(e: Expr) -> Expr:
        return manipulate.reshape(statistical.sum(e, other, keepdims=False), shape_of(gamma))

    g0s = bb.emit(per_channel(g0))  # sum(g0) per channel
    g0xc = bb.emit(per_channel(E.multiply(g0, xc)))  # sum(g0 * (x - m)) per channel
    dx = E.multiply(g0, manipulate.reshape(scale, layout))
    dgamma = E.multiply(g0xc, rstd) if a["scale"] else None
    dbeta = g0s if a["center"] else None
    dm = E.subtract(g1, E.multiply(g0s, scale))
    rstd3 = E.multiply(E.multiply(rstd, rstd), scale)  # rstd^3 * gamma
    dv = E.add(g2, E.multiply(E.multiply(g0xc, rstd3), -0.5))
    return [dx, dgamma, dbeta, dm, dv]


def _adaptive_avg_pool2d(var, call, g, bb):
    """Windows that tile H, W evenly (always so for output (1, 1) and for None) are an avg_pool2d;
    other output sizes (overlapping, uneven windows) have no rule."""
    x = call.args[0]
    _require_layouts(call, layout="NCHW")
    xs = shape_of(x)
    size = call.attrs["output_size"]
    if size is None:
        return [g]
    h, w = const_int(xs[2]), const_int(xs[3])
    oh, ow = (const_int(d) for d in size)
    if h is None or w is None or oh is None or ow is None or h % oh or w % ow:
        raise MiniTVMError(
            f"relax.Gradient: adaptive_avg_pool2d of data {fmt_shape(xs)} to output_size "
            f"{tuple(size)}: only static H, W divisible by the output size have a gradient rule; "
            "use avg_pool2d with pool_size = strides = (H // OH, W // OW)"
        )
    if (oh, ow) == (1, 1):
        return [broadcast_to(E.multiply(g, 1.0 / float(h * w)), x)]
    k = (h // oh, w // ow)
    attrs = {
        "pool_size": k,
        "strides": k,
        "padding": (0, 0, 0, 0),
        "dilation": (1, 1),
        "ceil_mode": False,
        "count_include_pad": False,
        "layout": "NCHW",
    }
    return [avg_pool2d_grad(g, x, **attrs)]


GRAD_RULES: dict[str, Callable[..., list]] = {
    "relax.add": _binary(lambda v, c, g, bb, a, b: (g, g)),
    "relax.subtract": _binary(lambda v, c, g, bb, a, b: (g, E.negative(g))),
    "relax.multiply": _binary(lambda v, c, g, bb, a, b: (E.multiply(g, b), E.multiply(g, a))),
    "relax.divide": _binary(
        lambda v, c, g, bb, a, b: (E.divide(g, b), E.negative(E.divide(E.multiply(g, v), b)))
    ),
    "relax.power": _binary(_power),
    "relax.maximum": _binary(_maximum),
    "relax.minimum": _binary(_minimum),
    "relax.negative": _unary(lambda y, x, g: E.negative(g)),
    "relax.abs": _unary(lambda y, x, g: _sign_mask(x, g)),
    "relax.exp": _unary(lambda y, x, g: E.multiply(g, y)),
    "relax.log": _unary(lambda y, x, g: E.divide(g, x)),
    "relax.sqrt": _unary(lambda y, x, g: E.divide(g, E.multiply(y, 2.0))),
    "relax.tanh": _unary(lambda y, x, g: E.multiply(g, E.subtract(1.0, E.multiply(y, y)))),
    "relax.sigmoid": _unary(lambda y, x, g: E.multiply(E.multiply(g, y), E.subtract(1.0, y))),
    "relax.erf": _unary(
        lambda y, x, g: E.multiply(
            g, E.multiply(E.exp(E.negative(E.multiply(x, x))), _SQRT_2_OVER_PI)
        )
    ),
    "relax.nn.relu": _unary(lambda y, x, g: relu_grad(x, g)),
    "relax.nn.relu_grad": _relu_grad_rule,
    "relax.nn.gelu": _unary(_gelu),
    "relax.nn.softmax": _softmax,
    "relax.nn.log_softmax": _log_softmax,
    "relax.matmul": _matmul,
    "relax.nn.linear": _linear,
    "relax.nn.dense": _linear,
    "relax.sum": _sum,
    "relax.mean": _mean,
    "relax.reshape": _reshape_back,
    "relax.flatten": _reshape_back,
    "relax.expand_dims": _reshape_back,
    "relax.permute_dims": _permute,
    "relax.astype": _astype,
    "relax.strided_slice": _strided_slice,
    "relax.concat": _concat,
    "relax.split": _split,
    "relax.take": _take,
    "relax.nn.conv2d": _conv2d,
    "relax.nn.max_pool2d": _pool(max_pool2d_grad),
    "relax.broadcast_like": lambda var, call, g, bb: [_reduce_to(g, call.args[0]), None],
    "relax.nn.avg_pool2d": _pool(avg_pool2d_grad),
    "relax.max": _max_min,
    "relax.min": _max_min,
    "relax.prod": _prod,
    "relax.nn.layer_norm": _layer_norm,
    "relax.nn.batch_norm": _batch_norm,
    "relax.nn.adaptive_avg_pool2d": _adaptive_avg_pool2d,
}


def _install() -> None:
    """Put each rule in its op's table row (the rows are frozen: replaced, not mutated)."""
    from ..expr import Op

    for name, rule in GRAD_RULES.items():
        op = Op.get(name)
        op.op_def = dataclasses.replace(op.op_def, grad=rule)
        OP_TABLE[name] = op.op_def


_install()

__all__ = [
    "GRAD_RULES",
    "avg_pool2d_grad",
    "broadcast_like",
    "broadcast_to",
    "collapse_sum_to",
    "conv2d_backward_data",
    "conv2d_backward_weight",
    "erf",
    "max_pool2d_grad",
    "ones_like",
    "relu_grad",
    "shape_of",
    "take_backward",
    "zeros_like",
]
