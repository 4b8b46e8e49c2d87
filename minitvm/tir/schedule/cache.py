"""cache_read and cache_write: stage a buffer through a copy in another storage scope."""

from __future__ import annotations

from typing import Any

from ..analysis.region import eval_interval, loop_domain
from ..buffer import Buffer, decl_buffer
from ..expr import (
    GE,
    LE,
    Add,
    BufferLoad,
    IntImm,
    IterType,
    IterVar,
    Max,
    Min,
    Range,
    Sub,
    Var,
    binary,
)
from ..function import PrimFunc
from ..functor import Mutator, Visitor, post_order_visit
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, SeqStmt, Stmt, seq
from .common import (
    add_root_alloc,
    analyzer,
    const_int,
    is_one,
    is_zero,
    schedule_error,
    simplify,
    unique_name,
)
from .compute_location import _bind_region, _scope_of, scope_blocks
from .tree import Path, block_realizes, root_realize, uses_var, walk


class _Rename(Mutator):
    """Replace buffer `old` by `new` in loads, stores and block regions."""

    def __init__(self, old: Buffer, new: Buffer, loads: bool = True, stores: bool = True) -> None:
        super().__init__()
        self.old, self.new, self.loads, self.stores = old, new, loads, stores

    opaque = False  # set when the data pointer of `old` is used directly (an opaque access)

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.new if b is self.old else b

    def visit_Var(self, v: Var) -> Var:
        if v is self.old.data:
            self.opaque = True
            return self.new.data
        return v

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e2 = e.replace(indices=self.visit(e.indices))
        return e2.replace(buffer=self.new) if self.loads and e.buffer is self.old else e2

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s2 = s.replace(value=self.visit(s.value), indices=self.visit(s.indices))
        return s2.replace(buffer=self.new) if self.stores and s.buffer is self.old else s2


def _loads(stmt: Stmt, buf: Buffer) -> bool:
    found = []
    post_order_visit(
        stmt, lambda n: found.append(n) if isinstance(n, BufferLoad) and n.buffer is buf else None
    )
    return bool(found)


class _Shift(_Rename):
    """Like _Rename, and subtract `offset` from every index of the renamed buffer (a cache that
    holds only the window starting at `offset`)."""

    def __init__(self, old: Buffer, new: Buffer, offset: list, **kw: Any) -> None:
        super().__init__(old, new, **kw)
        self.offset = offset

    def _shift(self, idx: tuple) -> tuple:
        return tuple(
            i if is_zero(o) else simplify(binary(Sub, i, o)) for i, o in zip(idx, self.offset)
        )

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e2 = super().visit_BufferLoad(e)
        return e2.replace(indices=self._shift(e2.indices)) if e2.buffer is self.new else e2

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s2 = super().visit_BufferStore(s)
        return s2.replace(indices=self._shift(s2.indices)) if s2.buffer is self.new else s2

    def visit_BufferRegion(self, rg: BufferRegion) -> Any:
        if rg.buffer is not self.old:
            return self.generic_visit(rg)
        mins = self._shift(tuple(self.visit(r.min) for r in rg.region))
        return BufferRegion(self.new, tuple(Range.from_min_extent(m, r.extent) for m, r in zip(mins, rg.region)))


# storage scopes a buffer may live in (a scope may carry a tag after a dot: "shared.dyn")
_SCOPES = ("global", "shared", "local", "warp", "wmma", "metal", "texture")


def _check_scope(func: PrimFunc, scope: Any, what: str, r: BlockRealize) -> None:
    if not isinstance(scope, str) or scope.split(".")[0] not in _SCOPES:
        raise schedule_error(
            func,
            f"{what}: {scope!r} is not a storage scope; use one of "
            f"{', '.join(repr(x) for x in _SCOPES)} (optionally tagged, e.g. 'shared.dyn')",
            r,
        )


def _buffer_index(index: Any, regions: tuple) -> Any:
    """A buffer given by name or object (TVM accepts both) as its position in `regions`."""
    named = isinstance(index, str | Buffer)
    for k, rg in enumerate(regions):
        if named and (rg.buffer is index or rg.buffer.name == index):
            return k
    return index


