"""Converters of elementwise torch ops: arithmetic, comparisons, logical and bitwise ops with
torch's type promotion (`_promote`), unary math, activations.

A combination torch refuses (bool - bool, floor of a bool, ints to a negative power) is an
OpAttributeInvalid naming the dtypes; one torch accepts but the importer cannot compute
exactly is an OpNotImplemented, never a result of another dtype or value.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from ....error import OpAttributeInvalid, OpAttributeUnImplemented, OpNotImplemented
from ... import op as R
from ...expr import Expr, const
from ._base import _dtype, _is_torch_dtype, _need, _unsupported_attr
from ._promote import cast, category, default_float, is_float, promoted, result_type


def _dtypes(*operands: Any) -> str:
    """The operands as a reader sees them: 'int32 tensor, Python float'."""
    return ", ".join(
        f"{_dtype(v)} tensor" if isinstance(v, Expr) else f"Python {type(v).__name__}"
        for v in operands
        if v is not None
    )


def _torch_refuses(name: str, operands: tuple, why: str = "") -> OpAttributeInvalid:
    return OpAttributeInvalid(
        f"{name} of ({_dtypes(*operands)}) is rejected by torch itself{why}; cast the operands "
        "to a dtype torch accepts for this op"
    )


# ----------------------------------------------------------------------------- binary arithmetic

# name -> (relax op, Python op on numbers, relax op for bool results or None where torch
# refuses bool results, whether torch refuses any bool operand)
_ARITH: dict[str, tuple[str, Callable, str | None, bool]] = {
    "add": ("add", operator.add, "logical_or", False),
    "sub": ("subtract", operator.sub, None, True),
    "mul": ("multiply", operator.mul, "logical_and", False),
    "maximum": ("maximum", max, "logical_or", False),
    "minimum": ("minimum", min, "logical_and", False),
    "floor_divide": ("floor_divide", operator.floordiv, None, False),
    "remainder": ("floor_mod", operator.mod, None, False),
    "fmod": ("mod", math.fmod, None, False),
}


def _arith(name: str) -> Callable:
    """A promoting binary op: `add(a, b, alpha=1)` computes in torch.result_type(a, b)."""
    relax_name, py_op, bool_name, no_bool = _ARITH[name]

    def convert(t, a, b, alpha=1, *, out=None):  # alpha is positional in add.Scalar
        if out is not None:
            raise OpAttributeUnImplemented("out= is not supported; use the returned value")
        if not isinstance(a, Expr) and not isinstance(b, Expr):  # symbolic sizes, scalars
            return py_op(a, b * alpha if alpha != 1 else b)
        dtype = result_type(a, b)
        if no_bool and "bool" in (_operand_dtype(a), _operand_dtype(b)):
            raise _torch_refuses(name, (a, b), " for bool operands (use ^ or logical_not)")
        if dtype == "bool" and bool_name is None:
            raise _torch_refuses(name, (a, b), " for bool operands")
        x, y = cast(t, a, dtype), cast(t, b, dtype)
        if dtype == "bool" and alpha != 1:  # torch reads alpha as a bool here
            if not alpha:
                return x
        elif alpha != 1:
            if isinstance(alpha, float) and not is_float(dtype):
                raise _torch_refuses(name, (a, b), f" with a float alpha={alpha}")
            y = t.emit(R.multiply(y, cast(t, alpha, dtype)))
        return t.emit(_need(bool_name if dtype == "bool" else relax_name)(x, y))

    return convert


def _operand_dtype(value: Any) -> str | None:
    if isinstance(value, Expr):
        return _dtype(value)
    return "bool" if isinstance(value, bool) else None


def _binary(relax_op: Callable, py_op: Callable) -> Callable:
    """A binary op computing in torch.result_type(a, b) on any dtype (comparisons, max(a, b))."""

    def convert(t, a, b, *, out=None):
        if out is not None:
            raise OpAttributeUnImplemented("out= is not supported; use the returned value")
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            return py_op(a, b)
        _, (x, y) = promoted(t, a, b)
        return t.emit(relax_op(x, y))

    return convert


def _compare(name: str, py_op: Callable) -> Callable:
    """eq, lt, ...: compare in the promoted dtype; the result is bool."""
    return _binary(lambda x, y: _need(name)(x, y), py_op)


def _div(t, a, b, *, rounding_mode=None, out=None):
    """True division gives floats (torch's default float for integer operands); "trunc" and
    "floor" keep the promoted dtype."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return a // b if rounding_mode == "floor" else a / b
    if rounding_mode == "floor":
        return _arith("floor_divide")(t, a, b, out=out)
    if rounding_mode not in (None, "trunc"):
        _unsupported_attr("rounding_mode", rounding_mode)
    dtype = result_type(a, b)
    if rounding_mode is None and not is_float(dtype):
        dtype = default_float()
    if dtype == "bool":
        raise _torch_refuses("div(rounding_mode='trunc')", (a, b), " for bool operands")
    q = t.emit(R.divide(cast(t, a, dtype), cast(t, b, dtype)))  # integers: C's truncation
    return _trunc(t, q) if rounding_mode == "trunc" and is_float(dtype) else q


def _trunc(t, x, *, out=None):
    if _dtype(x) == "bool":
        raise _torch_refuses("trunc", (x,))
    if not is_float(_dtype(x)):
        return x
    negative = t.emit(R.less(x, cast(t, 0, _dtype(x))))
    return t.emit(_need("where")(negative, t.emit(R.ceil(x)), t.emit(R.floor(x))))


def _rsub(t, a, b, alpha=1):  # b - alpha * a
    return _arith("sub")(t, b, a, alpha=alpha)


def _pow(t, x, exponent):
    """Floats through relax.power; an integer power by a Python int as exact multiplications
    (wrapping as torch's do); an integer tensor exponent is refused (torch's integer pow)."""
    if not isinstance(x, Expr) and not isinstance(exponent, Expr):
        return x**exponent
    dtype = result_type(x, exponent)
    if is_float(dtype):
        if not isinstance(exponent, Expr) and exponent == 2:
            base = cast(t, x, dtype)
            return t.emit(R.multiply(base, base))
        return t.emit(R.power(cast(t, x, dtype), cast(t, exponent, dtype)))
    if isinstance(exponent, Expr):
        if category(_dtype(exponent)) == 0 and isinstance(x, Expr) and _dtype(x) == "bool":
            raise _torch_refuses("pow", (x, exponent))
        raise OpNotImplemented(
            f"pow of ({_dtypes(x, exponent)}): an integer power by a tensor exponent is not "
            "supported; pass the exponent as a Python int, or cast the base to float"
        )
    if exponent < 0:
        raise _torch_refuses("pow", (x, exponent), " (integers to negative integer powers)")
    return _int_power(t, cast(t, x, dtype), int(exponent))


def _int_power(t, base: Expr, n: int) -> Expr:
    """base ** n for n >= 0 by repeated squaring, in base's own (integer or bool) dtype."""
    mul = R.logical_and if _dtype(base) == "bool" else R.multiply
    result = None
    while n:
        if n & 1:
            result = base if result is None else t.emit(mul(result, base))
        n >>= 1
        if n:
            base = t.emit(mul(base, base))
    if result is None:  # x ** 0 is 1 everywhere
        return t.emit(R.astype(t.emit(R.equal(base, base)), _dtype(base)))
    return result


def _clamp(t, x, min=None, max=None, *, inplace=False, out=None):
    """clamp computes in torch.result_type(x, min, max); bounds may be numbers or tensors."""
    if min is None and max is None:
        raise OpAttributeInvalid("clamp needs min or max (torch refuses both None)")
    numbers = not isinstance(min, Expr) and not isinstance(max, Expr)
    dtype, (x, lo, hi) = promoted(t, x, min, max)
    if dtype == "bool" and numbers:  # torch clamps bools only by tensor bounds
        raise _torch_refuses("clamp", (x, min, max))
    if numbers and min is not None and max is not None and min <= max:
        return t.emit(R.clip(x, min, max))
    if lo is not None:  # min > max gives max everywhere, as in torch
        x = t.emit(R.maximum(x, lo))
    return x if hi is None else t.emit(R.minimum(x, hi))


def _clamp_min(t, x, min):
    return _clamp(t, x, min, None)


def _clamp_max(t, x, max):
    return _clamp(t, x, None, max)


def _where(t, condition, input, other):
    if not isinstance(condition, Expr):
        raise OpAttributeUnImplemented("where with a Python condition")
    if _dtype(condition) != "bool":
        raise OpAttributeInvalid(
            f"where's condition has dtype {_dtype(condition)}; torch requires bool (compare it "
            "first: cond != 0)"
        )
    _, (x, y) = promoted(t, input, other)
    return t.emit(_need("where")(condition, x, y))


def _as_bool(t, x: Any) -> Expr:
    """Nonzero as True, as torch's logical ops read any dtype."""
    return cast(t, x, "bool")


def _logical(name: str, py_op: Callable) -> Callable:
    def convert(t, a, b, *, out=None):
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            return py_op(bool(a), bool(b))
        return t.emit(_need(name)(_as_bool(t, a), _as_bool(t, b)))

    return convert


def _logical_not(t, x, *, out=None):
    return t.emit(R.logical_not(_as_bool(t, x)))


_BITWISE = {"and": "logical_and", "or": "logical_or", "xor": "logical_xor"}


def _bitwise(kind: str, py_op: Callable) -> Callable:
    """&, |, ^: the logical op on bools, the bitwise op on integers."""

    def convert(t, a, b, *, out=None):
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            return py_op(a, b)
        dtype = result_type(a, b)
        if is_float(dtype):
            raise _torch_refuses(f"bitwise_{kind}", (a, b))
        name = _BITWISE[kind] if dtype == "bool" else f"bitwise_{kind}"
        return t.emit(_need(name)(cast(t, a, dtype), cast(t, b, dtype)))

    return convert


def _bitwise_not(t, x, *, out=None):
    if is_float(_dtype(x)):
        raise _torch_refuses("bitwise_not", (x,))
    if _dtype(x) != "bool":
        return t.emit(_need("bitwise_not")(x))
    return t.emit(R.logical_not(x))


# ----------------------------------------------------------------------------- unary


def _unary(relax_op: Callable, name: str = "", *, bool_ok: bool = True) -> Callable:
    """An op that keeps its operand's dtype (abs, neg on ints and floats)."""

    def convert(t, x, *, inplace=False, out=None):
        if not bool_ok and _dtype(x) == "bool":
            raise _torch_refuses(name, (x,))
        return t.emit(relax_op(x))

    return convert


def _float_unary(relax_op: Callable) -> Callable:
    """exp, sin, sigmoid...: integer and bool operands compute in torch's default float."""

    def convert(t, x, *, inplace=False, out=None):
        if not is_float(_dtype(x)):
            x = cast(t, x, default_float())
        return t.emit(relax_op(x))

    return convert


def _log_base(base: float) -> Callable:
    """log2, log10 as log(x) / log(base)."""
    inv = 1.0 / math.log(base)

    def relax_op(x):
        return R.multiply(_need("log")(x), const(inv, str(x.struct_info.dtype)))

    return relax_op


def _float_predicate(name: str) -> Callable:
    """isnan, isinf: a bool tensor; integer tensors are never nan or inf (x != x is False)."""

    def convert(t, x):
        if is_float(_dtype(x)):
            return t.emit(_need(name)(x))
        return t.emit(R.not_equal(x, x))

    return convert


def _elu(t, x, alpha=1.0, scale=1.0, input_scale=1.0):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))."""
    dtype = _dtype(x)
    if not is_float(dtype):
        raise _torch_refuses("elu", (x,))

    def c(v):
        return const(float(v), dtype)

    neg = R.multiply(c(alpha), R.subtract(R.exp(R.multiply(x, c(input_scale))), c(1.0)))
    y = t.emit(R.where(R.greater(x, c(0.0)), x, neg))
    return y if scale == 1.0 else t.emit(R.multiply(y, c(scale)))


def _lazy(name: str) -> Callable:
    return lambda x: _need(name)(x)


def _rounding(name: str) -> Callable:
    """floor, ceil: integers are their own result; torch refuses bools."""

    def convert(t, x, *, out=None):
        if _dtype(x) == "bool":
            raise _torch_refuses(name, (x,))
        return t.emit(_need(name)(x)) if is_float(_dtype(x)) else x

    return convert


def _round(t, x, *, decimals=0, out=None):
    """Half to even; decimals=n rounds x * 10**n (x / 10**-n for n < 0), as torch does."""
    dtype = _dtype(x)
    if dtype == "bool" or (decimals and not is_float(dtype)):
        raise _torch_refuses(f"round(decimals={decimals})", (x,))
    if not is_float(dtype):
        return x
    if not decimals:
        return t.emit(R.round(x))
    scale = cast(t, 10.0 ** abs(int(decimals)), dtype)
    if decimals > 0:
        return t.emit(R.divide(t.emit(R.round(t.emit(R.multiply(x, scale)))), scale))
    return t.emit(R.multiply(t.emit(R.round(t.emit(R.divide(x, scale)))), scale))


def _sign(t, x, *, out=None):
    return x if _dtype(x) == "bool" else t.emit(_need("sign")(x))


def _square(t, x, *, out=None):  # torch.square is pow(x, 2): bool gives int64
    dtype = result_type(x, 2)
    x = cast(t, x, dtype)
    return t.emit(R.multiply(x, x))


def _reciprocal(t, x, *, out=None):
    dtype = _dtype(x) if is_float(_dtype(x)) else default_float()
    return t.emit(R.divide(cast(t, 1.0, dtype), cast(t, x, dtype)))


def _log1p(t, x, *, out=None):
    dtype = _dtype(x) if is_float(_dtype(x)) else default_float()
    return t.emit(R.log(t.emit(R.add(cast(t, x, dtype), cast(t, 1.0, dtype)))))


def _masked_fill(t, input, mask, value):
    fill = value if isinstance(value, Expr) else t.const(value, _dtype(input))
    return t.emit(_need("where")(mask, fill, input))


# ----------------------------------------------------------------------------- activations


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


def _softplus(t, x, beta=1.0, threshold=20.0):
    return t.emit(_need("nn.softplus")(x, float(beta), float(threshold)))


def _softmax_like(relax_op: Callable) -> Callable:
    def convert(t, x, dim=None, *rest, dtype=None, half_to_float=False, _stacklevel=3):
        if dim is None:
            raise OpAttributeInvalid("softmax needs dim=; torch's implicit dim is deprecated")
        dtype = dtype or next((r for r in rest if _is_torch_dtype(r)), None)
        if dtype is not None:
            x = t.emit(R.astype(x, t.dtype(dtype)))
        return t.emit(relax_op(x, int(dim)))

    return convert
