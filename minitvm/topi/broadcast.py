"""Elementwise and broadcasting operators (numpy broadcasting rules, symbolic dims allowed)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..error import TEError
from ..ir.dtype import DataType
from ..tir import op as tir_op
from ..tir.expr import NE, And, Not, Or, PrimExpr, Select, as_expr, make_const
from ..tir.expr import cast as tir_cast
from .utils import fmt_shape, is_one, prove_equal


def broadcast_shape(a: Sequence[Any], b: Sequence[Any], what: str = "broadcast") -> tuple:
    """The numpy broadcast of two shapes; raises TEError when dims provably differ."""
    n = max(len(a), len(b))
    a = (None,) * (n - len(a)) + tuple(a)
    b = (None,) * (n - len(b)) + tuple(b)
    out = []
    for k, (x, y) in enumerate(zip(a, b)):
        if x is None or (is_one(x) and y is not None):
            out.append(y)
        elif y is None or is_one(y) or prove_equal(x, y):
            out.append(x)
        else:
            raise TEError(
                f"{what}: shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast at dim {k} "
                f"({x} vs {y})"
            )
    return tuple(out)


def broadcast_index(t: te.Tensor, out_shape: Sequence[Any], idx: Sequence[Any]) -> tuple:
    """Index into `t` for the output position `idx` (size-1 dims read element 0)."""
    offset = len(out_shape) - len(t.shape)
    return tuple(
        0 if is_one(d) and not is_one(out_shape[offset + k]) else idx[offset + k]
        for k, d in enumerate(t.shape)
    )


def _operand(x: Any, like: PrimExpr | None = None) -> Any:
    return (
        x if isinstance(x, te.Tensor) else as_expr(x, like=like.dtype if like is not None else None)
    )


def _binary(name: str, fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Callable:
    def op(lhs: Any, rhs: Any) -> te.Tensor | PrimExpr:
        if not isinstance(lhs, te.Tensor) and not isinstance(rhs, te.Tensor):
            return fn(as_expr(lhs), as_expr(rhs))
        shapes = [x.shape for x in (lhs, rhs) if isinstance(x, te.Tensor)]
        out_shape = broadcast_shape(shapes[0], shapes[-1], f"topi.{name}")

        def elem(x: Any, idx: tuple, other_dtype: str) -> PrimExpr:
            if isinstance(x, te.Tensor):
                return x[broadcast_index(x, out_shape, idx)]
            return as_expr(x, like=DataType(other_dtype))

        def body(*idx: Any) -> PrimExpr:
            a = elem(lhs, idx, getattr(rhs, "dtype", "float32"))
            b = elem(rhs, idx, getattr(lhs, "dtype", "float32"))
            return fn(a, b)

        # with a scalar operand the op is elementwise on the tensor; two tensors broadcast
        tag = "broadcast" if len(shapes) == 2 else "elemwise"
        return te.compute(out_shape, body, name=f"T_{name}", tag=tag)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} with numpy broadcasting (tensors or scalars)."
    return op


add = _binary("add", lambda a, b: a + b)
subtract = _binary("subtract", lambda a, b: a - b)
multiply = _binary("multiply", lambda a, b: a * b)
divide = _binary("divide", lambda a, b: a / b)
power = _binary("power", tir_op.power)
maximum = _binary("maximum", tir_op.max)
minimum = _binary("minimum", tir_op.min)
equal = _binary("equal", lambda a, b: a == b)  # bool result

not_equal = _binary("not_equal", lambda a, b: NE(a, b))  # bool results from here on
less = _binary("less", lambda a, b: a < b)
less_equal = _binary("less_equal", lambda a, b: a <= b)
greater = _binary("greater", lambda a, b: a > b)
greater_equal = _binary("greater_equal", lambda a, b: a >= b)
logical_and = _binary("logical_and", lambda a, b: And(_truth(a), _truth(b)))
logical_or = _binary("logical_or", lambda a, b: Or(_truth(a), _truth(b)))
logical_xor = _binary("logical_xor", lambda a, b: NE(_truth(a), _truth(b)))


def _truth(v: PrimExpr) -> PrimExpr:
    """A value as a bool (nonzero is true), as numpy's logical ops read it."""
    return v if v.dtype.is_bool else NE(v, make_const(v.dtype, 0))


def _floor_divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # integers: the exact floordiv; floats: floor of the quotient (numpy.floor_divide)
    return tir_op.floordiv(a, b) if not a.dtype.is_float else tir_op.floor(a / b)


def _floor_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # floats: a - floor(a / b) * b, so the result takes b's sign (numpy.mod, torch.remainder)
    return tir_op.floormod(a, b) if not a.dtype.is_float else a - tir_op.floor(a / b) * b


floor_divide = _binary("floor_divide", _floor_divide)
floor_mod = _binary("floor_mod", _floor_mod)
mod = _binary("mod", tir_op.truncmod)  # C's % and fmod: the remainder takes the dividend's sign

# `A + B`, `A - 1`, `2 * A`, `A / B` on te Tensors build these computes, as in TVM.
for _op_fn in (add, subtract, multiply, divide):
    te.tensor.register_tensor_op(_op_fn.__name__, _op_fn)


def _unary(name: str, fn: Callable[[PrimExpr], PrimExpr]) -> Callable:
    def op(x: te.Tensor) -> te.Tensor:
        if not isinstance(x, te.Tensor):
            raise TEError(f"topi.{name}: expected a te.Tensor, got {type(x).__name__}")
        return te.compute(x.shape, lambda *i: fn(x[i]), name=f"T_{name}", tag="elemwise")

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return op