def _indexed_region(
    func: PrimFunc, what: str, r: BlockRealize, regions: tuple, index: Any, verb: str, scope: str
) -> BufferRegion:
    """The region a cache primitive's index (position, name or Buffer) picks from `regions`
    of block `r`, after checking the index and the storage scope."""
    index = _buffer_index(index, regions)
    if not isinstance(index, int) or not -len(regions) <= index < len(regions):
        shown = ", ".join(rg.buffer.name for rg in regions)
        raise schedule_error(
            func,
            f"{what}: block '{r.block.name_hint}' {verb} {len(regions)} buffers ({shown}); "
            f"use an index in 0..{len(regions) - 1}",
            r,
        )
    _check_scope(func, scope, what, r)
    return regions[index]


class _Scope:
    """The block scope a cached block lives in: its body, its blocks and where loops start."""

    def __init__(self, func: PrimFunc, r_path: Path) -> None:
        self.body, self.path = _scope_of(r_path)
        self.block = self.path[-1] if self.path else None
        if self.block is None:  # a function without a root block: its body is the scope
            self.block = root_realize(func).block if root_realize(func) else None
        self.blocks = scope_blocks(self.body, self.path)
        self.order = {id(b): k for k, (b, _) in enumerate(self.blocks)}
        self.depth = len(self.path)

    def analyzer(self, path: Path = ()) -> Any:
        """An analyzer that knows the ranges of the loops and block vars above the scope and on
        `path`."""
        ana = analyzer([a for a in self.path + path if isinstance(a, For)])
        for a in self.path + path:
            if isinstance(a, Block):
                for iv in a.iter_vars:
                    ana.bind(iv.var, iv.dom)
        return ana

    def loops(self, path: Path) -> list[For]:
        """The loops of `path` inside this scope, outermost first."""
        return [a for a in path[self.depth :] if isinstance(a, For)]

    def path_of(self, r: BlockRealize) -> Path:
        return next(p for b, p in self.blocks if b is r)


class _Site:
    """Where the copy stage goes: the loop it ends up under (None: the scope block itself), the
    statement list it joins and its position there."""

    def __init__(self, loop: For | None, seq_stmt: Stmt | None, pos: int) -> None:
        self.loop, self.seq, self.pos = loop, seq_stmt, pos


def _site(
    sc: _Scope, anchor: BlockRealize, first: BlockRealize | None, at_end: bool
) -> _Site | None:
    """TVM's placement: right before the first related block, under the lowest loop that holds
    both it and `anchor`; without one, the start (or end) of the scope."""
    if first is None:
        items = sc.body.seq if isinstance(sc.body, SeqStmt) else (sc.body,)
        return _Site(None, None, len(items) if at_end else 0)
    a = sc.path_of(anchor) + (anchor,)
    b = sc.path_of(first) + (first,)
    k = 0
    while k < min(len(a), len(b)) and a[k] is b[k]:
        k += 1
    holder = a[k - 1]
    if not isinstance(holder, SeqStmt):
        return None
    pos = next(i for i, x in enumerate(holder.seq) if x is b[k])
    loops = sc.loops(a[:k])
    return _Site(loops[-1] if loops else None, holder, pos)


def _placed(func: PrimFunc, what: str, site: _Site | None, r: BlockRealize) -> _Site:
    if site is None:
        raise schedule_error(
            func,
            f"{what}: the producer and the first consumer meet under a statement that is not "
            "a statement list (a branch); move them into one loop body first",
            r,
        )
    return site


