"""The rule a let binding (tir.Let, tir.LetStmt) follows: the value has exactly the variable's
dtype, as TVM checks. There is no implicit cast: an int64 value in an int32 variable would
wrap silently, a float32 value in a float16 one would round."""

from __future__ import annotations

from typing import Any

from ..error import DTypeError


def check_let_dtype(what: str, var: Any, value: Any) -> None:
    if value.dtype != var.dtype:
        raise DTypeError(
            f"{what}: variable '{var.name}' is {var.dtype} but its value {value} is "
            f"{value.dtype}; cast the value (tir.Cast('{var.dtype}', value)) or declare the "
            f"variable as {value.dtype}"
        )