negative = _unary("negative", lambda v: -v)
identity = _unary("identity", lambda v: v)  # a copy (TVM's topi.identity)
exp = _unary("exp", tir_op.exp)
log = _unary("log", tir_op.log)
sqrt = _unary("sqrt", tir_op.sqrt)


def tanh_expr(v: PrimExpr) -> PrimExpr:
    """tanh of a scalar expression: `tir.tanh`, which code generation emits for float32 vectors
    as vector IR through one exp (codegen/llvm_intrinsics.py), not a libm call per lane."""
    return tir_op.tanh(v)


tanh = _unary("tanh", tanh_expr)
sigmoid = _unary("sigmoid", tir_op.sigmoid)
abs = _unary("abs", tir_op.abs)
rsqrt = _unary("rsqrt", tir_op.rsqrt)
erf = _unary("erf", tir_op.erf)
sin = _unary("sin", tir_op.sin)
cos = _unary("cos", tir_op.cos)
floor = _unary("floor", tir_op.floor)
ceil = _unary("ceil", tir_op.ceil)
round = _unary("round", tir_op.round)
square = _unary("square", lambda v: v * v)
logical_not = _unary("logical_not", lambda v: Not(_truth(v)))


def _sign(v: PrimExpr) -> PrimExpr:
    one = make_const(v.dtype, 1)
    # zero (and a NaN) are their own sign, as in numpy.sign
    return Select(v > make_const(v.dtype, 0), one, Select(v < make_const(v.dtype, 0), -one, v))


sign = _unary("sign", _sign)


def where(condition: te.Tensor, x: Any, y: Any) -> te.Tensor:
    """`numpy.where(condition, x, y)` with broadcasting; x and y may be scalars."""
    tensors = [t for t in (condition, x, y) if isinstance(t, te.Tensor)]
    out_shape: tuple = ()
    for t in tensors:
        out_shape = broadcast_shape(out_shape, t.shape, "topi.where")
    dtype = next((t.dtype for t in (x, y) if isinstance(t, te.Tensor)), None)

    def read(t: Any, idx: tuple) -> PrimExpr:
        if isinstance(t, te.Tensor):
            return t[broadcast_index(t, out_shape, idx)]
        return as_expr(t, like=DataType(dtype) if dtype is not None else None)

    def body(*idx: Any) -> PrimExpr:
        return Select(_truth(read(condition, idx)), read(x, idx), read(y, idx))

    return te.compute(out_shape, body, name="T_where", tag="broadcast")


def broadcast_to(data: te.Tensor, shape: Sequence[Any]) -> te.Tensor:
    """`numpy.broadcast_to(data, shape)`: size-1 and missing leading dims are repeated."""
    shape = tuple(shape)
    out = broadcast_shape(data.shape, shape, "topi.broadcast_to")
    if len(data.shape) > len(shape) or not all(prove_equal(a, b) for a, b in zip(out, shape)):
        raise TEError(
            f"topi.broadcast_to: cannot broadcast {data.name} of shape {fmt_shape(data.shape)} "
            f"to {fmt_shape(shape)}; each dim of the input must be 1 or equal the target's"
        )
    return te.compute(
        shape,
        lambda *idx: data[broadcast_index(data, shape, idx)],
        name="T_broadcast_to",
        tag="broadcast",
    )


def elemwise_sum(xs: Sequence[te.Tensor]) -> te.Tensor:
    """The elementwise sum of same-shaped tensors: `topi.elemwise_sum([A, B, C])`."""
    xs = list(xs)
    if not xs or not all(isinstance(x, te.Tensor) for x in xs):
        raise TEError("topi.elemwise_sum: expected a non-empty list of te.Tensors")
    for x in xs[1:]:
        if len(x.shape) != len(xs[0].shape) or not all(
            prove_equal(a, b) for a, b in zip(x.shape, xs[0].shape)
        ):
            raise TEError(
                f"topi.elemwise_sum: {x.name} has shape {fmt_shape(x.shape)}, {xs[0].name} has "
                f"{fmt_shape(xs[0].shape)}; all tensors must have the same shape"
            )

    def body(*idx: Any) -> PrimExpr:
        total = xs[0][idx]
        for x in xs[1:]:
            total = total + x[idx]
        return total

    return te.compute(xs[0].shape, body, name="T_elemwise_sum", tag="elemwise")


def cast(x: te.Tensor, dtype: str) -> te.Tensor:
    """Elementwise conversion to `dtype`."""
    return te.compute(x.shape, lambda *i: tir_cast(dtype, x[i]), name="T_cast", tag="elemwise")


def full(shape: Sequence[Any], dtype: str, fill_value: Any) -> te.Tensor:
    """A tensor of `shape` filled with `fill_value` (a number, or a PrimExpr such as a scalar param)."""
    value = tir_cast(dtype, as_expr(fill_value))
    return te.compute(tuple(shape), lambda *i: value, name="T_full", tag="elemwise")


def full_like(x: te.Tensor, fill_value: Any) -> te.Tensor:
    return full(x.shape, x.dtype, fill_value)


# the package re-exports these (`from .broadcast import *`), so each name is listed once
__all__ = [
    "abs",
    "add",
    "broadcast_shape",
    "broadcast_to",
    "cast",
    "ceil",
    "cos",
    "divide",
    "elemwise_sum",
    "equal",
    "erf",
    "exp",
    "floor",
    "floor_divide",
    "floor_mod",
    "full",
    "full_like",
    "greater",
    "greater_equal",
    "identity",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "not_equal",
    "power",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sqrt",
    "square",
    "subtract",
    "tanh",
    "where",
]