def _relaxed(sc: _Scope, region: BufferRegion, r: BlockRealize, loops: list[For], ana: Any):
    """Per dimension (lo, hi) of `region` of block `r` over all iterations of `loops`, kept
    inside the buffer's shape (None when it cannot be bounded)."""
    dom = loop_domain(loops)
    out = []
    for rg, dim in zip(_bind_region(region, r).region, region.buffer.shape):
        lo = eval_interval(ana.simplify(rg.min), dom)
        hi = eval_interval(ana.simplify(rg.min + rg.extent - 1), dom)
        if lo is None or hi is None:
            return None
        lo_c, hi_c = ana.simplify(lo[0]), ana.simplify(hi[1])
        # a loose bound past the shape is clamped, so the copy stays inside the buffer
        if not ana.can_prove(binary(GE, lo_c, IntImm(lo_c.dtype, 0))):
            lo_c = ana.simplify(binary(Max, lo_c, IntImm(lo_c.dtype, 0)))
        if not ana.can_prove(binary(LE, hi_c, dim - 1)):
            hi_c = ana.simplify(binary(Min, hi_c, dim - 1))
        out.append((lo_c, hi_c))
    return out


def _writes_whole_window(r: BlockRealize, buf: Buffer, loops: list[For], window, ana) -> bool:
    """Does block `r`, over `loops`, store every element of `window` of `buf`? Only a block
    whose body stores `buf` once, unconditionally, at indices dense in the loops (cut only by
    bounds its predicate puts on them) is known to."""
    from ...arith.affine import affine_coeffs  # arith imports tir: import at call time
    from ..analysis.region import region_interval
    from .state import _cut_by_predicate

    body = r.block.body
    if any(isinstance(n, BlockRealize) for n, _ in walk(body)):
        return True  # a scope block: its children are not examined here (a known gap)
    if r.block.init is not None:
        # a reduction's init runs once per output element: lowering puts it before the
        # reduction loops, or refuses the build when it cannot (LowerInitBlock), so even an
        # empty reduction writes it; only a predicate can make it skip an element
        if const_int(r.predicate) != 1:
            return False
        body = r.block.init
    top = body.seq if isinstance(body, SeqStmt) else (body,)
    stores = [s for s in top if isinstance(s, BufferStore) and s.buffer is buf]
    anywhere: list = []
    post_order_visit(
        body,
        lambda n: anywhere.append(n) if isinstance(n, BufferStore) and n.buffer is buf else None,
    )
    if not anywhere:
        return True  # written only through pointers (an opaque intrinsic): its declared region
    if len(stores) != 1 or len(anywhere) != 1:
        return False
    point = BufferRegion(buf, tuple(Range.from_min_extent(i, IntImm(i.dtype, 1)) for i in stores[0].indices))
    bound = _bind_region(point, r)
    loop_vars = [f.loop_var for f in loops]
    if not _dense_mixed_radix(bound, loops, ana, affine_coeffs):
        return False
    have = region_interval(bound, loop_domain(loops), ana.simplify)
    if any(h is None for h in have):
        return False
    if const_int(r.predicate) != 1:
        mins = [rg.min for rg in bound.region]
        have = _cut_by_predicate(have, mins, r.predicate, loop_vars, ana)
        if have is None or any(h is None for h in have):
            return False
    return all(
        ana.can_prove(binary(LE, h_lo, w_lo)) and ana.can_prove(binary(LE, w_hi, h_hi))
        for (h_lo, h_hi), (w_lo, w_hi) in zip(have, window)
    )


def _dense_mixed_radix(bound: BufferRegion, loops: list[For], ana: Any, affine_coeffs: Any) -> bool:
    """Does each dimension's index take every value between its bounds? It must be affine in
    the loops (each loop in at most one dimension), and its terms, smallest |coefficient|
    first, must leave no gap: the first coefficient is 1 and each next one is at most one more
    than the span of the terms before it (i * 16 + j with j < 16 is dense; i * 2 is not)."""
    loop_vars = [f.loop_var for f in loops]
    extent_of = {id(f.loop_var): f.extent for f in loops}
    taken: set[int] = set()
    for rg in bound.region:
        form = affine_coeffs(rg.min, loop_vars, ana)
        if form is None or any(not isinstance(c, int) for c in form[0].values()):
            return False
        terms = sorted(((abs(c), id(v)) for v, c in form[0].items() if c), key=lambda t: t[0])
        span: Any = 0  # the terms so far reach every value in [0, span] (an int, or symbolic)
        for coef, vid in terms:
            if vid in taken:
                return False
            taken.add(vid)
            if coef != 1:
                known = const_int(span) if not isinstance(span, int) else span
                if known is None or coef > known + 1:
                    return False
            extent = extent_of[vid]
            if coef != 1 and const_int(extent) is None:
                return False
            ext = const_int(extent)
            if isinstance(span, int) and ext is not None:
                span += coef * (ext - 1)
            else:  # a symbolic extent (only for a coefficient-1 term): the span stays symbolic
                span = ana.simplify(span + coef * (extent - 1))
        # symbolic spans only arise from a coefficient-1 term, which never leaves a gap
    return True


