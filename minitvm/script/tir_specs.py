"""What T.* annotations and calls stand for before the parser turns them into IR: variable,
buffer, iterator and region specs (VarDecl, BufferSpec, ...)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir.dtype import DataType
from ..tir.expr import (
    IterType,
)
from ..tir.stmt import ForKind

# ----------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class BufferSpec:
    """`T.Buffer(...)`, `T.alloc_buffer(...)`, `T.match_buffer(...)` or `T.decl_buffer(...)`."""

    kind: str  # "param" | "alloc" | "match" | "decl"
    shape: tuple | None
    dtype: str | None = None  # None: float32, or a matched region's dtype
    source: Any = None  # match_buffer: the handle param
    data: Any = None
    strides: tuple = ()
    elem_offset: Any = None
    scope: str = "global"
    align: int = 64
    offset_factor: int | None = None  # None: not given (1; a matched region's offset is then 0)
    axis_separators: tuple = ()
    name: str | None = None


@dataclass(frozen=True)
class VarDecl:
    """`n = T.int32()`: a fresh (symbolic) variable named by the assignment."""

    dtype: DataType
    is_size_var: bool = False
    name: str = field(default="", compare=False)  # the assigned name, when one was seen

    def as_tir_var(self) -> Any:
        """The variable this declaration stands for outside a parsed function: `n = T.int64()`
        in plain Python, then `R.Tensor((n, 784))` or `relax.TensorStructInfo((n,), ...)`, as
        TVM 0.20+ tutorials write it. One declaration is one variable, however often used."""
        var = self.__dict__.get("_var")
        if var is None:
            from ..tir.expr import SizeVar, Var

            var = (SizeVar if self.is_size_var else Var)(self.name or "v", self.dtype)
            object.__setattr__(self, "_var", var)
        return var


def annotation_dtype(ann: Any) -> DataType | None:
    """The dtype a scalar annotation names: `T.int32`, `T.handle`, or `T.handle("float32")`."""
    if isinstance(ann, VarDecl):
        return ann.dtype
    return getattr(ann, "_tvmscript_dtype", None)


@dataclass(frozen=True)
class LoopSpec:
    kind: ForKind
    min: Any
    extent: Any
    thread: str | None = None
    annotations: Mapping | None = None


@dataclass(frozen=True)
class AxisSpec:
    iter_type: IterType
    dom: Any
    value: Any
    dtype: str = "int32"


@dataclass(frozen=True)
class RemapSpec:
    kinds: str
    values: tuple


@dataclass(frozen=True)
class AllocateSpec:
    extents: tuple
    dtype: str
    scope: str | None = None
    condition: Any = True
    annotations: Mapping | None = None


@dataclass(frozen=True)
class AllocateConstSpec:
    """`B = T.allocate_const([1.0, 2.0], "float32", [2])`: constant memory named by the assignment."""

    data: tuple
    dtype: str
    extents: tuple
    annotations: Mapping | None = None


@dataclass(frozen=True)
class LaunchSpec:
    """`T.launch_thread("blockIdx.x", n)` (or of a `T.env_thread` var): a thread extent scope."""

    thread: Any  # a thread tag (str), or a Var made by T.env_thread
    extent: Any


@dataclass(frozen=True)
class LetSpec:
    """`with T.LetStmt(value) as v:` (or `var=v`): `v` bound to `value` over the body."""

    value: Any
    type_annotation: Any = None
    var: Any = None


@dataclass(frozen=True)
class EnvThreadSpec:
    """`tx = T.env_thread("threadIdx.x")`: a thread variable launched later by T.launch_thread."""

    tag: str


@dataclass(frozen=True)
class BlockSpec:
    name: str


@dataclass(frozen=True)
class InitSpec:
    pass


@dataclass(frozen=True)
class AttrSpec:
    node: Any
    key: str
    value: Any


@dataclass(frozen=True)
class BlockHeader:
    """A statement that configures the enclosing block or function (T.reads, T.where, ...)."""

    what: str  # "reads" | "writes" | "where" | "block_attr" | "func_attr"
    value: Any = field(default=None)


def _shape(shape: Any) -> tuple | None:
    if shape is None:  # a region's match_buffer: its extents (the parser fills them in)
        return None
    return tuple(shape) if isinstance(shape, tuple | list) else (shape,)


def _buffer_spec(
    kind: str,
    param: Any,
    shape: Any,
    dtype: str | None = None,
    data: Any = None,
    strides: Sequence = (),
    elem_offset: Any = None,
    scope: str = "global",
    align: int = 64,
    offset_factor: int | None = None,
    axis_separators: Sequence = (),
    name: str | None = None,
) -> BufferSpec:
    """One buffer declaration; `T.Buffer`, `T.match_buffer`, `T.alloc_buffer` and
    `T.decl_buffer` are this with `kind` (and `param`) fixed, so they share one signature."""
    return BufferSpec(
        kind,
        _shape(shape),
        dtype,
        param,
        data,
        tuple(strides),
        elem_offset,
        scope,
        align,
        offset_factor,
        tuple(axis_separators),
        name,
    )
