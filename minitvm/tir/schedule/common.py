"""Helpers shared by the schedule primitives: errors that show the IR, arithmetic, naming."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import ScheduleError
from ..expr import (
    Add,
    BufferLoad,
    FloorDiv,
    FloorMod,
    IntImm,
    IterType,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    const_value,
)
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import Block, BlockRealize, BufferStore, For, MatchBufferRegion
from .tree import block_realizes, walk


def schedule_error(func: PrimFunc, message: str, culprit: Any = None) -> ScheduleError:
    """A ScheduleError whose text ends with the function's script, the culprit marked."""
    try:
        text = func.script(highlight=[culprit]) if culprit is not None else func.script()
    except TypeError:  # a printer without highlight support
        text = func.script()
    return ScheduleError(f"{message}\n{text}")


def analyzer(loops: Any = ()) -> Any:
    """An arith.Analyzer with the given For loops' variables bound to their ranges."""
    from ...arith import Analyzer

    ana = Analyzer()
    for f in loops:
        ana.bind(f.loop_var, Range.from_min_extent(f.min, f.extent))
    return ana


def simplify(e: PrimExpr, ana: Any = None) -> PrimExpr:
    return (ana or analyzer()).simplify(e)


def const_int(e: Any) -> int | None:
    """The Python int of an integer constant expression, else None."""
    value = const_value(e)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def shown_factors(factors: list) -> list:
    """Loop factors as an error message shows them: constants as ints, the rest as they are."""
    return [const_int(f) if const_int(f) is not None else f for f in factors]


def is_one(e: Any) -> bool:
    return const_int(e) == 1


def is_zero(e: Any) -> bool:
    return const_int(e) == 0


def loop_name(loop: For) -> str:
    return loop.loop_var.name


def blocks_under(stmt: Any) -> list[BlockRealize]:
    """BlockRealizes under `stmt` that are not nested inside another block below it."""
    out = []
    for s, path in walk(stmt):
        if isinstance(s, BlockRealize) and not any(isinstance(p, Block) for p in path):
            out.append(s)
    return out


def first_block_name(stmt: Any) -> str:
    realizes = blocks_under(stmt)
    return realizes[0].block.name_hint if realizes else "?"


def describe_loop(loop: For) -> str:
    """`loop 'k' of block 'C'` for messages."""
    return f"loop '{loop_name(loop)}' of block '{first_block_name(loop.body)}'"


def is_quasi_affine(e: Any) -> bool:
    """Built from variables and integer constants by +, -, * by a constant, and floordiv /
    floormod by a positive constant (the bindings whose iteration sets are boxes)."""
    if isinstance(e, Var | IntImm):
        return True
    if isinstance(e, Add | Sub):
        return is_quasi_affine(e.a) and is_quasi_affine(e.b)
    if isinstance(e, Mul):
        return (const_int(e.a) is not None and is_quasi_affine(e.b)) or (
            const_int(e.b) is not None and is_quasi_affine(e.a)
        )
    if isinstance(e, FloorDiv | FloorMod):
        return (const_int(e.b) or 0) > 0 and is_quasi_affine(e.a)
    return False


def is_reduction_block(block: Block) -> bool:
    return block.init is not None or any(
        iv.iter_type == IterType.CommReduce for iv in block.iter_vars
    )


def unique_name(func: PrimFunc, base: str) -> str:
    """`base`, or `base_1`, `base_2`, ... so that no block or buffer of `func` has that name."""
    taken = {r.block.name_hint for r, _ in block_realizes(func.body)}
    for s, _ in walk(func.body):
        if isinstance(s, Block):
            taken.update(b.name for b in s.alloc_buffers)
    taken.update(b.name for b in func.buffer_map.values())
    if base not in taken:
        return base
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"


def add_root_alloc(func: PrimFunc, buf: Any) -> PrimFunc:
    """`func` with `buf` allocated by its root block (a root block is added when missing)."""
    from .tree import root_realize

    root = root_realize(func)
    if root is None:
        block = Block((), (), (), "root", func.body, alloc_buffers=(buf,))
        return func.replace(body=BlockRealize((), IntImm("bool", 1), block))
    block = root.block.replace(alloc_buffers=root.block.alloc_buffers + (buf,))
    return func.replace(body=root.replace(block=block))


def insert_in_scope(func: PrimFunc, new: Any, index_of: Any) -> PrimFunc:
    """Insert statement `new` into the root scope's statement list at `index_of(items)`."""
    from ..stmt import SeqStmt, seq
    from .tree import root_realize

    root = root_realize(func)
    body = root.block.body if root is not None else func.body
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    items.insert(index_of(items), new)
    new_body = seq(*items)
    if root is None:
        return func.replace(body=new_body)
    return func.replace(body=root.replace(block=root.block.replace(body=new_body)))


class SimplifyIndices(Mutator):
    """Simplify buffer indices and region bounds under the analyzer's variable ranges."""

    def __init__(self, ana: Any) -> None:
        super().__init__()
        self.ana = ana

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        return e.replace(indices=tuple(self.ana.simplify(self.visit(i)) for i in e.indices))

    def visit_BufferStore(self, s: BufferStore) -> Any:
        indices = tuple(self.ana.simplify(self.visit(i)) for i in s.indices)
        return s.replace(value=self.visit(s.value), indices=indices)

    def visit_Range(self, rg: Range) -> Any:
        return Range.from_min_extent(self.ana.simplify(rg.min), self.ana.simplify(rg.extent))


class ReplaceBuffers(Mutator):
    """Buffers in `table` (by id) are replaced; a match_buffer view of a replaced buffer
    becomes `derive(view)` (stays itself without `derive`), and the view's uses follow."""

    def __init__(self, table: dict, derive: Callable[[Any], Any] | None = None) -> None:
        super().__init__()
        self.table, self.derive, self.keep = table, derive, []

    def visit_Buffer(self, b: Any) -> Any:
        return self.table.get(id(b), b)

    def visit_MatchBufferRegion(self, m: MatchBufferRegion) -> Any:
        source = self.visit(m.source)
        if source is m.source:
            return m
        if self.derive is None:
            return m.replace(source=source)
        view = self.derive(m.buffer)
        self.table[id(m.buffer)] = view
        self.keep.append(m.buffer)  # its id stays a key of `table` while we rebuild
        return MatchBufferRegion(view, source)

    def visit_Block(self, b: Block) -> Any:
        matches = self.visit(b.match_buffers)  # first: the body uses the views
        return self.generic_visit(b.replace(match_buffers=matches))