def _below(sc: _Scope, path: Path, site: _Site) -> list[For]:
    """The loops of `path` inside the scope and under the site's loop."""
    loops = sc.loops(path)
    if site.loop is None:
        return loops
    k = next((i for i, f in enumerate(loops) if f is site.loop), None)
    return loops if k is None else loops[k + 1 :]


def _widen(window: list, loops: list[For], ana: Any) -> list | None:
    """`window` (per dim (lo, hi)) over all iterations of `loops`."""
    dom = loop_domain(loops)
    out = []
    for lo, hi in window:
        a, b = eval_interval(lo, dom), eval_interval(hi, dom)
        if a is None or b is None:
            return None
        out.append((ana.simplify(a[0]), ana.simplify(b[1])))
    return out


def _outside(sc, site, window, anchor_path, users, buf) -> BlockRealize | None:
    """The first block in `users` not proven to read only elements of `buf` inside the cached
    `window` (None when all are)."""
    inner = {id(f) for f in _below(sc, anchor_path, site)}
    outer = [f for f in sc.loops(anchor_path) if id(f) not in inner]
    for u in users:
        p = sc.path_of(u)
        ana = sc.analyzer(anchor_path + p)
        inside = site.loop is not None and any(a is site.loop for a in p)
        win = window if inside else _widen(window, outer, ana)
        for region in u.block.reads:
            if region.buffer is not buf:
                continue
            got = _relaxed(sc, region, u, _below(sc, p, site) if inside else sc.loops(p), ana)
            ok = win is not None and got is not None
            ok = ok and all(
                ana.can_prove(binary(GE, lo2, lo)) and ana.can_prove(binary(LE, hi2, hi))
                for (lo, hi), (lo2, hi2) in zip(win, got)
            )
            if not ok:
                return u
    return None


def _check_inside(func, what, sc, site, window, anchor_path, users, buf, r) -> None:
    """Each block in `users` reads only elements of `buf` inside the cached `window`, so that
    its accesses stay in the cache (and in bounds when the cache holds only the window)."""
    u = _outside(sc, site, window, anchor_path, users, buf)
    if u is not None:
        raise schedule_error(
            func,
            f"{what}: cannot prove that block '{u.block.name_hint}' touches only the part of "
            f"{buf.name} that the cache stage copies; cache at a scope where it does, or "
            "choose its consumer blocks",
            r,
        )


def _window_buffer(buf: Buffer, name: str, scope: str, window: list, compact: bool, ana):
    extents = [ana.simplify(binary(Add, binary(Sub, hi, lo), 1)) for lo, hi in window]
    return decl_buffer(tuple(extents) if compact else buf.shape, buf.dtype, name, scope=scope)


