"""The Relay op table: each op is one row saying how it becomes relax ops.

A row's `to_relax(emit, args, attrs)` builds the relax expression for one call from relax
arguments. Type inference runs it on relax variables of the argument types and reads the
result's struct info; the translator runs it with the block builder's `emit`. So the shape
rules are relax's, and the two front ends cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..expr import Attrs, Call, Expr, Op, TupleWrapper, make_attrs

ToRelax = Callable[[Callable[[Any], Any], list, Attrs], Any]


@dataclass(frozen=True)
class OpDef:
    """One Relay op: its name, how to build its relax form, and how many outputs it has."""

    name: str
    to_relax: ToRelax
    # > 1: the call's value is a tuple of this many tensors (a function of the attrs for split)
    num_outputs: int | Callable[[Attrs], int] = 1
    # (args, arg types, attrs) -> the call in core Relay ops (the QNN ops): the translator
    # lowers it so and `to_relax` only gives the result type
    canonicalize: Callable[[list, list, Attrs], Expr] | None = None


def register(
    name: str, to_relax: ToRelax, num_outputs: int | Callable = 1, canonicalize: Any = None
) -> Op:
    """Add the op `name` with its relax form (and Relay lowering, if any) to the table."""
    return Op.register(name, OpDef(name, to_relax, num_outputs, canonicalize))


def get(name: str) -> Op:
    """The op called `name`: `relay.op.get("nn.conv2d")`."""
    return Op.get(name)


def call(name: str, args: list | tuple, attrs: Mapping | None = None) -> Expr:
    """A call of op `name`; a multi-output op gives a TupleWrapper (`bn(...)[0]`)."""
    op = Op.get(name)
    out = Call(op, tuple(args), make_attrs(attrs) if attrs is not None else None)
    n = op.op_def.num_outputs
    n = n(out.attrs) if callable(n) else n
    return TupleWrapper(out, n) if n > 1 else out


def is_building(emit: Callable[[Any], Any]) -> bool:
    """Whether a row runs for the translator (`emit` is a block builder's) rather than for type
    inference; a row that needs constant arguments checks them only then."""
    from ...relax.block_builder import BlockBuilder

    return isinstance(getattr(emit, "__self__", None), BlockBuilder)


def call_te(emit: Callable[[Any], Any], compute: Callable, *args: Any, **kwargs: Any) -> Any:
    """The relax `call_tir` of the TE function `compute(*args, **kwargs)`, for rows whose kernel
    is a topi compute with no relax op of its own.

    The translator's `emit` is a block builder's, which keeps the kernel in the module it builds;
    type inference passes a plain function, and then a scratch builder makes the call, whose
    struct info is all that is read."""
    from ...relax.block_builder import BlockBuilder

    bb = emit.__self__ if is_building(emit) else BlockBuilder()
    return bb.call_te(compute, *args, **kwargs)


def list_op_names() -> list[str]:
    return Op.list_op_names()
