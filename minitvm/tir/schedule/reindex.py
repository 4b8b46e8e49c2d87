"""reindex, reindex_cache_read, reindex_cache_write: stage a buffer that one block accesses
through a copy laid out by that block's iterators (optionally through an IndexMap)."""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ..buffer import Buffer, decl_buffer
from ..expr import BufferLoad, IterType, IterVar, Range, Var, as_expr, const_value
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..index_map import IndexMap, analyse
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, SeqStmt, Stmt
from .common import add_root_alloc, analyzer, insert_in_scope, schedule_error, unique_name
from .layout import as_index_map, block_index_dtype, resolve_buffer
from .tree import (
    Path,
    find_loop,
    insert_next_to,
    loops_above,
    replace_stmt,
    root_realize,
    scope_body,
    uses_var,
    walk,
)


def _accesses(block: Block, buf: Buffer) -> list[tuple]:
    """Index tuples of every load and store of `buf` in the block's body and init."""
    out: list[tuple] = []

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad | BufferStore) and n.buffer is buf:
            out.append(n.indices)

    for stmt in (block.init, block.body):
        if stmt is not None:
            post_order_visit(stmt, visit)
    return out


class _Swap(Mutator):
    """Accesses of `old` become accesses of `new` at `indices`; regions follow."""

    def __init__(self, old: Buffer, new: Buffer, indices: tuple) -> None:
        super().__init__()
        self.old, self.new, self.indices = old, new, indices

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        if e.buffer is self.old:
            return BufferLoad(self.new, self.indices)
        return self.generic_visit(e)

    def visit_BufferStore(self, s: BufferStore) -> Any:
        value = self.visit(s.value)
        if s.buffer is self.old:
            return BufferStore(self.new, value, self.indices)
        return s.replace(value=value, indices=self.visit(s.indices))

    def visit_BufferRegion(self, rg: BufferRegion) -> Any:
        if rg.buffer is self.old:
            return BufferRegion(self.new, tuple(Range.from_min_extent(i, 1) for i in self.indices))
        return rg


def _top_position(func: PrimFunc, stmt: Stmt) -> tuple[list, int]:
    body = scope_body(func)
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    for k, item in enumerate(items):
        if any(s is stmt for s, _ in walk(item)):
            return items, k
    raise AssertionError("block not under the root scope")