def _stage(
    src: Buffer,
    dst: Buffer,
    name: str,
    window: list,
    compact: bool,
    cache_is_dst: bool,
    loop_names: list[str] | None,
    ana: Any,
) -> Stmt:
    """The copy nest of the window: loops over its extents, one copy block inside."""
    ndim = len(window)
    names = loop_names or [f"ax{d}" for d in range(ndim)]
    mins = [lo for lo, _ in window]
    extents = [ana.simplify(binary(Add, binary(Sub, hi, lo), 1)) for lo, hi in window]
    loop_vars = [Var(n, e.dtype) for n, e in zip(names, extents)]
    big = src if cache_is_dst else dst  # the original buffer
    ivs, values, src_idx, dst_idx = [], [], [], []
    for d, (lv, m, e) in enumerate(zip(loop_vars, mins, extents)):
        v = Var(f"v{d}", e.dtype)
        if compact:
            ivs.append(IterVar(Range.from_min_extent(0, e), v, IterType.DataPar))
            values.append(lv)
            full = v if is_zero(m) else binary(Add, m, v)
            src_idx.append(v if cache_is_dst is False else full)
            dst_idx.append(full if cache_is_dst is False else v)
        else:
            ivs.append(IterVar(Range.from_min_extent(0, big.shape[d]), v, IterType.DataPar))
            values.append(lv if is_zero(m) else binary(Add, m, lv))
            src_idx.append(v)
            dst_idx.append(v)
    one = lambda i: Range.from_min_extent(i, IntImm(i.dtype, 1))
    block = Block(
        tuple(ivs),
        (BufferRegion(src, tuple(one(i) for i in src_idx)),),
        (BufferRegion(dst, tuple(one(i) for i in dst_idx)),),
        name,
        BufferStore(dst, BufferLoad(src, tuple(src_idx)), tuple(dst_idx)),
    )
    body: Stmt = BlockRealize(tuple(values), IntImm("bool", 1), block)
    for lv, e in reversed(list(zip(loop_vars, extents))):
        body = For(lv, IntImm(lv.dtype, 0), e, ForKind.SERIAL, body)
    return body


class _Place(Mutator):
    """Rewrite the chosen blocks, insert the copy stage at its site, allocate the cache in the
    scope block."""

    def __init__(self, table: dict, sc: _Scope, site: _Site, nest: Stmt, cache: Buffer) -> None:
        super().__init__()
        self.table, self.sc, self.site, self.nest, self.cache = table, sc, site, nest, cache

    def visit(self, n: Any) -> Any:
        if id(n) in self.table:
            return self.table[id(n)]
        return super().visit(n)

    def visit_SeqStmt(self, s: SeqStmt) -> Any:
        items = [self.visit(x) for x in s.seq]
        if s is self.site.seq and self.nest is not None:
            items.insert(self.site.pos, self.nest)
        return seq(*items)

    def visit_Block(self, b: Block) -> Any:
        b2 = self.generic_visit(b)
        if b is not self.sc.block:
            return b2
        body = b2.body
        if self.site.seq is None and self.nest is not None:
            items = list(body.seq) if isinstance(body, SeqStmt) else [body]
            items.insert(self.site.pos, self.nest)
            body = seq(*items)
        return b2.replace(body=body, alloc_buffers=b2.alloc_buffers + (self.cache,))

    def visit_PrimExpr(self, e: Any) -> Any:
        return e


def _apply(func, sc, site, nest, cache, table) -> PrimFunc:
    if sc.block is None:  # no root block yet: add one, then place
        func = add_root_alloc(func, cache)
        root = root_realize(func)
        func = func.replace(
            body=root.replace(block=root.block.replace(alloc_buffers=root.block.alloc_buffers[:-1]))
        )
        return _apply(func, _rescope(func, sc), site, nest, cache, table)
    return func.replace(body=_Place(table, sc, site, nest, cache).visit(func.body))


def _rescope(func: PrimFunc, sc: _Scope) -> _Scope:
    root = root_realize(func)
    new = _Scope.__new__(_Scope)
    new.__dict__.update(sc.__dict__)
    new.block = root.block
    return new


def _all_before(sc: _Scope, early: list, readers: list, w: BlockRealize) -> bool:
    """Every chosen consumer runs before the producer ever starts: it comes earlier in program
    order and no loop with more than one iteration holds both."""
    wp = sc.path_of(w) + (w,)
    for b in early:
        bp = sc.path_of(b) + (b,)
        k = 0
        while k < min(len(bp), len(wp)) and bp[k] is wp[k]:
            k += 1
        if any(isinstance(f, For) and not is_one(f.extent) for f in wp[sc.depth : k]):
            return False
    return len(early) == len(readers)


