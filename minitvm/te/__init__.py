"""Tensor expressions: describe a computation per element, then turn it into TIR.

`te.placeholder`, `te.compute`, `te.reduce_axis`, `te.sum/max/min`, `te.create_prim_func`;
the math functions of `tir.op` are re-exported so TE programs read as in TVM.
"""

from typing import Any

from ..tir.expr import IterVar, Range, Var
from ..tir.index_map import IndexMap
from ..tir.op import (
    abs,
    acos,
    all,
    any,
    asin,
    atan,
    atan2,
    ceil,
    const,
    cos,
    cosh,
    div,
    erf,
    exp,
    exp2,
    exp10,
    floor,
    floordiv,
    floormod,
    fmod,
    if_then_else,
    indexdiv,
    indexmod,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    log10,
    max_value,
    min_value,
    nearbyint,
    pow,
    power,
    round,
    rsqrt,
    select,
    sigmoid,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
    truncdiv,
    truncmod,
)
from .operation import (
    ComputeOp,
    Operation,
    PlaceholderOp,
    compute,
    placeholder,
    reduce_axis,
    size_var,
    thread_axis,
    var,
)
from .reduction import CommReducer, Reduce, Reducer, comm_reducer, max, min, sum
from .extern import ExternOp, extern
from .scan import ScanOp, scan
from .tag import tag_scope
from .tensor_intrin import TensorIntrin, decl_tensor_intrin
from .tensor import ProducerLoad, Tensor, TensorSlice
from .to_tir import create_prim_func

AXIS_SEPARATOR = IndexMap.AXIS_SEPARATOR  # between physical axes in transform_layout

_FROM_SCHEDULE = ("create_schedule", "Schedule", "Stage")


def __getattr__(name: str) -> Any:
    # The classic schedule adapter lives in te/schedule.py; imported on first use so that
    # `te` stays importable on its own.
    if name in _FROM_SCHEDULE:
        from . import schedule

        return getattr(schedule, name)
    raise AttributeError(f"module 'minitvm.te' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM_SCHEDULE))


__all__ = [
    "AXIS_SEPARATOR",
    "CommReducer",
    "ComputeOp",
    "ExternOp",
    "IterVar",
    "Operation",
    "PlaceholderOp",
    "ProducerLoad",
    "Range",
    "Reduce",
    "Reducer",
    "ScanOp",
    "Tensor",
    "TensorIntrin",
    "TensorSlice",
    "Var",
    "abs",
    "acos",
    "all",
    "any",
    "asin",
    "atan",
    "atan2",
    "ceil",
    "comm_reducer",
    "compute",
    "const",
    "cos",
    "cosh",
    "create_prim_func",
    "decl_tensor_intrin",
    "div",
    "erf",
    "exp",
    "exp2",
    "exp10",
    "extern",
    "floor",
    "floordiv",
    "floormod",
    "fmod",
    "if_then_else",
    "indexdiv",
    "indexmod",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log1p",
    "log2",
    "log10",
    "max",
    "max_value",
    "min",
    "min_value",
    "nearbyint",
    "placeholder",
    "pow",
    "power",
    "reduce_axis",
    "round",
    "rsqrt",
    "scan",
    "select",
    "sigmoid",
    "sin",
    "sinh",
    "size_var",
    "sqrt",
    "sum",
    "tag_scope",
    "tan",
    "tanh",
    "thread_axis",
    "trunc",
    "truncdiv",
    "truncmod",
    "var",
]
