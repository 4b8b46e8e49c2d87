"""TVM's effect ops: `R.print(*values, format="")` and `R.assert_op(condition, format_args,
format="")`, run for what they do, not for a value.

Each returns nothing (an empty tuple), so it belongs in an impure function
(`@R.function(pure=False)`) outside dataflow blocks, as in TVM: in a pure function an unused call
may be removed like any other. Each lowers to a packed function registered below
(`relax.run.print`, `relax.run.assert_op`), which the VM calls with the format string as a
string constant (carried by LoadImm).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ...error import ArgumentError, RuntimeError_
from ...runtime import NDArray
from ...runtime.registry import register_func
from ...tir.expr import PrimExpr
from ..expr import Call, Expr, ExternFunc, PrimValue, StringImm, Tuple
from ..struct_info import TupleStructInfo
from ._table import OpPattern, make_call, register_op
from .grad import NOT_DIFFERENTIABLE, _reasons
from .shape_ops import BUILTIN_LOWERING

_PACKED = "relax.run.print"
_ASSERT_PACKED = "relax.run.assert_op"


class RelaxAssertionError(RuntimeError_, AssertionError):
    """An R.assert_op whose condition was false (an AssertionError, as TVM raises)."""


def _infer_print(call: Call) -> TupleStructInfo:
    return TupleStructInfo(())


_print = register_op("relax.print", _infer_print, None, None, OpPattern.OPAQUE)
_assert = register_op("relax.assert_op", _infer_print, None, None, OpPattern.OPAQUE)


def _format_str(format: Any, what: str) -> str:
    if isinstance(format, StringImm):
        format = format.value
    if not isinstance(format, str):
        raise ArgumentError(
            f"{what}: format must be a str (a Python format string), got {format!r}"
        )
    return format


def _exprs(values: Any, what: str) -> tuple:
    for i, v in enumerate(values):
        if not isinstance(v, Expr):
            raise ArgumentError(
                f"{what}: value {i} is a {type(v).__name__}; pass relax expressions (wrap a "
                "Python number with relax.PrimValue, a string with relax.StringImm)"
            )
    return tuple(values)


def print(
    *values: Expr, format: str | StringImm = ""
) -> Call:  # TVM's name (shadows the builtin here)
    """Print `values` when the call runs: `format.format(*values)`, or the values separated by
    spaces when `format` is empty. `R.print(x, format="x = {}")`."""
    format = _format_str(format, "relax.op.print")
    return make_call(_print, _exprs(values, "relax.op.print"), {"format": format})


def assert_op(condition: Any, format_args: Any = None, format: str | StringImm = "") -> Call:
    """Raise an AssertionError when `condition` (a bool scalar tensor or R.prim_value) is false,
    with `format.format(*format_args)` as the message (the args joined by ", " when `format` is
    empty). `R.assert_op(R.prim_value(n % 8 == 0), [x], format="n = {}")`."""
    if isinstance(condition, PrimExpr | bool):
        condition = PrimValue(condition)
    if format_args is None:
        format_args = ()
    elif isinstance(format_args, Tuple):  # the printed form: R.assert_op(c, (x, y), ...)
        format_args = format_args.fields
    elif isinstance(format_args, Expr):
        format_args = (format_args,)
    args = _exprs((condition, *format_args), "relax.op.assert_op")
    fmt = _format_str(format, "relax.op.assert_op")
    return make_call(_assert, (args[0], Tuple(args[1:])), {"format": fmt})


def _lower_print(call: Call) -> Expr:
    args = (StringImm(call.attrs["format"]), *call.args)
    return make_call(ExternFunc(_PACKED), args, sinfo_args=(TupleStructInfo(()),))


def _lower_assert(call: Call) -> Expr:
    condition, format_args = call.args
    fields = format_args.fields if isinstance(format_args, Tuple) else (format_args,)
    args = (condition, StringImm(call.attrs["format"]), *fields)
    return make_call(ExternFunc(_ASSERT_PACKED), args, sinfo_args=(TupleStructInfo(()),))


def _render(value: Any) -> str:
    """A runtime value as TVM's print shows it: tensors as numpy prints them, tuples of values."""
    if isinstance(value, NDArray):
        return str(value.numpy())
    if isinstance(value, np.ndarray):
        return str(value)
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_render(v) for v in value) + ")"
    return str(value)


def _run_print(format_str: str, *values: Any) -> None:
    texts = [_render(v) for v in values]
    if format_str:
        try:
            text = format_str.format(*texts)
        except (IndexError, KeyError, ValueError) as err:
            raise ArgumentError(
                f"R.print: format {format_str!r} does not fit {len(texts)} value(s) ({err}); "
                "use one {} per value"
            ) from err
        builtins.print(text)
    else:
        builtins.print(*texts)


def _truth(condition: Any) -> bool:
    """The condition's value: a bool or int, or a bool tensor of one element."""
    if isinstance(condition, bool | int | np.bool_ | np.integer):
        return bool(condition)
    if isinstance(condition, NDArray):
        data = condition.numpy()
        if data.dtype == np.bool_ and data.size == 1:
            return bool(data.reshape(()))
        what = f"a {data.dtype} tensor of shape {data.shape}"
    else:
        what = f"a {type(condition).__name__}"
    raise ArgumentError(f"R.assert_op: the condition is {what}; it must be one bool")


def _run_assert(condition: Any, format_str: str, *values: Any) -> None:
    if _truth(condition):
        return
    message = "Assertion Failed"
    if format_str:
        message = format_str.format(*[_render(v) for v in values])
    elif values:
        message = ", ".join(_render(v) for v in values)
    raise RelaxAssertionError(message)


register_func(_PACKED, _run_print, override=True)
register_func(_ASSERT_PACKED, _run_assert, override=True)
BUILTIN_LOWERING["relax.print"] = _lower_print
BUILTIN_LOWERING["relax.assert_op"] = _lower_assert
NOT_DIFFERENTIABLE.update(
    _reasons(
        {
            "print": "prints its arguments (no tensor result)",
            "assert_op": "checks a condition (no tensor result)",
        }
    )
)

__all__ = ["RelaxAssertionError", "assert_op", "print"]
