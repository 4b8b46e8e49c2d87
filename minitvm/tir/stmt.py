"""TIR statement nodes: loops, stores, blocks, control flow and allocation."""

from __future__ import annotations

import enum
from typing import Any

from ..error import MiniTVMError
from ..ir.dtype import DataType
from ..ir.node import FrozenDict, Node, node, setfield
from .buffer import Buffer
from .expr import IntImm, IterVar, PrimExpr, Range, Var, as_expr, _match_operands
from .let_check import check_let_dtype


class Stmt(Node):
    """Base class of statements."""

    __slots__ = ()


class ForKind(enum.IntEnum):
    SERIAL = 0
    PARALLEL = 1
    VECTORIZED = 2
    UNROLLED = 3
    THREAD_BINDING = 4


def _frozen(d: Any) -> FrozenDict:
    return d if isinstance(d, FrozenDict) else FrozenDict(d or {})


@node
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple

    def __post_init__(self):
        setfield(self, "indices", tuple(as_expr(_lift(i), like=DataType("int32")) for i in self.indices))
        setfield(self, "value", as_expr(self.value, like=self.buffer.dtype))
        if len(self.indices) != len(self.buffer.shape) and self.buffer.axis_separators == ():
            raise MiniTVMError(
                f"store to buffer '{self.buffer.name}' uses {len(self.indices)} indices, "
                f"but it has {len(self.buffer.shape)} dimensions"
            )


@node
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: IterVar | None = None
    annotations: FrozenDict = FrozenDict()
    _def_fields = ("loop_var",)

    def __post_init__(self):
        lo = as_expr(self.min, like=self.loop_var.dtype)
        ext = as_expr(self.extent, like=self.loop_var.dtype)
        lo, ext = _match_operands(lo, ext)
        setfield(self, "min", lo)
        setfield(self, "extent", ext)
        setfield(self, "kind", ForKind(self.kind))
        setfield(self, "annotations", _frozen(self.annotations))


@node
class While(Stmt):
    condition: PrimExpr
    body: Stmt

    def __post_init__(self):
        setfield(self, "condition", as_expr(self.condition))


@node
class SeqStmt(Stmt):
    seq: tuple

    def __post_init__(self):
        flat: list[Stmt] = []
        for s in self.seq:
            if isinstance(s, SeqStmt):
                flat.extend(s.seq)
            elif s is not None:
                flat.append(s)
        setfield(self, "seq", tuple(flat))

    def __len__(self) -> int:
        return len(self.seq)

    def __getitem__(self, i: int) -> Stmt:
        return self.seq[i]


def seq(*stmts: Stmt | None) -> Stmt:
    """Sequence the given statements, dropping None and avoiding a one-element SeqStmt."""
    body = SeqStmt(tuple(stmts))
    if len(body.seq) == 1:
        return body.seq[0]
    return body if body.seq else Evaluate(IntImm(DataType("int32"), 0))


@node
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None

    def __post_init__(self):
        cond = as_expr(self.condition)
        if not cond.dtype.is_bool:
            raise MiniTVMError(f"if condition must be bool, got {cond.dtype}: `{cond}`")
        setfield(self, "condition", cond)


@node
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt
    _def_fields = ("var",)

    def __post_init__(self):
        setfield(self, "value", as_expr(self.value, like=self.var.dtype))
        check_let_dtype("LetStmt", self.var, self.value)


@node
class AttrStmt(Stmt):
    """An annotation `attr_key = value` on `node` for `body` (pragmas, thread extents)."""

    node: Any
    attr_key: str
    value: PrimExpr
    body: Stmt


@node
class AssertStmt(Stmt):
    condition: PrimExpr
    message: str
    body: Stmt

    def __post_init__(self):
        # `a == b` is an EqualOp until used as IR: the code generators only know EQ
        setfield(self, "condition", as_expr(self.condition))


@node
class Allocate(Stmt):
    """Allocate `extents` elements of `dtype` at `buffer_var` for the duration of `body`."""

    buffer_var: Var
    dtype: DataType
    extents: tuple
    condition: PrimExpr
    body: Stmt
    annotations: FrozenDict = FrozenDict()
    _def_fields = ("buffer_var",)

    def __post_init__(self):
        setfield(self, "dtype", DataType(self.dtype))
        setfield(self, "extents", tuple(as_expr(e, like=DataType("int32")) for e in self.extents))
        setfield(self, "condition", as_expr(self.condition))
        setfield(self, "annotations", _frozen(self.annotations))


