"""relax.random.dropout_mask: a seeded dropout mask computed by a counter-based hash.

`dropout_mask(key, shape, rate, stream)` is a tensor of `shape` whose every element is 0 (with
probability `rate`) or `1 / (1 - rate)`. `key` is an int64 tensor `(seed, step)`; each element
hashes (seed, step, stream, flat index) with murmur3's 32-bit finaliser, so the mask is a pure
function of its arguments: a training step that passes a new step gets a new mask, the same
(seed, step) gives the same mask on every run, and backward reads the very tensor forward
multiplied by. `stream` tells apart the dropout sites of one program.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te, tir
from ...error import ArgumentError, DTypeError, ShapeError
from ...ir.dtype import DataType
from ..expr import Call, Expr, ShapeExpr
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op

# odd multipliers of the hash: golden ratio, murmur3's two finaliser constants, a mixer for
# (step, stream)
_GOLDEN, _M1, _M2, _STREAM = 0x9E3779B1, 0x85EBCA6B, 0xC2B2AE35, 0x632BE5AB
_BITS = 24  # the kept decision compares 24 random bits with round(rate * 2**24)


def _threshold(rate: float) -> int:
    return round(float(rate) * (1 << _BITS))


def _infer_mask(call: Call) -> StructInfo:
    key = I.tensor_arg(call, 0, "key")
    if key.dtype is not None and str(key.dtype) != "int64":
        raise DTypeError(
            f"relax.random.dropout_mask: key has dtype {key.dtype}; pass an int64 tensor "
            "(seed, step) of shape (2,)"
        )
    if key.shape is not None and (len(key.shape) != 1 or int(key.shape[0]) != 2):
        raise ShapeError(
            f"relax.random.dropout_mask: key has shape {key.shape}; it must be (seed, step), "
            "shape (2,)"
        )
    shape = I.shape_arg(call, 1, "shape")
    return TensorStructInfo(shape, call.attrs["dtype"])


# ---------------------------------------------------------------- TE (the real kernel)
def _u32(v: int) -> Any:
    return tir.const(v, "uint32")


def _fmix_te(h: Any) -> Any:
    h = tir.bitwise_xor(h, tir.shift_right(h, _u32(16)))
    h = h * _u32(_M1)
    h = tir.bitwise_xor(h, tir.shift_right(h, _u32(13)))
    h = h * _u32(_M2)
    return tir.bitwise_xor(h, tir.shift_right(h, _u32(16)))


def _te_mask(key: Any, shape: Any, rate: float, dtype: str, stream: int) -> Any:
    scale = 1.0 / (1.0 - float(rate)) if rate < 1 else 0.0
    cut = _threshold(rate)

    def fcompute(*idx: Any) -> Any:
        flat = tir.const(0, "int64")
        for i, n in zip(idx, shape):
            flat = flat * tir.Cast("int64", n) + tir.Cast("int64", i)
        seed, step = key[0].astype("uint32"), key[1].astype("uint32")
        k1 = _fmix_te(tir.bitwise_xor(seed, _fmix_te(step * _u32(_STREAM) + _u32(stream))))
        k2 = _fmix_te(tir.bitwise_xor(step, _fmix_te(seed + _u32(stream * _GOLDEN % (1 << 32)))))
        h = _fmix_te(tir.bitwise_xor(_fmix_te(flat.astype("uint32") * _u32(_GOLDEN) + k1), k2))
        bits = tir.shift_right(h, _u32(32 - _BITS))
        return tir.Select(bits >= _u32(cut), tir.const(scale, dtype), tir.const(0.0, dtype))

    return te.compute(tuple(shape), fcompute, name="dropout_mask")


# ---------------------------------------------------------------- numpy (the reference)
def _fmix_np(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(_M1)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(_M2)
    return h ^ (h >> np.uint32(16))


def _np_mask(key: np.ndarray, shape: Any, rate: float, dtype: str, stream: int) -> np.ndarray:
    shape = tuple(int(s) for s in shape)
    u = lambda v: np.asarray(v, dtype=np.int64).astype(np.uint32)
    with np.errstate(over="ignore"):
        seed, step = u(key[0]), u(key[1])
        k1 = _fmix_np(seed ^ _fmix_np(step * np.uint32(_STREAM) + np.uint32(stream)))
        k2 = _fmix_np(step ^ _fmix_np(seed + np.uint32(stream * _GOLDEN % (1 << 32))))
        flat = np.arange(int(np.prod(shape)), dtype=np.int64).astype(np.uint32)
        h = _fmix_np(_fmix_np(flat * np.uint32(_GOLDEN) + k1) ^ k2)
    keep = (h >> np.uint32(32 - _BITS)) >= np.uint32(_threshold(rate))
    scale = 1.0 / (1.0 - float(rate)) if rate < 1 else 0.0
    return np.where(keep, scale, 0.0).astype(dtype).reshape(shape)


_dropout_mask = register_op(
    "relax.random.dropout_mask", _infer_mask, _te_mask, _np_mask, OpPattern.INJECTIVE
)


def dropout_mask(
    key: Expr, shape: Any, rate: float, dtype: str = "float32", stream: int = 0
) -> Call:
    """0 or `1 / (1 - rate)` per element, drawn from `key = (seed, step)` (int64, shape (2,)):
    `x * relax.op.random.dropout_mask(key, x_shape, 0.5)` is inverted dropout."""
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ArgumentError(f"relax.random.dropout_mask: rate must be in [0, 1], got {rate}")
    if not 0 <= int(stream) < (1 << 32):
        raise ArgumentError(
            f"relax.random.dropout_mask: stream must be in [0, 2**32), got {stream}"
        )
    shape = shape if isinstance(shape, Expr) else ShapeExpr(tuple(shape))
    attrs = {"rate": rate, "dtype": str(DataType(dtype)), "stream": int(stream)}
    return make_call(_dropout_mask, (key, shape), attrs)


__all__ = ["dropout_mask"]
