"""Remove blocks: bind iter vars to their values, guard predicates, allocate block buffers,
and turn each `T.match_buffer` view of a region into accesses of the region's buffer."""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ...ir.node import FrozenDict
from ..buffer import Buffer
from ..expr import (
    Add,
    BufferLoad,
    FloorMod,
    IntImm,
    IterType,
    Mul,
    PrimExpr,
    Range,
    Var,
    make_const,
)
from ..function import PrimFunc
from ..functor import Mutator, Visitor
from ..op import likely
from ..stmt import (
    Allocate,
    AllocateConst,
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    For,
    IfThenElse,
    MatchBufferRegion,
    Stmt,
    seq,
)
from ._pass import prim_func_pass
from .compact_buffer_allocation import DimAligns

# Block annotations with these prefixes still mean something after lowering: they move to the
# innermost enclosing loop (where codegen reads them). Others (schedule bookkeeping) are dropped.
_KEPT_ANNOTATION_PREFIXES = ("pragma_",)


# An Allocate with this annotation stays where its block put it (plan_buffer_allocation does
# not sink it): a block reaches the buffer through an opaque iterator (rolling_buffer), so its
# elements carry values from one iteration of the enclosing loops to the next.
PINNED_ALLOCATION = "tir.pinned_allocation"


def allocate_buffer(buf: Buffer, body: Stmt, pinned: bool = False) -> Allocate:
    """`Allocate` of `buf`'s memory around `body`, which sees `buf` through a DeclBuffer."""
    annotations = {"storage_scope": buf.storage_scope}
    if pinned:
        annotations[PINNED_ALLOCATION] = True
    return Allocate(
        buf.data,
        buf.dtype,
        buf.shape,
        IntImm("bool", 1),
        DeclBuffer(buf, body),
        FrozenDict(annotations),
    )


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