@node
class AllocateConst(Stmt):
    """`extents` elements of `dtype` at `buffer_var`, holding `data` (row-major), for `body`."""

    buffer_var: Var
    dtype: DataType
    extents: tuple
    data: tuple  # Python numbers, one per element
    body: Stmt
    annotations: FrozenDict = FrozenDict()
    _def_fields = ("buffer_var",)

    def __post_init__(self):
        setfield(self, "dtype", DataType(self.dtype))
        setfield(self, "extents", tuple(as_expr(e, like=DataType("int32")) for e in self.extents))
        setfield(self, "data", tuple(self.data))
        setfield(self, "annotations", _frozen(self.annotations))
        size = 1
        for e in self.extents:
            if not isinstance(e, IntImm):
                raise MiniTVMError(f"allocate_const '{self.buffer_var.name}': extents must be constants")
            size *= e.value
        if size != len(self.data):
            raise MiniTVMError(
                f"allocate_const '{self.buffer_var.name}': {len(self.data)} values for "
                f"{size} elements (extents {[e.value for e in self.extents]})"
            )


@node
class DeclBuffer(Stmt):
    """Declare `buffer` (a view of memory allocated elsewhere) for `body`."""

    buffer: Buffer
    body: Stmt
    _def_fields = ("buffer",)


@node
class Evaluate(Stmt):
    value: PrimExpr

    def __post_init__(self):
        setfield(self, "value", as_expr(self.value))


@node
class BufferRegion(Node):
    """A rectangular region of a buffer: one Range per dimension."""

    buffer: Buffer
    region: tuple

    def __post_init__(self):
        setfield(self, "region", tuple(_as_range(r) for r in self.region))

    @staticmethod
    def full_region(buffer: Buffer) -> BufferRegion:
        return BufferRegion(buffer, tuple(Range.from_min_extent(0, s) for s in buffer.shape))


@node
class MatchBufferRegion(Node):
    buffer: Buffer
    source: BufferRegion
    _def_fields = ("buffer",)


@node
class Block(Stmt):
    """A unit of computation with its own iterators, declared reads/writes and optional init."""

    iter_vars: tuple
    reads: tuple
    writes: tuple
    name_hint: str
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple = ()
    match_buffers: tuple = ()
    annotations: FrozenDict = FrozenDict()
    _def_fields = ("alloc_buffers", "match_buffers")  # the buffers the block declares
    # compared definitions first: the body may use a matched buffer's `B.data` before any B[...].
    # The name is left out, as in TVM: two blocks that compute the same are equal whatever their
    # names (decompose_reduction's "C_update" equals a hand-written "C").
    _structural_order = (
        "iter_vars", "alloc_buffers", "match_buffers", "reads", "writes", "init", "body",
        "annotations",
    )  # fmt: skip

    def __post_init__(self):
        for field in ("iter_vars", "reads", "writes", "alloc_buffers", "match_buffers"):
            setfield(self, field, tuple(getattr(self, field) or ()))
        setfield(self, "annotations", _frozen(self.annotations))


@node
class BlockRealize(Stmt):
    """An instance of `block` with its iter vars bound to `iter_values`, run when `predicate`."""

    iter_values: tuple
    predicate: PrimExpr
    block: Block

    def __post_init__(self):
        values = tuple(as_expr(_lift(v), like=DataType("int32")) for v in self.iter_values)
        setfield(self, "iter_values", values)
        setfield(self, "predicate", as_expr(self.predicate))
        if len(values) != len(self.block.iter_vars):
            raise MiniTVMError(
                f"block '{self.block.name_hint}' has {len(self.block.iter_vars)} iter vars "
                f"but is bound to {len(values)} values"
            )


def _lift(x: Any) -> Any:
    return x.var if isinstance(x, IterVar) else x


def _as_range(r: Any) -> Range:
    if isinstance(r, Range):
        return r
    if isinstance(r, tuple | list) and len(r) == 2:
        return Range.by_begin_end(r[0], r[1])
    return Range.from_min_extent(r, 1)  # a single point


def region_from_slices(buffer: Buffer, indices: tuple) -> BufferRegion:
    """`A[i, 0:4]` → the BufferRegion it denotes (used by TVMScript T.reads/T.writes)."""
    ranges = []
    for dim, idx in zip(buffer.shape, indices):
        if isinstance(idx, slice):
            start = 0 if idx.start is None else idx.start
            stop = dim if idx.stop is None else idx.stop
            ranges.append(Range.by_begin_end(start, stop))
        else:
            ranges.append(Range.from_min_extent(_lift(idx), 1))
    return BufferRegion(buffer, tuple(ranges))


def regions_over_sources(block: Block, regions: tuple) -> tuple:
    """`regions` with each of `block`'s matched buffers replaced by the region it matches.

    An access of a `T.match_buffer` view is an access of its source region; outside the block
    only the source buffer exists. Duplicates (two views of one region) are dropped.
    """
    if not block.match_buffers:
        return regions
    from ..ir.structural import structural_equal

    source = {id(m.buffer): m.source for m in block.match_buffers}
    out: list[BufferRegion] = []
    for r in regions:
        r = source.get(id(r.buffer), r)
        if not any(r is o or structural_equal(r, o) for o in out):
            out.append(r)
    return tuple(out)