def reindex(
    func: PrimFunc,
    r: BlockRealize,
    path: Path,
    spec: Any,
    scope: str | None = None,
    index_map: Any = None,
    what: str = "reindex",
) -> tuple[PrimFunc, str]:
    """(func, name of the copy block): the buffer `spec` of block `r` is staged through a new
    buffer indexed by the block's iterators (through `index_map` when given)."""
    block = r.block
    kind, _, buf = resolve_buffer(func, r, spec, f"{what}(block '{block.name_hint}')")
    what = f"{what}(block '{block.name_hint}', buffer '{buf.name}')"
    enclosing = [s for s in path if isinstance(s, Block)]
    root = root_realize(func)
    if len(enclosing) > 1 or (enclosing and (root is None or enclosing[0] is not root.block)):
        raise schedule_error(func, f"{what}: the block must be at the function's root scope", r)
    ana = analyzer()
    for iv in block.iter_vars:
        if const_value(iv.dom.extent) != 1:  # a unit iterator stays a variable, as in TVM
            ana.bind(iv.var, iv.dom)
    found = _accesses(block, buf)
    if not found:
        raise schedule_error(func, f"{what}: the block does not load or store '{buf.name}'", r)
    idx = tuple(ana.simplify(i) for i in found[0])
    for other in found[1:]:
        other = tuple(ana.simplify(i) for i in other)
        if not all(structural_equal(a, b) for a, b in zip(idx, other)):
            raise schedule_error(
                func,
                f"{what}: the block accesses '{buf.name}' at {list(idx)} and at {list(other)}; "
                "it must access it at one index",
                r,
            )
    writes = any(w.buffer is buf for w in block.writes)
    loads: list = []
    post_order_visit(
        block.body,
        lambda n: loads.append(n) if isinstance(n, BufferLoad) and n.buffer is buf else None,
    )
    if kind == "read" and writes:
        raise schedule_error(
            func,
            f"{what}: the block also writes '{buf.name}'; a read copy would hide its result. "
            "Stage it as a write buffer instead",
            r,
        )
    if kind == "write" and loads and block.init is None:
        raise schedule_error(
            func,
            f"{what}: the block reads '{buf.name}' before updating it and has no init, so a "
            "fresh copy would lose the old values",
            r,
        )
    used = [iv for iv in block.iter_vars if uses_var(idx, {id(iv.var)})]
    if index_map is None:
        cache_idx = tuple(iv.var for iv in used)
        shape = tuple(iv.dom.extent for iv in used)
    else:
        imap, _ = as_index_map(index_map, len(block.iter_vars), block_index_dtype(block), what)
        if imap.ndim != len(block.iter_vars):
            raise schedule_error(
                func,
                f"{what}: the index map takes {imap.ndim} indices but the block has "
                f"{len(block.iter_vars)} iterators",
                r,
            )
        cache_idx = tuple(imap.map_indices([iv.var for iv in block.iter_vars]))
        used_ids = {id(iv) for iv in used}
        unused = {id(iv.var) for iv in block.iter_vars if id(iv) not in used_ids}
        if any(uses_var(e, unused) for e in cache_idx):
            raise schedule_error(
                func,
                f"{what}: the index map uses iterators that the access of '{buf.name}' does "
                "not; map only the iterators its indices use",
                r,
            )
        # the cache must give every accessed element its own slot: the map restricted to the
        # iterators the access uses has to be provably injective
        restricted = IndexMap([iv.var for iv in used], list(cache_idx))
        layout = analyse(restricted, [iv.dom.extent for iv in used])
        if layout.outputs is None:
            raise schedule_error(
                func,
                f"{what}: cannot prove that the index map sends the elements the block "
                f"accesses to distinct cache elements (over {[iv.var.name for iv in used]})",
                r,
            )
        shape = tuple(as_expr(e) for e in layout.extents)
    suffix = "reindex" if scope is None else scope
    name = unique_name(func, f"{buf.name}_{suffix}")
    cache = decl_buffer(shape, buf.dtype, name, scope=scope or buf.storage_scope)
    lca, _ = _placement(func, r, path, buf, kind, what)
    swap = _Swap(buf, cache, cache_idx)
    new_block = block.replace(
        body=swap.visit(block.body),
        init=swap.visit(block.init) if block.init is not None else None,
        reads=swap.visit(block.reads),
        writes=swap.visit(block.writes),
    )
    inner = [f for f in loops_above(path) if not any(f is g for g in lca)]
    dropped = {
        id(f.loop_var)
        for f in inner
        if not any(uses_var(v, {id(f.loop_var)}) for v in _used_values(r, used))
    }
    if uses_var(r.predicate, dropped):
        raise schedule_error(
            func,
            f"{what}: the block's predicate depends on loops the copy does not keep",
            r,
        )
    nest = _copy_nest(r, inner, used, buf, idx, cache, cache_idx, kind, name)
    new_r = r.replace(block=new_block)
    func = replace_stmt(func, r, new_r)
    if lca:
        node, _ = find_loop(func, lca[-1].loop_var)
        body = insert_next_to(node.body, new_r, nest, kind == "read")
        func = replace_stmt(func, node, node.replace(body=body))
    else:
        _, pos = _top_position(func, new_r)
        func = insert_in_scope(func, nest, lambda _items: pos if kind == "read" else pos + 1)
    return add_root_alloc(func, cache), name


def _used_values(r: BlockRealize, used: list) -> list:
    ids = {id(iv.var) for iv in used}
    return [v for iv, v in zip(r.block.iter_vars, r.iter_values) if id(iv.var) in ids]


