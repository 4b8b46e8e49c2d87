"""Converters of elementwise torch ops: arithmetic with torch's scalar promotion, activations."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ... import op as R
from ...expr import Expr
from ._base import _dtype, _is_float, _is_torch_dtype, _need, _pair_operands, _unsupported_attr


def _binary(relax_op: Callable, py_op: Callable) -> Callable:
    def convert(t, a, b, *, alpha=1, out=None):
        if out is not None:
            raise OpAttributeUnImplemented("out= is not supported; use the returned value")
        if not isinstance(a, Expr) and not isinstance(b, Expr):  # symbolic sizes, scalars
            return py_op(a, b * alpha if alpha != 1 else b)
        if alpha != 1:
            b = (
                b * alpha
                if not isinstance(b, Expr)
                else _binary(R.multiply, operator.mul)(t, b, alpha)
            )
        x, y = _pair_operands(t, a, b)
        return t.emit(relax_op(x, y))

    return convert


def _div(t, a, b, *, rounding_mode=None):
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return a // b if rounding_mode == "floor" else a / b
    if rounding_mode is not None:
        return (
            _binary(_need("floor_divide"), operator.floordiv)(t, a, b)
            if rounding_mode == "floor"
            else _unsupported_attr("rounding_mode", rounding_mode)
        )
    x, y = _pair_operands(t, a, b)
    if not _is_float(_dtype(x)):  # torch's true division of integers gives floats
        x, y = t.emit(R.astype(x, "float32")), t.emit(R.astype(y, "float32"))
    return t.emit(R.divide(x, y))


def _rsub(t, a, b, alpha=1):  # b - alpha * a
    return _binary(R.subtract, operator.sub)(t, b, a, alpha=alpha)


def _unary(relax_op: Callable) -> Callable:
    def convert(t, x, *, inplace=False):
        return t.emit(relax_op(x))

    return convert


def _float_unary(relax_op: Callable) -> Callable:
    def convert(t, x, *, inplace=False):
        if not _is_float(_dtype(x)):
            x = t.emit(R.astype(x, "float32"))
        return t.emit(relax_op(x))

    return convert


def _clamp(t, x, min=None, max=None, *, inplace=False):
    lo = -math.inf if min is None else min
    hi = math.inf if max is None else max
    if isinstance(lo, Expr) or isinstance(hi, Expr):
        raise OpAttributeUnImplemented("clamp with tensor bounds is not supported")
    return t.emit(R.clip(x, lo, hi))


def _hardtanh(t, x, min_val=-1.0, max_val=1.0, inplace=False):
    return t.emit(R.clip(x, min_val, max_val))


def _relu6(t, x, inplace=False):
    return t.emit(R.nn.relu6(x))


def _gelu(t, x, approximate="none"):
    if approximate == "none":
        return t.emit(R.nn.gelu(x))
    if approximate != "tanh":
        _unsupported_attr("approximate", approximate)
    return t.emit(_need("nn.gelu_tanh")(x))


def _silu(t, x, inplace=False):
    return t.emit(_need("nn.silu")(x))


def _hardsigmoid(t, x, inplace=False):  # relu6(x + 3) / 6
    shifted = t.emit(R.clip(t.emit(R.add(x, t.const(3.0, _dtype(x)))), 0.0, 6.0))
    return t.emit(R.divide(shifted, t.const(6.0, _dtype(x))))


def _hardswish(t, x, inplace=False):  # x * relu6(x + 3) / 6
    return t.emit(R.multiply(x, _hardsigmoid(t, x)))


def _leaky_relu(t, x, negative_slope=0.01, inplace=False):
    return t.emit(_need("nn.leakyrelu")(x, float(negative_slope)))


def _log1p(t, x):
    return t.emit(R.log(t.emit(R.add(x, t.const(1.0, _dtype(x))))))


def _softplus(t, x, beta=1.0, threshold=20.0):
    return t.emit(_need("nn.softplus")(x, float(beta), float(threshold)))


def _pow(t, x, exponent):
    if not isinstance(x, Expr) and not isinstance(exponent, Expr):
        return x**exponent
    if exponent == 2 and not isinstance(exponent, Expr):
        return t.emit(R.multiply(x, x))
    a, b = _pair_operands(t, x, exponent)
    return t.emit(R.power(a, b))


def _softmax_like(relax_op: Callable) -> Callable:
    def convert(t, x, dim=None, *rest, dtype=None, half_to_float=False, _stacklevel=3):
        if dim is None:
            raise OpAttributeInvalid("softmax needs dim=; torch's implicit dim is deprecated")
        dtype = dtype or next((r for r in rest if _is_torch_dtype(r)), None)
        if dtype is not None:
            x = t.emit(R.astype(x, t.dtype(dtype)))
        return t.emit(relax_op(x, int(dim)))

    return convert


def _lazy_binary(name: str, py_op: Callable) -> Callable:
    """A binary op added to relax.op by name (comparisons, floor_divide...), looked up on use."""

    def convert(t, a, b, *, out=None):
        return _binary(lambda x, y: _need(name)(x, y), py_op)(t, a, b, out=out)

    return convert


def _lazy_unary(name: str) -> Callable:
    def convert(t, x, *, inplace=False, out=None):
        return t.emit(_need(name)(x))

    return convert


def _where(t, condition, input, other):
    x, y = _pair_operands(t, input, other)
    if not isinstance(condition, Expr):
        raise OpAttributeUnImplemented("where with a Python condition")
    return t.emit(_need("where")(condition, x, y))


def _reciprocal(t, x):
    return t.emit(R.divide(t.const(1.0, _dtype(x)), x))


def _masked_fill(t, input, mask, value):
    fill = value if isinstance(value, Expr) else t.const(value, _dtype(input))
    return t.emit(_need("where")(mask, fill, input))