def _exact_point_writes(w: BlockRealize, region: BufferRegion, inner: list[For]) -> bool:
    """`w` writes one element per iteration, dimension d at base_d + (a loop of its own), so
    over `inner` it writes every element of its relaxed window (no holes)."""
    if not is_one(w.predicate) or any(not is_one(rg.extent) for rg in region.region):
        return False
    inner_ids = {id(f.loop_var) for f in inner}
    used: set[int] = set()
    for rg in _bind_region(region, w).region:
        own = [f for f in inner if uses_var(rg.min, {id(f.loop_var)})]
        if len(own) != 1 or id(own[0]) in used:
            return False
        used.add(id(own[0]))
        rest = simplify(binary(Sub, rg.min, own[0].loop_var))
        if uses_var(rest, inner_ids):
            return False
    return True


def _reads_own_writes(r: BlockRealize, r_path: Path, buf: Buffer) -> bool:
    """Block `r` (no init) loads `buf` only through child blocks that read what one earlier child
    wrote during the same execution of `r`, so a fresh cache already holds every value read."""
    inside = [(b, p) for b, p in block_realizes(r.block.body)]
    if not inside or _loads_outside_blocks(r.block.body, buf):
        return False
    sc = _Scope(None, r_path + (r, r.block) + inside[0][1])
    writers = [b for b, _ in sc.blocks if any(w.buffer is buf for w in b.block.writes)]
    if len(writers) != 1:
        return False
    (w,) = writers
    w_path = sc.path_of(w)
    (region,) = [rg for rg in w.block.writes if rg.buffer is buf][:1]
    if not _exact_point_writes(w, region, sc.loops(w_path)):
        return False
    ana = sc.analyzer(w_path)
    window = _relaxed(sc, region, w, sc.loops(w_path), ana)
    site = _Site(None, None, 0)
    readers = [b for b, _ in sc.blocks if b is not w and _loads(b.block, buf)]
    if window is None or any(sc.order[id(b)] < sc.order[id(w)] for b in readers):
        return False
    undeclared = [b for b in readers if not any(rg.buffer is buf for rg in b.block.reads)]
    return not undeclared and _outside(sc, site, window, w_path, readers, buf) is None


def _loads_outside_blocks(stmt: Stmt, buf: Buffer) -> bool:
    """`stmt` loads `buf` somewhere that is not inside a nested block."""
    hits = []

    class _Find(Visitor):
        def visit_BlockRealize(self, n: Any) -> None:
            return None

        def visit_BufferLoad(self, n: Any) -> None:
            if n.buffer is buf:
                hits.append(n)
            self.generic_visit(n)

    _Find().visit(stmt)
    return bool(hits)


def _check_opaque(func, what, cache: Buffer, renames: list, buf: Buffer, r) -> None:
    """A block that uses the data pointer of `buf` directly cannot be pointed at a cache that
    holds only a window (its addresses would be off)."""
    ana = analyzer()
    whole = all(ana.can_prove_equal(a, b) for a, b in zip(cache.shape, buf.shape))
    shifted = any(not is_zero(o) for rn in renames for o in getattr(rn, "offset", ()))
    if (shifted or not whole) and any(rn.opaque for rn in renames):
        raise schedule_error(
            func,
            f"{what}: a block uses the data pointer of {buf.name} directly, and the cache in "
            "this scope would hold only part of it; cache at the root scope instead",
            r,
        )


def _consumer_set(func, what, sc, consumers, r) -> set[int] | None:
    if consumers is None:
        return None
    out = {id(c) for c in consumers}
    stray = [c for c in consumers if id(c) not in sc.order]
    if stray:
        raise schedule_error(
            func,
            f"{what}: consumer block '{stray[0].block.name_hint}' is not in the block scope of "
            f"'{r.block.name_hint}'; give blocks of the same scope",
            r,
        )
    return out


def _cached(func: PrimFunc, r: BlockRealize, index: Any, scope: str, read: bool) -> tuple:
    """(message prefix, buffer) of cache_read (`read`) or cache_write, after checking the
    index and the storage scope."""
    side = "read" if read else "write"
    what = (
        f"cache_{side}(block '{r.block.name_hint}', {side}_buffer_index={index}, "
        f"storage_scope={scope!r})"
    )
    regions = r.block.reads if read else r.block.writes
    return what, _indexed_region(func, what, r, regions, index, side + "s", scope).buffer


