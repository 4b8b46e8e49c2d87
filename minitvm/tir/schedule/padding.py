"""decompose_padding: split a padding block `y[v] = if_then_else(in_bounds(v), x[..], c)`
into a block that fills the constant and a block that copies only the in-bounds region."""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer
from ..expr import (
    GE,
    GT,
    LE,
    LT,
    Add,
    And,
    BufferLoad,
    IntImm,
    IterType,
    IterVar,
    PrimExpr,
    Range,
    Var,
    const_value,
)
from ..expr_build import flatten_operands
from ..function import PrimFunc
from ..functor import post_order_visit, substitute
from ..names import IF_THEN_ELSE, is_call
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, SeqStmt, Stmt, seq
from .common import ReplaceBuffers, SimplifyIndices, analyzer, schedule_error, unique_name
from .tree import Path, find_loop, loops_above, replace_stmt

_COMPARE = (GE, GT, LE, LT)


def _bound_of(cmp: PrimExpr, pos: dict) -> tuple[int, str, int] | None:
    """(iterator position, 'lo' | 'hi', value) for `v >= c`, `c <= v`, `v < c`, ...: lo is
    the first value inside, hi the first value past the end."""
    if not isinstance(cmp, _COMPARE):
        return None
    a, b = cmp.a, cmp.b
    flip = {GE: LE, GT: LT, LE: GE, LT: GT}
    kind = type(cmp)
    if not (isinstance(a, Var) and id(a) in pos):
        a, b, kind = b, a, flip[kind]
    c = const_value(b)
    if not (isinstance(a, Var) and id(a) in pos) or not isinstance(c, int):
        return None
    k = pos[id(a)]
    return {
        GE: (k, "lo", c),
        GT: (k, "lo", c + 1),
        LE: (k, "hi", c + 1),
        LT: (k, "hi", c),
    }[kind]


def _pattern(func: PrimFunc, r: BlockRealize, what: str) -> tuple[BufferStore, dict, PrimExpr]:
    """(store, {iterator position: (lo, hi)}, pad value) of a padding block, or a
    ScheduleError saying why the block is not one."""
    block = r.block
    store = block.body
    value = store.value if isinstance(store, BufferStore) else None
    is_ite = is_call(value, IF_THEN_ELSE)
    if block.init is not None or not is_ite:
        raise schedule_error(
            func,
            f"{what}: the block must be one store `buf[...] = T.if_then_else(in_bounds, value, "
            "pad)` with no init",
            r,
        )
    cond, _, pad = value.args
    loads: list = []
    post_order_visit(pad, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
    if loads:
        raise schedule_error(func, f"{what}: the pad value {pad} reads a buffer", r)
    pos = {id(iv.var): k for k, iv in enumerate(block.iter_vars)}
    bounds: dict[int, list] = {}
    for c in flatten_operands(cond, And):
        found = _bound_of(c, pos)
        if found is None:
            raise schedule_error(
                func,
                f"{what}: the condition term `{c}` is not a bound of one iterator by a constant",
                r,
            )
        k, side, v = found
        ext = const_value(block.iter_vars[k].dom.extent)
        lo, hi = bounds.get(k, [0, ext])
        bounds[k] = [max(lo, v), hi] if side == "lo" else [lo, min(hi, v)]
    trimmed = {
        k: (lo, hi)
        for k, (lo, hi) in bounds.items()
        if (lo, hi) != (0, const_value(block.iter_vars[k].dom.extent))
    }
    if not trimmed or any(lo >= hi for lo, hi in trimmed.values()):
        raise schedule_error(
            func,
            f"{what}: the condition {cond} leaves nothing to decompose (it holds everywhere or "
            "nowhere)",
            r,
        )
    return store, trimmed, pad


def _inner_chain(func: PrimFunc, r: BlockRealize, path: Path, loop: For, what: str) -> list:
    """The statements from `loop` down to `r` (loops, and sequences the path passes)."""
    if not any(s is loop for s in path):
        raise schedule_error(func, f"{what}: loop '{loop.loop_var.name}' is not above the block", r)
    start = next(i for i, s in enumerate(path) if s is loop)
    chain = list(path[start:])
    if any(not isinstance(s, For | SeqStmt) for s in chain):
        raise schedule_error(
            func, f"{what}: between loop '{loop.loop_var.name}' and the block lie other blocks", r
        )
    return chain


def decompose_padding(
    func: PrimFunc, r: BlockRealize, path: Path, loop: For
) -> tuple[PrimFunc, str]:
    """(func with the constant fill inserted before `loop` and the block trimmed to its
    in-bounds region, name of the fill block)."""
    block = r.block
    what = f"decompose_padding(block '{block.name_hint}', loop '{loop.loop_var.name}')"
    chain = _inner_chain(func, r, path, loop, what)
    store, trimmed, pad = _pattern(func, r, what)
    inner = [s for s in chain if isinstance(s, For)]
    start = next(i for i, s in enumerate(path) if s is loop)
    ana = analyzer(f for f in loops_above(path[:start] + (r,)))
    values = [ana.simplify(v) for v in r.iter_values]
    name = unique_name(func, f"{block.name_hint}_pad_const")
    fill = _fill_nest(r, inner, values, store, pad, name)
    func = _trim(func, r, inner, values, trimmed, ana)
    loop_now, _ = find_loop(func, loop.loop_var)
    return replace_stmt(func, loop_now, seq(fill, loop_now)), name


def _fill_nest(
    r: BlockRealize, inner: list[For], values: list, store: BufferStore, pad: PrimExpr, name: str
) -> Stmt:
    """A copy of the loops `inner` around a block that stores `pad` where `r` stores."""
    block = r.block
    lmap = {f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in inner}
    ivs = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), iv.iter_type) for iv in block.iter_vars]
    vmap = {old.var: new.var for old, new in zip(block.iter_vars, ivs)}
    new_store = BufferStore(store.buffer, pad, substitute(store.indices, vmap))
    new_block = Block(tuple(ivs), (), substitute(block.writes, vmap), name, new_store)
    stmt: Stmt = BlockRealize(
        tuple(substitute(v, lmap) for v in values), substitute(r.predicate, lmap), new_block
    )
    for f in reversed(inner):
        stmt = For(lmap[f.loop_var], f.min, f.extent, f.kind, stmt, f.thread_binding, f.annotations)
    return stmt


