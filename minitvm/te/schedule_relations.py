"""The records a Stage keeps: IterVar relations (TVM's Split, Fuse, Singleton), attachments and
cache stages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..error import ScheduleError
from ..tir.expr import IterVar, Var
from .operation import Operation
from .tensor import Tensor


class _CacheOp:
    """The operation of a tensor made by cache_read / cache_write: a copy stage."""

    num_outputs = 1

    def __init__(
        self, name: str, shape: tuple, dtype: Any, axis: tuple, reduce_axis: tuple, source: Tensor
    ) -> None:
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.axis, self.reduce_axis, self.source = tuple(axis), tuple(reduce_axis), source
        self.tag, self.attrs = "", {}

    @property
    def input_tensors(self) -> list[Tensor]:
        return [self.source]

    def output(self, index: int) -> Tensor:
        return Tensor(self.shape, self.dtype, self, 0)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return (self.output(0),)

    def __repr__(self) -> str:
        return f"CacheOp({self.name})"


def _iv(name: str, like: IterVar) -> IterVar:
    return IterVar(None, Var(name, like.var.dtype), like.iter_type)


def _op_of(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation | _CacheOp):
        return x
    raise ScheduleError(f"expected a te.Tensor or its .op, got {type(x).__name__}")


@dataclass(frozen=True)
class Split:
    """`Stage.relations` entry: `parent` split into `outer`, `inner` by `factor` or `nparts`."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: Any = None
    nparts: Any = None


@dataclass(frozen=True)
class Fuse:
    """`Stage.relations` entry: adjacent loops `fused_from` (outer first) became `fused`."""

    fused_from: tuple
    fused: IterVar

    @property
    def outer(self) -> IterVar:
        return self.fused_from[0]

    @property
    def inner(self) -> IterVar:
        return self.fused_from[-1]


@dataclass(frozen=True)
class Singleton:
    """`Stage.relations` entry: `fuse()` of no loops made the unit loop `iter`."""

    iter: IterVar


@dataclass
class _Attach:
    kind: str  # "root" | "inline" | "at"
    parent: Any = None
    iv: IterVar | None = None
