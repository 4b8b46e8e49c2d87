"""The op table: one entry per graph-level op (STYLE.md: name, shape rule, TE, numpy, gradient).

Each `OpDef` says how to infer a call's struct info, how to legalize it to TE (a `topi`
function of te tensors plus the call's attributes as keyword arguments), how to evaluate it
with numpy (same arguments, numpy arrays), its fusion pattern, and — reserved for the training
issue — its gradient rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...ir.dtype import DataType
from ...ir.node import FrozenDict
from ...tir.analysis.op_pattern import OpPattern
from ..expr import Call, Expr, Op
from ..struct_info import StructInfo


@dataclass(frozen=True)
class OpDef:
    """One row of the op table."""

    name: str
    infer: Callable[[Call], StructInfo]
    te: Callable[..., Any] | None  # (te tensors / shapes / scalars..., **attrs) -> te.Tensor | list
    numpy: (
        Callable[..., Any] | None
    )  # (numpy arrays / shapes / scalars..., **attrs) -> array | tuple
    pattern: OpPattern
    grad: Callable[..., Any] | None = None  # reserved for relax.Gradient


OP_TABLE: dict[str, OpDef] = {}


def register_op(
    name: str,
    infer: Callable[[Call], StructInfo],
    te: Callable[..., Any] | None,
    numpy: Callable[..., Any] | None,
    pattern: OpPattern,
    grad: Callable[..., Any] | None = None,
) -> Op:
    """Add a row to the op table and attach it to `Op.get(name)`."""
    op = Op.register(name)
    op.op_def = OpDef(name, infer, te, numpy, pattern, grad)
    OP_TABLE[name] = op.op_def
    return op


def _freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, DataType):
        return str(value)
    if hasattr(value, "__index__") and not isinstance(value, bool | int):
        return int(value)
    return value


def make_call(
    op: Op, args: tuple[Expr, ...], attrs: Mapping[str, Any] | None = None, sinfo_args: tuple = ()
) -> Call:
    """A Call of `op`; attribute values are frozen to tuples/str so the node is immutable."""
    frozen = FrozenDict({k: _freeze(v) for k, v in (attrs or {}).items()})
    return Call(op, tuple(args), frozen, tuple(sinfo_args))
