"""Elementwise ops: broadcasting binary arithmetic and unary math."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import te, topi
from ...error import ShapeError
from ...tir import op as tir_op
from ...tir.expr import make_const
from ...topi import reference as ref
from ..expr import Call, Constant, Expr, PrimValue, const
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op


def _as_operand(value: Any, like: Expr | None) -> Expr:
    """Python scalars next to a tensor become constants of the tensor's dtype."""
    if isinstance(value, Expr):
        return value
    dtype = None
    if (
        like is not None
        and isinstance(like.struct_info, TensorStructInfo)
        and like.struct_info.dtype
    ):
        dtype = str(like.struct_info.dtype)
    return const(value, dtype)


def _infer_binary(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x1")
    y = I.tensor_arg(call, 1, "x2")
    dtype = I.same_dtype(call, [("x1", x), ("x2", y)])
    shape = I.broadcast(call, "x1", x, "x2", y)
    ndim = max(x.ndim, y.ndim) if -1 not in (x.ndim, y.ndim) else -1
    return TensorStructInfo(None, dtype, ndim) if shape is None else TensorStructInfo(shape, dtype)


def _np_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.result_type(a, b).kind == "f":
        return np.divide(a, b).astype(np.result_type(a, b))
    return np.fix(np.divide(a, b)).astype(np.result_type(a, b))


_BINARY: dict[str, tuple[Callable, Callable, OpPattern]] = {
    "add": (topi.add, np.add, OpPattern.BROADCAST),
    "subtract": (topi.subtract, np.subtract, OpPattern.BROADCAST),
    "multiply": (topi.multiply, np.multiply, OpPattern.BROADCAST),
    "divide": (topi.divide, _np_divide, OpPattern.BROADCAST),
    "power": (topi.power, np.power, OpPattern.BROADCAST),
    "maximum": (topi.maximum, np.maximum, OpPattern.BROADCAST),
    "minimum": (topi.minimum, np.minimum, OpPattern.BROADCAST),
}


def _make_binary(name: str) -> Callable[[Any, Any], Call]:
    op = register_op(f"relax.{name}", _infer_binary, *_BINARY[name])

    def build(x1: Any, x2: Any) -> Call:
        x1 = _as_operand(x1, x2 if isinstance(x2, Expr) else None)
        x2 = _as_operand(x2, x1)
        return make_call(op, (x1, x2))

    build.__name__ = name
    build.__doc__ = f"Elementwise {name} with numpy broadcasting: `relax.op.{name}(x1, x2)`."
    return build


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
divide = _make_binary("divide")
power = _make_binary("power")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")


def _infer_compare(call: Call) -> StructInfo:
    sinfo = _infer_binary(call)
    return TensorStructInfo(sinfo.shape, "bool", sinfo.ndim)


_equal = register_op("relax.equal", _infer_compare, topi.equal, np.equal, OpPattern.BROADCAST)


def equal(x1: Any, x2: Any) -> Call:
    """Elementwise x1 == x2 with numpy broadcasting; a bool tensor: `relax.op.equal(x1, x2)`."""
    x1 = _as_operand(x1, x2 if isinstance(x2, Expr) else None)
    x2 = _as_operand(x2, x1)
    return make_call(_equal, (x1, x2))


def _infer_ewise_fma(call: Call) -> StructInfo:
    xs = [I.tensor_arg(call, k, f"x{k + 1}") for k in range(3)]
    dtype = I.same_dtype(call, [(f"x{k + 1}", x) for k, x in enumerate(xs)])
    if any(x.shape is None for x in xs):
        return TensorStructInfo(None, dtype, max(x.ndim for x in xs))
    prod = TensorStructInfo(I.broadcast(call, "x1", xs[0], "x2", xs[1]), dtype)
    return TensorStructInfo(I.broadcast(call, "x1 * x2", prod, "x3", xs[2]), dtype)


_ewise_fma = register_op(
    "relax.ewise_fma",
    _infer_ewise_fma,
    lambda a, b, c: topi.add(topi.multiply(a, b), c),
    lambda a, b, c: (a * b + c).astype(np.result_type(a, b, c)),
    OpPattern.BROADCAST,
)


def ewise_fma(x1: Expr, x2: Expr, x3: Expr) -> Call:
    """Elementwise x1 * x2 + x3 in one op (what the MLC course's fusion pass rewrites to)."""
    return make_call(_ewise_fma, (x1, x2, x3))


def _infer_unary(float_only: bool) -> Callable[[Call], StructInfo]:
    def infer(call: Call) -> StructInfo:
        x = I.tensor_arg(call, 0, "x")
        if float_only:
            I.require_float(call, x, "x")
        return x

    return infer


def _np_float(fn: Callable) -> Callable:
    return lambda x: fn(x).astype(x.dtype)


# name -> (te, numpy, float only)
_UNARY: dict[str, tuple[Callable, Callable, bool]] = {
    "negative": (topi.negative, np.negative, False),
    "abs": (topi.abs, np.abs, False),
    "exp": (topi.exp, _np_float(np.exp), True),
    "log": (topi.log, _np_float(np.log), True),
    "sqrt": (topi.sqrt, _np_float(np.sqrt), True),
    "tanh": (topi.tanh, _np_float(np.tanh), True),
    "sigmoid": (topi.sigmoid, ref.sigmoid, True),
}


def make_unary(
    name: str, te_fn: Callable, np_fn: Callable, float_only: bool, doc: str
) -> Callable[[Expr], Call]:
    op = register_op(f"relax.{name}", _infer_unary(float_only), te_fn, np_fn, OpPattern.ELEMWISE)

    def build(x: Expr) -> Call:
        return make_call(op, (x,))

    build.__name__ = name.rsplit(".", 1)[-1]
    build.__doc__ = doc
    return build


negative = make_unary("negative", *_UNARY["negative"], "Elementwise -x.")
abs = make_unary("abs", *_UNARY["abs"], "Elementwise |x|.")
exp = make_unary("exp", *_UNARY["exp"], "Elementwise e**x.")
log = make_unary("log", *_UNARY["log"], "Elementwise natural log.")
sqrt = make_unary("sqrt", *_UNARY["sqrt"], "Elementwise square root.")
tanh = make_unary("tanh", *_UNARY["tanh"], "Elementwise tanh.")
sigmoid = make_unary("sigmoid", *_UNARY["sigmoid"], "Elementwise 1 / (1 + e**-x).")


# ----------------------------------------------------------------------------- clip


def _infer_clip(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    if call.attrs["min"] > call.attrs["max"]:
        raise ShapeError(
            f"relax.clip: min ({call.attrs['min']}) is greater than max ({call.attrs['max']}); "
            "pass min <= max"
        )
    return x


def _te_clip(x, min, max):
    lo, hi = make_const(x.dtype, min), make_const(x.dtype, max)
    return te.compute(
        x.shape, lambda *i: tir_op.min(tir_op.max(x[i], lo), hi), name="T_clip", tag="elemwise"
    )


def _np_clip(x, min, max):
    return np.clip(x, np.asarray(min, x.dtype), np.asarray(max, x.dtype)).astype(x.dtype)


_clip = register_op("relax.clip", _infer_clip, _te_clip, _np_clip, OpPattern.ELEMWISE)


def clip(x: Expr, min: float, max: float) -> Call:
    """Elementwise min(max(x, min), max): `relax.op.clip(x, 0.0, 6.0)` (ReLU6)."""
    return make_call(_clip, (x,), {"min": _scalar(min, "min"), "max": _scalar(max, "max")})


def _scalar(value: Any, what: str) -> float:
    """A number, a PrimValue of a constant or a one-element Constant, as a float attr."""
    if isinstance(value, PrimValue):
        value = value.value
    if isinstance(value, Constant) and value.data.numpy().size == 1:
        value = value.data.numpy().reshape(()).item()
    number = getattr(value, "value", value)  # IntImm / FloatImm
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise ShapeError(
            f"relax.clip: {what} must be a constant number, got {type(value).__name__} {value!r}"
        )
    return float(number)