def _placement(
    func: PrimFunc, r: BlockRealize, path: Path, buf: Buffer, kind: str, what: str
) -> tuple[list[For], list]:
    """(the loops shared by the block and the other blocks that write (for a read copy) or
    read (for a write copy) the buffer, those blocks); the copy goes inside the innermost
    shared loop, right before (after) the block, and the order is checked: a read copy must
    come after every other writer, a write copy before every reader."""
    root = root_realize(func)
    others = [
        (x, p)
        for x, p in walk(func.body)
        if isinstance(x, BlockRealize) and x is not r and x is not root
    ]
    writers = [(x, p) for x, p in others if any(w.buffer is buf for w in x.block.writes)]
    readers = [(x, p) for x, p in others if any(g.buffer is buf for g in x.block.reads)]
    if kind == "write" and writers:
        x = writers[0][0]
        raise schedule_error(
            func,
            f"{what}: block '{x.block.name_hint}' also writes '{buf.name}'; the copy back "
            "would overwrite its values",
            r,
        )
    related = writers if kind == "read" else readers
    mine = path + (r,)
    shared_len = len(mine)
    for _, p in related:
        n = 0
        while n < min(len(mine), len(p)) and mine[n] is p[n]:
            n += 1
        shared_len = min(shared_len, n)
    if not related:
        shared_len = 0
    common = mine[:shared_len]
    lca = [s for s in common if isinstance(s, For)]
    # order at the insertion level: the child that holds the block vs those of the others
    scope = lca[-1].body if lca else scope_body(func)
    items = list(scope.seq) if isinstance(scope, SeqStmt) else [scope]
    mine_k = next(i for i, s in enumerate(items) if any(x is r for x, _ in walk(s)))
    for x, _ in related:
        ks = [i for i, s in enumerate(items) if any(y is x for y, _ in walk(s))]
        bad = (
            not ks or (kind == "read" and ks[0] >= mine_k) or (kind == "write" and ks[0] <= mine_k)
        )
        if bad:
            raise schedule_error(
                func,
                f"{what}: block '{x.block.name_hint}' "
                f"{'writes' if kind == 'read' else 'reads'} '{buf.name}' where the copy would "
                "change what it sees",
                r,
            )
    return lca, related


def _copy_nest(
    r: BlockRealize,
    inner: list[For],
    used: list[IterVar],
    buf: Buffer,
    idx: tuple,
    cache: Buffer,
    cache_idx: tuple,
    kind: str,
    name: str,
) -> Stmt:
    """The block's loops below the insertion point that drive the used iterators, around
    `cache[cache_idx] = buf[idx]` (or back), the iterators bound as in the block."""
    block = r.block
    binding = {id(iv.var): v for iv, v in zip(block.iter_vars, r.iter_values)}
    kept = [f for f in inner if any(uses_var(binding[id(iv.var)], {id(f.loop_var)}) for iv in used)]
    lmap = {f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in kept}
    ivs = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), IterType.DataPar) for iv in used]
    vmap = {old.var: new.var for old, new in zip(used, ivs)}
    src_idx = tuple(substitute(i, vmap) for i in idx)
    dst_idx = tuple(substitute(i, vmap) for i in cache_idx)
    if kind == "read":
        store = BufferStore(cache, BufferLoad(buf, src_idx), dst_idx)
        reads, writes = (buf, src_idx), (cache, dst_idx)
    else:
        store = BufferStore(buf, BufferLoad(cache, dst_idx), src_idx)
        reads, writes = (cache, dst_idx), (buf, src_idx)
    new = Block(
        tuple(ivs),
        (BufferRegion(reads[0], tuple(Range.from_min_extent(i, 1) for i in reads[1])),),
        (BufferRegion(writes[0], tuple(Range.from_min_extent(i, 1) for i in writes[1])),),
        name,
        store,
    )
    values = tuple(substitute(binding[id(iv.var)], lmap) for iv in used)
    stmt: Stmt = BlockRealize(values, substitute(r.predicate, lmap), new)
    for f in reversed(kept):
        stmt = For(lmap[f.loop_var], f.min, f.extent, f.kind, stmt, f.thread_binding)
    return stmt


__all__ = ["reindex"]