def _trim(
    func: PrimFunc, r: BlockRealize, inner: list[For], values: list, trimmed: dict, ana: Any
) -> PrimFunc:
    """`func` with block `r` restricted to its in-bounds region: a loop that only drives one
    trimmed iterator shrinks, any other trimmed binding gets a predicate."""
    block = r.block
    inner_by_var = {id(f.loop_var): f for f in inner}
    uses: dict[int, int] = {}
    for v in values:
        post_order_visit(
            v,
            lambda n: (
                uses.__setitem__(id(n), uses.get(id(n), 0) + 1) if isinstance(n, Var) else None
            ),
        )
    conds: list[PrimExpr] = []
    shrink: dict[int, Any] = {}
    new_ivs, new_values, vmap = [], [], {}
    for k, (iv, value) in enumerate(zip(block.iter_vars, values)):
        if k not in trimmed:
            new_ivs.append(iv)
            new_values.append(value)
            continue
        lo, hi = trimmed[k]
        ext = iv.dom.extent
        f = inner_by_var.get(id(value))
        if (
            f is not None
            and uses.get(id(value)) == 1
            and const_value(f.min) == 0
            and (const_value(f.extent) == const_value(ext))
        ):
            shrink[id(f.loop_var)] = IntImm(f.extent.dtype, hi - lo)
            new_values.append(value)
        else:
            if lo > 0:
                conds.append(LE(IntImm(value.dtype, lo), value))
            if hi < const_value(ext):
                conds.append(LT(value, IntImm(value.dtype, hi)))
            new_values.append(ana.simplify(value - lo) if lo else value)
        new_ivs.append(iv.replace(dom=Range.from_min_extent(IntImm(ext.dtype, 0), IntImm(ext.dtype, hi - lo))))
        if lo:
            vmap[iv.var] = iv.var + lo
    body_ana = analyzer()
    for iv in new_ivs:
        if const_value(iv.dom.extent) != 1:  # a unit iterator stays a variable, as in TVM
            body_ana.bind(iv.var, iv.dom)
    simp = SimplifyIndices(body_ana)
    store = block.body
    new_store = BufferStore(
        store.buffer,
        simp.visit(substitute(store.value.args[1], vmap)),
        tuple(body_ana.simplify(substitute(i, vmap)) for i in store.indices),
    )
    new_block = block.replace(
        iter_vars=tuple(new_ivs),
        body=new_store,
        reads=simp.visit(substitute(block.reads, vmap)),
        writes=simp.visit(substitute(block.writes, vmap)),
    )
    pred = None
    for c in conds:
        pred = c if pred is None else And(pred, c)
    if const_value(r.predicate) not in (1, True):
        for c in flatten_operands(r.predicate, And):  # flat, as TVM chains them
            pred = c if pred is None else And(pred, c)
    new_r = r.replace(
        iter_values=tuple(new_values),
        predicate=pred if pred is not None else r.predicate,
        block=new_block,
    )
    func = replace_stmt(func, r, new_r)
    for f in inner:
        if id(f.loop_var) in shrink:
            node, _ = find_loop(func, f.loop_var)
            func = replace_stmt(func, node, node.replace(extent=shrink[id(f.loop_var)]))
    return func


