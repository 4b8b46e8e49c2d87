"""loop_partition: cut a loop into consecutive loops over adjacent ranges, as TVM does.

`for i in range(128)` partitioned by factors [2, 64] becomes three loops over [0, 2), [2, 66)
and [66, 128), each in its own opaque block `<block>_i<k>_partition`, all three under one opaque
block `<block>_i_common`. Every block under a copy gets the suffix `_i<k>`; a block iterator bound
to exactly the new loop variable gets that loop's range as its domain; a reduction the loop
drives keeps its init only in the first part, so the sum starts once, and a read/write region
of a buffer that the block accesses only at its iterators becomes the box of their domains.
"""

from __future__ import annotations

from typing import Any

from ...ir.dtype import DataType
from ..expr import BufferLoad, IntImm, IterType, PrimExpr, Range, Var, cast
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, SeqStmt, Stmt
from ..transform._rename import substitute_fresh
from .common import (
    analyzer,
    const_int,
    describe_loop,
    first_block_name,
    schedule_error,
    shown_factors,
)
from .loop_transform import _check_factors, _enclosing_bindings
from .tree import Path, loops_above, replace_stmt, uses_var, walk


def _check_loop(func: PrimFunc, where: str, loop: For) -> None:
    """TVM's rules: no annotation or thread binding (they would not carry over to the copies),
    and a constant min and extent (the partition bounds are numbers)."""
    if loop.annotations or loop.thread_binding is not None:
        why = "is bound to a thread" if loop.thread_binding is not None else "has annotations"
        raise schedule_error(
            func,
            f"{where}: the loop {why}; partition it before annotating or binding it",
            loop,
        )
    if const_int(loop.min) is None or const_int(loop.extent) is None:
        raise schedule_error(
            func,
            f"{where}: the loop's min {loop.min} and extent {loop.extent} must be constants "
            "(a dynamic shape cannot be partitioned); split the loop instead",
            loop,
        )


def _bounds(func: PrimFunc, where: str, loop: For, path: Path, factors: list) -> list[PrimExpr]:
    """The end of every partition (the last is min + extent): each factor is a partition's
    length, a None one is inferred, and without a None the rest of the loop is one more part."""
    ana = analyzer(loops_above(path))
    ext = loop.extent
    known: PrimExpr = IntImm(ext.dtype, 0)
    for f in factors:
        if f is not None:
            if not ana.can_prove(f > 0):
                raise schedule_error(
                    func, f"{where}: cannot prove that factor {f} is positive", loop
                )
            known = known + f
    known = ana.simplify(known)
    if not ana.can_prove(known < ext):
        raise schedule_error(
            func,
            f"{where}: factors {shown_factors(factors)} add up to {known}, which is not smaller than the loop "
            f"extent {ext}; every part, including the inferred or remaining one, must be "
            "non-empty",
            loop,
        )
    lengths = [ana.simplify(ext - known) if f is None else f for f in factors]
    if None not in factors:
        lengths.append(ana.simplify(ext - known))
    ends, end = [], loop.min
    for n in lengths:
        end = ana.simplify(end + n)
        ends.append(end)
    return ends


def _accessed_only_at(block: Block, buffer: Any) -> list[Var] | None:
    """The iterators of `block` at which its body and init access `buffer`, when every access
    uses the same list of the block's own iterators as indices; else None."""
    own = {id(iv.var) for iv in block.iter_vars}
    seen: list = []

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad | BufferStore) and n.buffer is buffer:
            seen.append(tuple(n.indices))

    for part in (block.body, block.init):
        if part is not None:
            post_order_visit(part, visit)
    first = seen[0] if seen else ()
    if not seen or any(
        len(s) != len(first) or any(a is not b for a, b in zip(s, first)) for s in seen
    ):
        return None  # accesses at different indices: the declared region stays
    if not all(isinstance(v, Var) and id(v) in own for v in first):
        return None
    return list(first)