class _BlocksToLoops(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.binding: dict[int, PrimExpr] = {}
        self.keep: list[Any] = []  # keeps bound vars alive so their ids stay unique
        self.pending: list[dict] = [{}]  # annotations waiting for their enclosing loop
        self.views: dict[int, BufferRegion] = {}  # matched buffer id -> its region (lowered)
        self.pinned: set[int] = set()  # buffers a block accesses through an opaque iterator
        self.aligns = DimAligns()  # storage_align requests, applied by CompactBufferAllocation

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.binding.get(id(v), v)

    def visit_AllocateConst(self, s: AllocateConst) -> Stmt:
        """Constant memory as an allocation filled with its values before the body runs."""
        body = self.visit(s.body)
        flat = Buffer(s.buffer_var, s.dtype, (len(s.data),), name=s.buffer_var.name)
        fill = [BufferStore(flat, make_const(s.dtype, v), (k,)) for k, v in enumerate(s.data)]
        filled = seq(DeclBuffer(flat, seq(*fill)), body)  # the body sees it through its own views
        return Allocate(s.buffer_var, s.dtype, s.extents, IntImm("bool", 1), filled, s.annotations)

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        if id(e.buffer) not in self.views:
            return self.generic_visit(e)
        source, indices = self.through_view(e.buffer, [self.visit(i) for i in e.indices])
        return BufferLoad(source, indices)

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        if id(s.buffer) not in self.views:
            return self.generic_visit(s)
        source, indices = self.through_view(s.buffer, [self.visit(i) for i in s.indices])
        return BufferStore(source, self.visit(s.value), indices)

    def through_view(self, view: Buffer, indices: list) -> tuple[Buffer, list]:
        """Indices into a matched buffer as indices into the buffer of the region it views."""
        region = self.views[id(view)].region
        lead = len(region) - len(indices)  # leading region dims (extent 1) are not in the view
        mins = [r.min for r in region]
        return self.views[id(view)].buffer, mins[:lead] + [
            _add(m, i) for m, i in zip(mins[lead:], indices)
        ]

    def lowered_region(self, r: BufferRegion) -> BufferRegion:
        ranges = [Range.from_min_extent(self.visit(x.min), self.visit(x.extent)) for x in r.region]
        if id(r.buffer) not in self.views:
            return BufferRegion(r.buffer, tuple(ranges))
        source, mins = self.through_view(r.buffer, [x.min for x in ranges])
        lead = len(mins) - len(ranges)
        extents = [IntImm(m.dtype, 1) for m in mins[:lead]] + [x.extent for x in ranges]
        return BufferRegion(source, tuple(Range.from_min_extent(m, e) for m, e in zip(mins, extents)))

    def bind_view(self, block: Block, match: MatchBufferRegion) -> None:
        """Bind a matched buffer's data, shape, offset and strides to its region (TVM's rules)."""
        region = self.lowered_region(match.source)
        for var, value in _view_bindings(block, match.buffer, region):
            if isinstance(var, Var) and id(var) not in self.binding:
                self.binding[id(var)] = value
                self.keep.append(var)
        self.views[id(match.buffer)] = region

    def visit_For(self, loop: For) -> For:
        self.pending.append({})
        loop = self.generic_visit(loop)
        moved = self.pending.pop()
        if moved:
            loop = loop.replace(annotations=FrozenDict({**moved, **loop.annotations}))
        return loop

    def visit_BlockRealize(self, realize: BlockRealize) -> Stmt:
        block = realize.block
        values = [self.visit(v) for v in realize.iter_values]
        for iv, value in zip(block.iter_vars, values):
            self.binding[id(iv.var)] = value
            self.keep.append(iv.var)
        for match in block.match_buffers:
            self.bind_view(block, match)
        if any(iv.iter_type == IterType.Opaque for iv in block.iter_vars):
            self.pinned.update(id(rg.buffer) for rg in block.reads + block.writes)
        self.aligns.record(block)
        body = self.visit(block.body)
        for buf in reversed(block.alloc_buffers):
            alloc = allocate_buffer(self.visit(buf), body, id(buf) in self.pinned)
            body = self.aligns.annotate(alloc, buf)
        predicate = self.visit(realize.predicate)
        if not _is_true(predicate):
            body = IfThenElse(likely(predicate), body)
        kept = {
            k: v for k, v in block.annotations.items() if k.startswith(_KEPT_ANNOTATION_PREFIXES)
        }
        self.pending[-1].update(kept)
        return body


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and a.value == 0:
        return b
    return Add(a, b)


def _view_bindings(block: Block, view: Buffer, region: BufferRegion) -> list[tuple[Any, PrimExpr]]:
    """(view field, value) pairs that make `view` the region; a field that is not a variable
    must provably equal its value, else the view cannot be honoured: BuildError."""
    from ...arith.analyzer import Analyzer

    source = region.buffer
    where = f"block '{block.name_hint}': T.match_buffer '{view.name}' of '{source.name}'"
    for what, mine, theirs in (
        ("dtype", view.dtype, source.dtype),
        ("scope", view.storage_scope, source.storage_scope),
    ):
        if mine != theirs:
            raise BuildError(f"{where}: the {what} {mine} differs from the source's {theirs}")
    lead = len(region.region) - len(view.shape)
    if lead < 0:
        raise BuildError(
            f"{where}: the view has {len(view.shape)} dimensions but the region only "
            f"{len(region.region)}; match a region with at least as many dimensions"
        )
    analyzer = Analyzer()
    for k, r in enumerate(region.region[:lead]):
        if not analyzer.can_prove_equal(r.extent, 1):
            raise BuildError(
                f"{where}: region dimension {k} has extent {r.extent}, but the view drops it; "
                "only dimensions of extent 1 can be left out of the view's shape"
            )
    strides = _strides(source)
    start = source.elem_offset
    for r, st in zip(region.region, strides):
        start = _add(start, Mul(r.min, st)) if not _is_zero(r.min) else start
    pairs: list[tuple[Any, PrimExpr, str]] = [(view.data, source.data, "data pointer")]
    pairs += [
        (dim, r.extent, f"shape[{k}]")
        for k, (dim, r) in enumerate(zip(view.shape, region.region[lead:]))
    ]
    uses_pointer = _uses_pointer(block, view)
    if isinstance(view.elem_offset, Var) or uses_pointer:
        pairs.append((view.elem_offset, start, "elem_offset"))
    for k, st in enumerate(view.strides):
        pairs.append((st, strides[lead + k], f"strides[{k}]"))
    if uses_pointer and not view.strides:  # code reading the pointer assumes a compact view
        compact = _strides(view)
        pairs += [
            (compact[k], strides[lead + k], f"stride of dimension {k} (compact)")
            for k, dim in enumerate(view.shape)
            if not analyzer.can_prove_equal(dim, 1)
        ]
    out = []
    for mine, value, what in pairs:
        if isinstance(mine, Var):
            out.append((mine, value))
        elif not analyzer.can_prove_equal(mine, value):
            raise BuildError(
                f"{where}: its {what} is {mine}, but the region gives {value}; declare it as a "
                'variable (elem_offset, strides=["s0", ...], offset_factor=) or match a region '
                "that satisfies it"
            )
    factor = view.offset_factor
    if factor > 1 and not analyzer.can_prove_equal(FloorMod(start, factor), 0):
        raise BuildError(
            f"{where}: the region starts at element {start}, which is not provably a multiple "
            f"of offset_factor={factor}"
        )
    return out


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _strides(buf: Buffer) -> list[PrimExpr]:
    """The element stride of each dimension (the declared strides, else row-major compact)."""
    if buf.strides:
        return list(buf.strides)
    out: list[PrimExpr] = []
    acc: PrimExpr = IntImm(buf.elem_offset.dtype, 1)
    for dim in reversed(buf.shape):
        out.append(acc)
        acc = dim * acc if not (isinstance(acc, IntImm) and acc.value == 1) else dim
    return out[::-1]


class _PointerUse(Visitor):
    """Does code use a buffer's pointer itself (B.data), not only its elements (B[i])?"""

    def __init__(self, data: Var) -> None:
        self.data, self.found = data, False

    def visit_Buffer(self, b: Buffer) -> None:
        return None  # a buffer's own fields are not uses of its pointer

    def visit_Var(self, v: Var) -> None:
        self.found = self.found or v is self.data


def _uses_pointer(block: Block, view: Buffer) -> bool:
    finder = _PointerUse(view.data)
    finder.visit((block.init, block.body))
    return finder.found


def convert_blocks_to_loops(func: PrimFunc) -> PrimFunc:
    """Replace every BlockRealize by its body with iter vars substituted by their bindings.

    A non-trivial predicate becomes `if likely(pred)`; block alloc_buffers become `Allocate`
    statements at the block (plan_and_update_buffer_allocation_location moves them later).
    """
    mutator = _BlocksToLoops()
    # annotations of blocks outside every loop have no loop to live on and are dropped
    return func.replace(body=mutator.visit(func.body))


ConvertBlocksToLoops = prim_func_pass(convert_blocks_to_loops, "ConvertBlocksToLoops")
LowerOpaqueBlock = ConvertBlocksToLoops  # TVM's name for the same step