# ---------------------------------------------------------------------- pad_einsum
def _padded_extent(ext: PrimExpr, factor: int) -> PrimExpr:
    """`ext` rounded up to a multiple of `factor` (folded when constant)."""
    value = const_value(ext)
    if isinstance(value, int):
        return IntImm(ext.dtype, -(-value // factor) * factor)
    if factor == 1:
        return ext
    f = IntImm(ext.dtype, factor)
    return (ext + IntImm(ext.dtype, factor - 1)) // f * f


def _einsum_accesses(block: Block) -> list:
    """Every load and store in the block as (buffer, indices)."""
    found: list = []

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad | BufferStore):
            found.append((n.buffer, n.indices))

    for stmt in (block.init, block.body):
        if stmt is not None:
            post_order_visit(stmt, visit)
    return found


def _sum_of_products_kills(block: Block, k: int, padded: set) -> bool:
    """True when the block's update is `out = out + term` and `term` is a product with a
    factor read from a padded buffer indexed by iterator `k` (so padding adds zero)."""
    store = block.body
    if not isinstance(store, BufferStore) or not isinstance(store.value, Add):
        return False
    from ..expr import Mul

    var = block.iter_vars[k].var
    for acc, term in ((store.value.a, store.value.b), (store.value.b, store.value.a)):
        if not (isinstance(acc, BufferLoad) and acc.buffer is store.buffer):
            continue
        for f in flatten_operands(term, Mul):
            padded_factor = isinstance(f, BufferLoad) and id(f.buffer) in padded
            if padded_factor and any(i is var for i in f.indices):
                return True
    return False


def pad_einsum(func: PrimFunc, r: BlockRealize, path: Path, padding: list) -> PrimFunc:
    """`func` with block `r`'s iteration space rounded up to multiples of `padding`: the
    buffers it reads are copied into zero-padded buffers first, its output goes to a padded
    buffer copied back after."""
    from ..buffer import decl_buffer
    from ..op import if_then_else
    from .common import add_root_alloc, insert_in_scope
    from .layout import _perfect_loops, _same_extent
    from .reindex import _top_position

    block = r.block
    what = f"pad_einsum(block '{block.name_hint}', padding={list(padding)})"
    if len(padding) != len(block.iter_vars) or any(
        not isinstance(p, int) or p <= 0 for p in padding
    ):
        raise schedule_error(
            func,
            f"{what}: give one positive int per block iterator ({len(block.iter_vars)})",
            r,
        )
    loops = _perfect_loops(func, r, path, what)
    pos = {id(iv.var): k for k, iv in enumerate(block.iter_vars)}
    accesses = _einsum_accesses(block)
    for buf, indices in accesses:
        for i in indices:
            if not (id(i) in pos or isinstance(const_value(i), int)):
                raise schedule_error(
                    func,
                    f"{what}: '{buf.name}' is indexed by `{i}`; an Einsum block indexes every "
                    "buffer by its iterators or constants only",
                    r,
                )
    new_ext = [_padded_extent(iv.dom.extent, p) for iv, p in zip(block.iter_vars, padding)]
    grown = {
        k
        for k, (iv, e) in enumerate(zip(block.iter_vars, new_ext))
        if not _same_extent(iv.dom.extent, e)
    }
    if not grown:
        return func
    if len(block.writes) != 1:
        raise schedule_error(func, f"{what}: the block must write exactly one buffer", r)
    out = block.writes[0].buffer
    reads = []
    for rg in block.reads:
        if rg.buffer is out or any(rg.buffer is b for b in reads):
            continue
        reads.append(rg.buffer)

    def grown_dims(buf: Buffer) -> dict:
        dims = {}
        for b, indices in accesses:
            if b is buf:
                for d, i in enumerate(indices):
                    if id(i) in pos and pos[id(i)] in grown:
                        dims[d] = new_ext[pos[id(i)]]
        return dims

    padded_reads = {id(b): b for b in reads if grown_dims(b)}
    for k in grown:
        if block.iter_vars[k].iter_type != IterType.DataPar and not _sum_of_products_kills(
            block, k, set(padded_reads)
        ):
            raise schedule_error(
                func,
                f"{what}: padding reduction iterator '{block.iter_vars[k].var.name}' adds "
                "terms; that keeps results only for a sum of products with a zero-padded "
                "factor indexed by it",
                r,
            )
    table: dict[int, Buffer] = {}
    fills = []
    for b in reads + [out]:
        dims = grown_dims(b)
        if not dims:
            continue
        shape = tuple(dims.get(d, s) for d, s in enumerate(b.shape))
        table[id(b)] = decl_buffer(
            shape, b.dtype, unique_name(func, f"{b.name}_pad"), scope=b.storage_scope
        )
        if b is not out:
            fills.append(_pad_copy(b, table[id(b)], dims, if_then_else))
    # the block over the padded space, on the padded buffers
    swap = ReplaceBuffers(table)
    new_ivs = tuple(
        iv.replace(dom=Range.from_min_extent(iv.dom.min, e)) if k in grown else iv
        for k, (iv, e) in enumerate(zip(block.iter_vars, new_ext))
    )
    new_block = swap.visit(block).replace(iter_vars=new_ivs)
    func = replace_stmt(func, r, r.replace(block=new_block))
    for f in loops:
        k = next((j for j, v in enumerate(r.iter_values) if v is f.loop_var), None)
        if k is not None and k in grown:
            node, _ = find_loop(func, f.loop_var)
            func = replace_stmt(func, node, node.replace(extent=new_ext[k]))
    _, at = _top_position(func, find_block_realize(func, block.name_hint))
    for nest in fills:
        func = insert_in_scope(func, nest, lambda _items, at=at: at)
        at += 1
    if id(out) in table:
        back = _copy_back(out, table[id(out)])
        func = insert_in_scope(func, back, lambda _items, at=at: at + 1)
    for b in reads + [out]:
        if id(b) in table:
            func = add_root_alloc(func, table[id(b)])
    return func


def find_block_realize(func: PrimFunc, name: str) -> BlockRealize:
    from .tree import find_block

    return find_block(func, name)[0]


def _grid(name: str, shape: tuple, make_body: Any) -> Stmt:
    """Loops i0.. over `shape` around a block `name` with spatial iterators v0..."""
    loops = [Var(f"i{d}", s.dtype) for d, s in enumerate(shape)]
    ivs = [
        IterVar(Range.from_min_extent(0, s), Var(f"v{d}", s.dtype), IterType.DataPar) for d, s in enumerate(shape)
    ]
    idx = tuple(iv.var for iv in ivs)
    store, reads, writes = make_body(idx)
    point = lambda b: BufferRegion(b, tuple(Range.from_min_extent(i, 1) for i in idx))
    block = Block(
        tuple(ivs), tuple(point(b) for b in reads), tuple(point(b) for b in writes), name, store
    )
    stmt: Stmt = BlockRealize(tuple(loops), IntImm("bool", 1), block)
    for v, s in reversed(list(zip(loops, shape))):
        stmt = For(v, IntImm(v.dtype, 0), s, ForKind.SERIAL, stmt)
    return stmt


def _pad_copy(src: Any, dst: Any, dims: dict, if_then_else: Any) -> Stmt:
    """dst[v] = if_then_else(v < src's extent on each grown dim, src[v], 0)."""
    from ..expr import make_const

    def body(idx: tuple) -> tuple:
        cond = None
        for d in sorted(dims):
            c = LT(idx[d], src.shape[d])
            cond = c if cond is None else And(cond, c)
        value = if_then_else(cond, BufferLoad(src, idx), make_const(src.dtype, 0))
        return BufferStore(dst, value, idx), (src,), (dst,)

    return _grid(dst.name, dst.shape, body)


def _copy_back(out: Any, padded: Any) -> Stmt:
    def body(idx: tuple) -> tuple:
        return BufferStore(out, BufferLoad(padded, idx), idx), (padded,), (out,)

    return _grid(padded.name, out.shape, body)


__all__ = ["decompose_padding", "pad_einsum"]
