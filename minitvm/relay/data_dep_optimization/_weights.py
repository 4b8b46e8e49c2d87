"""What both rewrites share: reading a weight's value (a bound param or a constant)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ArgumentError
from ...ir.module import IRModule
from ..expr import Constant, Function, Var


def as_function(func: Any) -> Function:
    """The Relay function to rewrite (`mod["main"]` when given a module)."""
    if isinstance(func, IRModule):
        func = func["main"]
    if not isinstance(func, Function):
        raise ArgumentError(
            f"data_dep_optimization: expected a relay Function (mod['main']), got "
            f"{type(func).__name__}"
        )
    return func


def as_numpy(value: Any) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def weight_value(expr: Any, params: dict) -> np.ndarray | None:
    """The value of `expr` when it is a constant or a parameter bound in `params`."""
    if isinstance(expr, Constant):
        return expr.data.numpy()
    if isinstance(expr, Var) and expr.name_hint in params:
        return as_numpy(params[expr.name_hint])
    return None
