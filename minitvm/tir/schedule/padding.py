"""decompose_padding: split a padding block `y[v] = if_then_else(in_bounds(v), x[..], c)`
into a block that fills the constant and a block that copies only the in-bounds region."""

from __future__ import annotations

from typing import Any

from ..expr import (
    GE,
    GT,
    LE,
    LT,
    And,
    BufferLoad,
    Call,
    IntImm,
    IterVar,
    PrimExpr,
    Range,
    Var,
    const_value,
)
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferStore, For, SeqStmt, Stmt, seq
from .common import analyzer, schedule_error, unique_name
from .tree import Path, find_loop, loops_above, replace_stmt

_COMPARE = (GE, GT, LE, LT)


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if isinstance(x, And):
            stack += [x.b, x.a]
        else:
            out.append(x)
    return out


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
    is_ite = isinstance(value, Call) and getattr(value.op, "name", "") == "tir.if_then_else"
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
    for c in _conjuncts(cond):
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
        new_ivs.append(iv.replace(dom=Range(IntImm(ext.dtype, 0), IntImm(ext.dtype, hi - lo))))
        if lo:
            vmap[iv.var] = iv.var + lo
    body_ana = analyzer()
    for iv in new_ivs:
        if const_value(iv.dom.extent) != 1:  # a unit iterator stays a variable, as in TVM
            body_ana.bind(iv.var, iv.dom)
    simp = _Simplify(body_ana)
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
        for c in _conjuncts(r.predicate):  # flat, as TVM chains them
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


class _Simplify(Mutator):
    """Simplify buffer indices and region bounds."""

    def __init__(self, ana: Any) -> None:
        super().__init__()
        self.ana = ana

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        return e.replace(indices=tuple(self.ana.simplify(i) for i in e.indices))

    def visit_Range(self, rg: Range) -> Any:
        return Range(self.ana.simplify(rg.min), self.ana.simplify(rg.extent))


__all__ = ["decompose_padding"]
