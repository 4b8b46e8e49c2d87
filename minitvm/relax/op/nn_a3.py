"""Two `relax.op.nn` ops that TVM's `nn.op` emits directly: `prelu` (channel-wise leaky ReLU
with a learned slope) and `rms_norm` (root-mean-square normalisation, as in Llama)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te, tir
from ...error import ShapeError
from ...topi.utils import fmt_shape, normalize_axes, prove_equal
from ..expr import Call, Expr
from ..struct_info import StructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op

# ----------------------------------------------------------------------------- prelu


def _infer_prelu(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    alpha = I.tensor_arg(call, 1, "alpha")
    I.require_float(call, x, "data")
    I.same_dtype(call, [("data", x), ("alpha", alpha)])
    if x.ndim == -1:
        return x
    axis = I.axis_of(call, call.attrs["axis"], x.ndim)
    if alpha.ndim not in (-1, 1):
        raise ShapeError(
            f"relax.nn.prelu: alpha must be 1-D (one slope per channel of axis {axis}), got "
            f"{I.fmt(alpha)}"
        )
    known = x.shape is not None and alpha.shape is not None
    if known and not prove_equal(alpha.shape[0], x.shape[axis]):
        raise ShapeError(
            f"relax.nn.prelu: alpha has shape {fmt_shape(alpha.shape)}, expected "
            f"({x.shape[axis]},): dim {axis} of data {fmt_shape(x.shape)}"
        )
    return x


def _te_prelu(data: te.Tensor, alpha: te.Tensor, axis: int) -> te.Tensor:
    axis = axis % len(data.shape)
    zero = tir.const(0, data.dtype)

    def body(*i: Any) -> Any:
        x = data[i]
        return tir.Select(x > zero, x, x * alpha[i[axis]])

    return te.compute(data.shape, body, name="T_prelu", tag="elemwise")


def _np_prelu(x: np.ndarray, alpha: np.ndarray, axis: int) -> np.ndarray:
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return np.where(x > 0, x, x * alpha.reshape(shape)).astype(x.dtype)


_prelu = register_op("relax.nn.prelu", _infer_prelu, _te_prelu, _np_prelu, OpPattern.BROADCAST)


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    """x where x > 0, else alpha[c] * x with c the index along `axis`: `nn.prelu(x, alpha)`."""
    return make_call(_prelu, (data, alpha), {"axis": int(axis)})


# ----------------------------------------------------------------------------- rms_norm


def _infer_rms_norm(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    w = I.tensor_arg(call, 1, "weight")
    I.require_float(call, x, "data")
    I.same_dtype(call, [("data", x), ("weight", w)])
    if x.ndim == -1:
        return x
    axes = normalize_axes(call.attrs["axes"], x.ndim, "relax.nn.rms_norm")
    if x.shape is not None and w.shape is not None:
        want = tuple(x.shape[a] for a in axes)
        if len(w.shape) != len(want) or not all(map(prove_equal, w.shape, want)):
            raise ShapeError(
                f"relax.nn.rms_norm: weight has shape {fmt_shape(w.shape)}, expected "
                f"{fmt_shape(want)} (dims {list(axes)} of data {fmt_shape(x.shape)})"
            )
    return x


def _acc_dtype(dtype: str) -> str:
    """16-bit floats accumulate in float32 (their sum of squares overflows or loses digits)."""
    return "float32" if str(dtype) in ("float16", "bfloat16") else str(dtype)


def _te_rms_norm(data: te.Tensor, weight: te.Tensor, axes: Any, epsilon: float) -> te.Tensor:
    nd = len(data.shape)
    axes = normalize_axes(axes, nd, "topi.nn.rms_norm")
    kept = [n for n in range(nd) if n not in axes]
    acc = _acc_dtype(data.dtype)
    count = tir.const(1, acc)
    for a in axes:
        count = count * tir.Cast(acc, data.shape[a])
    red = [te.reduce_axis((0, data.shape[a]), f"k{a}") for a in axes]

    def full_index(kept_idx: tuple) -> tuple:
        it_k, it_r = iter(kept_idx), iter(red)
        return tuple(next(it_r) if n in axes else next(it_k) for n in range(nd))

    def square_sum(*idx: Any) -> Any:
        v = tir.Cast(acc, data[full_index(idx)])
        return te.sum(v * v, axis=red)

    sq = te.compute(tuple(data.shape[n] for n in kept), square_sum, name="T_rms_sq", tag="reduce")
    eps = tir.const(float(epsilon), acc)

    def body(*i: Any) -> Any:
        k = tuple(i[n] for n in kept)
        scale = tir.rsqrt(sq[k] / count + eps)
        x = tir.Cast(acc, data[i]) * scale * tir.Cast(acc, weight[tuple(i[a] for a in axes)])
        return tir.Cast(data.dtype, x)

    return te.compute(data.shape, body, name="T_rms_norm", tag="elemwise")


def _np_rms_norm(x: np.ndarray, weight: np.ndarray, axes: Any, epsilon: float) -> np.ndarray:
    axes = tuple(sorted(normalize_axes(axes, x.ndim, "rms_norm")))
    xf = x.astype(_acc_dtype(x.dtype))
    ms = np.mean(xf * xf, axis=axes, keepdims=True)
    shape = [x.shape[n] if n in axes else 1 for n in range(x.ndim)]
    out = xf / np.sqrt(ms + epsilon) * weight.astype(xf.dtype).reshape(shape)
    return out.astype(x.dtype)


_rms_norm = register_op(
    "relax.nn.rms_norm", _infer_rms_norm, _te_rms_norm, _np_rms_norm, OpPattern.OUT_EWISE_FUSABLE
)


def rms_norm(data: Expr, weight: Expr, axes: Any = -1, epsilon: float = 1e-5) -> Call:
    """data / sqrt(mean(data^2 over `axes`) + epsilon) * weight (weight shaped like those axes)."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes)
    return make_call(_rms_norm, (data, weight), {"axes": axes, "epsilon": float(epsilon)})


__all__ = ["prelu", "rms_norm"]