def _inits_to_drop(func: PrimFunc, where: str, body: Stmt, var: Var) -> set[int]:
    """Blocks (by id) whose init must go in every part but the first: a reduction the
    partitioned loop drives starts once, in the first part. A reduction it drives other than
    as one reduction iterator equal to the loop variable is refused (no part owns its start)."""
    out: set[int] = set()
    mine = {id(var)}
    for s, p in walk(body):
        if not isinstance(s, BlockRealize) or s.block.init is None:
            continue
        outer = _enclosing_bindings(p)
        pairs = [
            (iv, substitute(v, outer) if outer else v)
            for iv, v in zip(s.block.iter_vars, s.iter_values)
        ]
        driven = [(iv, v) for iv, v in pairs if uses_var(v, mine)]
        if not any(iv.iter_type is IterType.CommReduce for iv, _ in driven):
            continue
        if any(iv.iter_type is not IterType.CommReduce or v is not var for iv, v in driven):
            raise schedule_error(
                func,
                f"{where}: the loop drives reduction block '{s.block.name_hint}' through "
                f"{', '.join(f'{iv.var.name} = {v}' for iv, v in driven)}; only a loop that is "
                "exactly one reduction iterator (and no spatial one) can be partitioned, so "
                "that the reduction starts in the first part",
                s,
            )
        out.add(id(s.block))
    return out


class _Rename(Mutator):
    """Suffix every block under one partition copy, with fresh iterator variables; give an
    iterator bound to exactly the copy's loop variable that loop's range (as TVM does)."""

    def __init__(self, var: Var, start: PrimExpr, end: PrimExpr, drop_init: set[int]) -> None:
        super().__init__()
        self.var, self.start, self.end, self.drop_init = var, start, end, drop_init

    def visit_BlockRealize(self, r: BlockRealize) -> BlockRealize:
        drop = id(r.block) in self.drop_init
        r = self.generic_visit(r)
        block = r.block.replace(name_hint=f"{r.block.name_hint}_{self.var.name}")
        if drop:
            block = block.replace(init=None)
        bound = [k for k, v in enumerate(r.iter_values) if v is self.var]
        if bound:
            block = self._narrow(block, bound[0])
        fresh = {i.var: Var(i.var.name, i.var.dtype) for i in block.iter_vars}
        return r.replace(block=substitute(block, fresh) if fresh else block)

    def _narrow(self, block: Block, index: int) -> Block:
        iv = block.iter_vars[index]
        dtype = iv.var.dtype
        lo, hi = cast(dtype, self.start), cast(dtype, self.end)
        narrowed = iv.replace(dom=Range.from_min_extent(lo, analyzer().simplify(hi - lo)))
        iters = block.iter_vars[:index] + (narrowed,) + block.iter_vars[index + 1 :]
        block = block.replace(iter_vars=iters)
        doms = {id(i.var): i.dom for i in iters}

        def box(region: BufferRegion) -> BufferRegion:
            at = _accessed_only_at(block, region.buffer)
            if at is None or len(at) != len(region.region):
                return region  # the declared region stays (it holds for the narrower domain)
            return region.replace(region=tuple(doms[id(v)] for v in at))

        return block.replace(
            reads=tuple(box(x) for x in block.reads), writes=tuple(box(x) for x in block.writes)
        )


def _partition_block(name: str, body: Stmt) -> BlockRealize:
    """An opaque block (no iterators, no declared regions) around `body`."""
    block = Block((), (), (), name, body)
    return BlockRealize((), IntImm(DataType("bool"), 1), block)


def loop_partition(
    func: PrimFunc, loop: For, path: Path, factors: list
) -> tuple[PrimFunc, list[Var]]:
    """Partition `loop` into consecutive loops; returns their loop variables in order."""
    where = f"loop_partition({describe_loop(loop)})"
    _check_loop(func, where, loop)
    factors = _check_factors(func, loop, list(factors), what="loop_partition")
    ends = _bounds(func, where, loop, path, factors)
    dtype = loop.loop_var.dtype
    base = f"{first_block_name(loop.body)}_{loop.loop_var.name}"
    parts, new_vars, start = [], [], loop.min
    ana = analyzer()
    for k, end in enumerate(ends):
        var = Var(f"{loop.loop_var.name}{k}", dtype)
        lo, hi = cast(dtype, start), cast(dtype, end)
        body = substitute_fresh(loop.body, {loop.loop_var: var})
        drop = _inits_to_drop(func, where, body, var)  # refuses what no part can start
        body = _Rename(var, lo, hi, drop if k > 0 else set()).visit(body)
        new_loop = For(var, lo, ana.simplify(hi - lo), ForKind.SERIAL, body)
        parts.append(_partition_block(f"{base}{k}_partition", new_loop))
        new_vars.append(var)
        start = end
    common = _partition_block(f"{base}_common", SeqStmt(tuple(parts)))
    return replace_stmt(func, loop, common), new_vars