def _cache_buffer(func, sc, site, buf, scope, window, ana) -> tuple[Buffer, bool, list]:
    """(the cache of `window` of `buf` in `scope`, whether it holds just the window,
    the window's offset in `buf`)."""
    compact = site.loop is None and sc.path != ()
    cache_name = unique_name(func, f"{buf.name}_{scope}")
    cache = _window_buffer(buf, cache_name, scope, window, compact, ana)
    offset = [lo for lo, _ in window] if compact else [IntImm("int32", 0)] * len(window)
    return cache, compact, offset


def cache_read(
    func: PrimFunc,
    r: BlockRealize,
    r_path: Path,
    index: int,
    scope: str,
    consumers: list[BlockRealize] | None = None,
    loop_names: list[str] | None = None,
) -> tuple[PrimFunc, str]:
    """Copy the `index`-th buffer `r` reads into a new buffer in `scope` and read that instead."""
    what, buf = _cached(func, r, index, scope, read=True)
    sc = _Scope(func, r_path)
    writers = [b for b, _ in sc.blocks if any(w.buffer is buf for w in b.block.writes)]
    if len(writers) > 1:
        shown = ", ".join(f"'{w.block.name_hint}'" for w in writers)
        raise schedule_error(
            func,
            f"{what}: {buf.name} is written by several blocks of the scope ({shown}); "
            "cache_read needs a single producer",
            r,
        )
    wanted = _consumer_set(func, what, sc, consumers, r)
    readers = [
        b
        for b, _ in sc.blocks
        if any(rg.buffer is buf for rg in b.block.reads)
        and not any(w.buffer is buf for w in b.block.writes)
        and (wanted is None or id(b) in wanted)
    ]
    ana = sc.analyzer()
    if writers:
        (w,) = writers
        early = [b for b in readers if sc.order[id(b)] < sc.order[id(w)]]
        if early and not _all_before(sc, early, readers, w):
            raise schedule_error(
                func,
                f"{what}: block '{early[0].block.name_hint}' reads {buf.name} before its "
                f"producer '{w.block.name_hint}' writes it and other chosen consumers read it "
                "after; choose consumers on one side of the producer (consumer_blocks=)",
                r,
            )
        first = min(readers, key=lambda b: sc.order[id(b)]) if readers else None
        if early:  # every consumer runs before the producer: copy the old values first
            site = _site(sc, w, None, at_end=False)
        else:
            site = _placed(func, what, _site(sc, w, first, at_end=True), r)
        w_path = sc.path_of(w)
        ana = sc.analyzer(w_path)
        (region,) = [rg for rg in w.block.writes if rg.buffer is buf]
        window = _relaxed(sc, region, w, _below(sc, w_path, site), ana)
    else:
        w_path = ()
        site = _site(sc, r, None, at_end=False)
        declared = [rg for rg in getattr(sc.block, "reads", ()) if rg.buffer is buf]
        rg = declared[0] if declared and sc.path else None
        window = (
            [(m.min, ana.simplify(m.min + m.extent - 1)) for m in rg.region]
            if rg is not None
            else [(IntImm(s.dtype, 0), ana.simplify(s - 1)) for s in buf.shape]
        )
    if window is None:
        raise schedule_error(
            func,
            f"{what}: cannot bound the part of {buf.name} that its producer writes; "
            "cache at a scope without non-affine producer indices",
            r,
        )
    _check_inside(func, what, sc, site, window, w_path, readers, buf, r)
    cache, compact, offset = _cache_buffer(func, sc, site, buf, scope, window, ana)
    rename = _Shift(buf, cache, offset, stores=False)
    table = {id(b): b.replace(block=rename.visit(b.block)) for b in readers}
    _check_opaque(func, what, cache, [rename], buf, r)
    nest = _stage(buf, cache, cache.name, window, compact, True, loop_names, ana)
    keep = list(readers)  # noqa: F841  (ids in `table` stay unique while we rebuild)
    return _apply(func, sc, site, nest, cache, table), cache.name


