"""Elementwise ops: broadcasting binary arithmetic and unary math."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import te, topi
from ...error import DTypeError, ShapeError
from ...tir import op as tir_op
from ...tir.expr import make_const
from ...topi import reference as ref
from ..expr import Call, Constant, Expr, PrimValue, const
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
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


def _operand(call: Call, index: int) -> TensorStructInfo | PrimStructInfo:
    """Argument `index` of a binary op: a tensor or a scalar (R.Prim), as TVM allows."""
    sinfo = call.args[index].struct_info
    if isinstance(sinfo, PrimStructInfo):
        return sinfo
    return I.tensor_arg(call, index, f"x{index + 1}")


def _broadcast_operands(call: Call, check_dtype: bool) -> tuple[StructInfo, Any]:
    """(result struct info with the operands' dtype, that dtype) of a broadcasting binary op.

    A scalar operand broadcasts as a 0-d tensor (numpy's rule, which the TE kernels follow);
    two scalars give a scalar. Arithmetic needs equal dtypes (TVM raises a TypeError, and so
    does DTypeError); comparisons accept mixed dtypes, since only a bool comes out.
    """
    x, y = _operand(call, 0), _operand(call, 1)
    if check_dtype:
        dtype = I.same_dtype(call, [("x1", x), ("x2", y)])
    else:
        dtype = x.dtype if x.dtype == y.dtype else None
    if isinstance(x, PrimStructInfo) and isinstance(y, PrimStructInfo):
        return PrimStructInfo(dtype if dtype is not None else "bool"), dtype
    x, y = (TensorStructInfo((), s.dtype) if isinstance(s, PrimStructInfo) else s for s in (x, y))
    shape = I.broadcast(call, "x1", x, "x2", y)
    if shape is not None:
        return TensorStructInfo(shape, dtype), dtype
    ndim = max(x.ndim, y.ndim) if -1 not in (x.ndim, y.ndim) else -1
    return TensorStructInfo(None, dtype, ndim), dtype


def _infer_binary(call: Call) -> StructInfo:
    return _broadcast_operands(call, check_dtype=True)[0]


def _np_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.result_type(a, b).kind == "f":
        return np.divide(a, b).astype(np.result_type(a, b))
    return np.fix(np.divide(a, b)).astype(np.result_type(a, b))


def _np_floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor_divide(a, b).astype(np.result_type(a, b))


def _np_floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.result_type(a, b).kind == "f":  # the formula the kernel uses (numpy's differs in ulps)
        return (a - np.floor(a / b) * b).astype(np.result_type(a, b))
    return np.mod(a, b).astype(np.result_type(a, b))


# name -> (te, numpy): arithmetic, the result has the operands' dtype
_BINARY: dict[str, tuple[Callable, Callable]] = {
    "add": (topi.add, np.add),
    "subtract": (topi.subtract, np.subtract),
    "multiply": (topi.multiply, np.multiply),
    "divide": (topi.divide, _np_divide),
    "power": (topi.power, np.power),
    "maximum": (topi.maximum, np.maximum),
    "minimum": (topi.minimum, np.minimum),
    "floor_divide": (topi.floor_divide, _np_floor_divide),
    "floor_mod": (topi.floor_mod, _np_floor_mod),
    "mod": (topi.mod, np.fmod),  # truncated remainder (C fmod): the sign of x1
}


def _infer_compare(call: Call) -> StructInfo:
    sinfo = _broadcast_operands(call, check_dtype=False)[0]
    if isinstance(sinfo, PrimStructInfo):
        return PrimStructInfo("bool")
    return TensorStructInfo(sinfo.shape, "bool", sinfo.ndim)


def _infer_logical(call: Call) -> StructInfo:
    for k in range(len(call.args)):
        x = I.tensor_arg(call, k, f"x{k + 1}")
        if x.dtype is not None and not x.dtype.is_bool:
            raise DTypeError(
                f"{I.op_name(call)}: x{k + 1} has dtype {x.dtype}, but logical ops take bool "
                f"tensors; compare first (relax.op.not_equal(x{k + 1}, 0)) or use astype('bool')"
            )
    return (
        _infer_compare(call)
        if len(call.args) == 2
        else TensorStructInfo(call.args[0].struct_info.shape, "bool", call.args[0].struct_info.ndim)
    )


def _promoting(te_fn: Callable) -> Callable:
    """`te_fn` on operands first cast to numpy's common dtype when their dtypes differ, so a
    mixed comparison (float32 with int32) is exact, as the numpy reference computes it (a
    plain tir comparison would round the int32 operand to float32)."""

    def compare(a: Any, b: Any) -> Any:
        da, db = str(getattr(a, "dtype", "")), str(getattr(b, "dtype", ""))
        if da and db and da != db:
            common = str(np.result_type(da, db))
            a, b = (_cast_operand(v, common) for v in (a, b))
        return te_fn(a, b)

    compare.__name__ = te_fn.__name__
    return compare


def _cast_operand(value: Any, dtype: str) -> Any:
    if str(value.dtype) == dtype:
        return value
    return topi.cast(value, dtype) if isinstance(value, te.Tensor) else tir_op.cast(dtype, value)


# name -> (te, numpy, shape rule): comparisons and logical ops give bool tensors
_BOOL_BINARY: dict[str, tuple[Callable, Callable, Callable]] = {
    "equal": (_promoting(topi.equal), np.equal, _infer_compare),
    "not_equal": (_promoting(topi.not_equal), np.not_equal, _infer_compare),
    "less": (_promoting(topi.less), np.less, _infer_compare),
    "less_equal": (_promoting(topi.less_equal), np.less_equal, _infer_compare),
    "greater": (_promoting(topi.greater), np.greater, _infer_compare),
    "greater_equal": (_promoting(topi.greater_equal), np.greater_equal, _infer_compare),
    "logical_and": (topi.logical_and, np.logical_and, _infer_logical),
    "logical_or": (topi.logical_or, np.logical_or, _infer_logical),
    "logical_xor": (topi.logical_xor, np.logical_xor, _infer_logical),
}


def make_binary(
    name: str, infer: Callable[[Call], StructInfo], te_fn: Callable, np_fn: Callable, doc: str
) -> Callable[[Any, Any], Call]:
    """Register the broadcasting op `relax.<name>` and build `relax.op.<name>(x1, x2)`.

    A Python scalar on either side becomes a constant of the other operand's dtype.
    """
    op = register_op(f"relax.{name}", infer, te_fn, np_fn, OpPattern.BROADCAST)

    def build(x1: Any, x2: Any) -> Call:
        x1 = _as_operand(x1, x2 if isinstance(x2, Expr) else None)
        x2 = _as_operand(x2, x1)
        return make_call(op, (x1, x2))

    build.__name__ = name
    build.__doc__ = doc
    return build


def _make_binary(name: str) -> Callable[[Any, Any], Call]:
    """The builder of row `name` of _BINARY or _BOOL_BINARY."""
    if name in _BINARY:
        doc = f"Elementwise {name} with numpy broadcasting: `relax.op.{name}(x1, x2)`."
        return make_binary(name, _infer_binary, *_BINARY[name], doc)
    te_fn, np_fn, infer = _BOOL_BINARY[name]
    doc = f"Elementwise {name} with numpy broadcasting; a bool tensor."
    return make_binary(name, infer, te_fn, np_fn, doc)


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
divide = _make_binary("divide")
power = _make_binary("power")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
floor_divide = _make_binary("floor_divide")
floor_mod = _make_binary("floor_mod")
mod = _make_binary("mod")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
logical_and = _make_binary("logical_and")
logical_or = _make_binary("logical_or")
logical_xor = _make_binary("logical_xor")


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
    "rsqrt": (topi.rsqrt, _np_float(lambda x: 1.0 / np.sqrt(x)), True),
    "sin": (topi.sin, _np_float(np.sin), True),
    "cos": (topi.cos, _np_float(np.cos), True),
    "square": (topi.square, lambda x: (x * x).astype(x.dtype), False),
    "floor": (topi.floor, _np_float(np.floor), False),
    "ceil": (topi.ceil, _np_float(np.ceil), False),
    "round": (topi.round, _np_float(np.round), False),
    "sign": (topi.sign, _np_float(np.sign), False),
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
rsqrt = make_unary("rsqrt", *_UNARY["rsqrt"], "Elementwise 1 / sqrt(x).")
sin = make_unary("sin", *_UNARY["sin"], "Elementwise sine.")
cos = make_unary("cos", *_UNARY["cos"], "Elementwise cosine.")
square = make_unary("square", *_UNARY["square"], "Elementwise x * x.")
floor = make_unary("floor", *_UNARY["floor"], "Elementwise floor (integers unchanged).")
ceil = make_unary("ceil", *_UNARY["ceil"], "Elementwise ceil (integers unchanged).")
round = make_unary("round", *_UNARY["round"], "Elementwise round, half to even (as numpy).")
sign = make_unary("sign", *_UNARY["sign"], "Elementwise sign: -1, 0 or 1 (NaN stays NaN).")


_logical_not = register_op(
    "relax.logical_not", _infer_logical, topi.logical_not, np.logical_not, OpPattern.ELEMWISE
)


def logical_not(x: Expr) -> Call:
    """Elementwise not of a bool tensor: `relax.op.logical_not(x)`."""
    return make_call(_logical_not, (x,))


# ----------------------------------------------------------------------------- where


def _infer_where(call: Call) -> StructInfo:
    cond = I.tensor_arg(call, 0, "condition")
    x = I.tensor_arg(call, 1, "x1")
    y = I.tensor_arg(call, 2, "x2")
    if cond.dtype is None or not cond.dtype.is_bool:  # TVM refuses an unknown dtype too
        raise DTypeError(
            f"relax.where: condition has dtype {cond.dtype or 'unknown'}; it must be bool "
            "(compare first, e.g. relax.op.not_equal(condition, 0), or match_cast it)"
        )
    dtype = I.same_dtype(call, [("x1", x), ("x2", y)])
    if any(s.shape is None for s in (cond, x, y)):
        ndims = [s.ndim for s in (cond, x, y)]
        return TensorStructInfo(None, dtype, -1 if -1 in ndims else max(ndims))
    xy = I.broadcast(call, "x1", x, "x2", y)
    if xy is None:
        return TensorStructInfo(None, dtype, max(cond.ndim, x.ndim, y.ndim))
    shape = I.broadcast(call, "condition", cond, "x1 and x2", TensorStructInfo(xy, dtype))
    if shape is None:
        return TensorStructInfo(None, dtype, max(cond.ndim, len(xy)))
    return TensorStructInfo(shape, dtype)


def _np_where(condition, x1, x2):
    return np.where(condition, x1, x2).astype(np.result_type(x1, x2))


_where = register_op("relax.where", _infer_where, topi.where, _np_where, OpPattern.BROADCAST)


def where(condition: Expr, x1: Any, x2: Any) -> Call:
    """x1 where condition holds, else x2 (numpy broadcasting): `relax.op.where(c, x, 0.0)`."""
    x1 = _as_operand(x1, x2 if isinstance(x2, Expr) else None)
    x2 = _as_operand(x2, x1)
    return make_call(_where, (condition, x1, x2))


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


def _scalar(value: Any, what: str, op_name: str = "relax.clip") -> float:
    """A number, a PrimValue of a constant or a one-element Constant, as a float attr."""
    if isinstance(value, PrimValue):
        value = value.value
    if isinstance(value, Constant) and value.data.numpy().size == 1:
        value = value.data.numpy().reshape(()).item()
    number = getattr(value, "value", value)  # IntImm / FloatImm
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise ShapeError(
            f"{op_name}: {what} must be a constant number, got {type(value).__name__} {value!r}"
        )
    return float(number)


# relax.op re-exports these (`from .elementwise import *`); the tables name each row once
__all__ = list(_BINARY) + list(_BOOL_BINARY) + list(_UNARY)
__all__ += ["clip", "ewise_fma", "logical_not", "where"]