def cache_write(
    func: PrimFunc,
    r: BlockRealize,
    r_path: Path,
    index: int,
    scope: str,
    loop_names: list[str] | None = None,
    consumers: list[BlockRealize] | None = None,
) -> tuple[PrimFunc, str]:
    """Make `r` write its `index`-th output into a new buffer in `scope`, copied back after."""
    name = r.block.name_hint
    what, buf = _cached(func, r, index, scope, read=False)
    if r.block.init is None and _loads(r.block.body, buf) and not _reads_own_writes(r, r_path, buf):
        raise schedule_error(
            func,
            f"{what}: block '{name}' reads {buf.name} before updating it (it has no init, "
            f"e.g. after decompose_reduction), so a fresh cache would lose the old values; "
            "call cache_write before decompose_reduction",
            r,
        )
    sc = _Scope(func, r_path)
    for b, _ in sc.blocks:
        if b is not r and any(w.buffer is buf for w in b.block.writes):
            # the copy back writes every element of the window; another writer's would be lost
            raise schedule_error(
                func,
                f"{what}: block '{b.block.name_hint}' also writes {buf.name}; cache_write "
                f"needs '{name}' to be the only block that writes it",
                r,
            )
    wanted = _consumer_set(func, what, sc, consumers, r) or set()
    readers = [
        b for b, _ in sc.blocks if b is not r and any(rg.buffer is buf for rg in b.block.reads)
    ]
    early = [b for b in readers if sc.order[id(b)] < sc.order[id(r)]]
    # a reader that finishes before the writer starts never sees the redirected writes
    if early and (not _all_before(sc, early, early, r) or any(id(b) in wanted for b in early)):
        raise schedule_error(
            func,
            f"{what}: block '{early[0].block.name_hint}' reads {buf.name} before '{name}' "
            "writes it; cache_write places the copy back after the writer",
            r,
        )
    readers = [b for b in readers if sc.order[id(b)] > sc.order[id(r)]]
    direct = [b for b in readers if id(b) in wanted]
    related = [b for b in readers if id(b) not in wanted]
    first = min(related, key=lambda b: sc.order[id(b)]) if related else None
    site = _placed(func, what, _site(sc, r, first, at_end=True), r)
    r_path = sc.path_of(r)
    ana = sc.analyzer(r_path)
    (region,) = [rg for rg in r.block.writes if rg.buffer is buf][:1]
    window = _relaxed(sc, region, r, _below(sc, r_path, site), ana)
    if window is None:
        raise schedule_error(
            func,
            f"{what}: cannot bound the part of {buf.name} that '{name}' writes; cache a "
            "block with affine write indices",
            r,
        )
    _check_inside(func, what, sc, site, window, r_path, direct, buf, r)
    if not _writes_whole_window(r, buf, _below(sc, r_path, site), window, ana):
        raise schedule_error(
            func,
            f"{what}: cannot prove that '{name}' writes every element of {buf.name} in "
            f"[{', '.join(f'{lo}:{hi} + 1' for lo, hi in window)}]; the copy back would "
            "overwrite the elements it skips with the cache's uninitialised values. Cache a "
            "block that stores one element per iteration, unconditionally, at indices dense "
            "in its loops",
            r,
        )
    cache, compact, offset = _cache_buffer(func, sc, site, buf, scope, window, ana)
    rewrite = _Shift(buf, cache, offset)
    table = {id(r): r.replace(block=rewrite.visit(r.block))}
    reread = _Shift(buf, cache, offset, stores=False)
    table.update({id(b): b.replace(block=reread.visit(b.block)) for b in direct})
    _check_opaque(func, what, cache, [rewrite, reread], buf, r)
    nest = _stage(cache, buf, cache.name, window, compact, False, loop_names, ana)
    keep = [r, *direct]  # noqa: F841  (ids in `table` stay unique while we rebuild)
    return _apply(func, sc, site, nest, cache, table), cache.name


from .cache_inplace import cache_inplace  # noqa: F401 - cache_inplace.py, re-exported
