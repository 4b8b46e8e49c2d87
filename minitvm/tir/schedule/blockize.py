"""blockize: wrap the loops under a loop (and the block they carry) into a new outer block.

Each iter var v of the block, bound to e, is divided between the loops outside the given loop
(the outer space) and the loops from it inwards (the inner space): e == o * c + i where o uses
only outer loop vars, i only inner ones and 0 <= i < c. The outer block `<name>_o` gets an iter
v_o bound to o; the original block keeps the inner iters v_i bound to i and reads v as
v_o * c + v_i. A binding that mixes both spaces in any other way cannot be divided, and
blockize raises. The division is an identity on every instance, so the blockized program
computes exactly what the original did.
"""

from __future__ import annotations

from typing import Any

from ..expr import Add, IntImm, IterType, IterVar, Mul, PrimExpr, Range, Sub, Var
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import Block, BlockRealize, BufferRegion, For
from .common import analyzer, const_int, is_one, schedule_error, unique_name
from .tree import Path, loops_above, replace_stmt, uses_var


class _SubstSimplify(Mutator):
    """Substitute variables and simplify every expression that changed."""

    def __init__(self, vmap: dict[int, PrimExpr], ana: Any) -> None:
        super().__init__()
        self.vmap = vmap
        self.ana = ana

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vmap.get(id(v), v)

    def visit_PrimExpr(self, e: PrimExpr) -> PrimExpr:
        out = self.generic_visit(e)
        return out if out is e else self.ana.simplify(out)


def subst_simplify(node: Any, vmap: dict[int, PrimExpr], ana: Any) -> Any:
    return _SubstSimplify(vmap, ana).visit(node)


def single_block_under(func: PrimFunc, loop: For, what: str) -> tuple[list[For], BlockRealize]:
    """The chain of loops from `loop` down to the one block realize it carries."""
    chain = [loop]
    stmt = loop.body
    while isinstance(stmt, For):
        chain.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, BlockRealize):
        raise schedule_error(
            func,
            f"{what}: loop '{loop.loop_var.name}' must carry exactly one block through a chain "
            f"of loops, but it holds a {type(stmt).__name__}",
            loop,
        )
    return chain, stmt


def _plus(op: type, a: PrimExpr | None, b: PrimExpr | None) -> PrimExpr | None:
    """a op b where None stands for 0 (keeps the parts free of `+ 0` terms)."""
    if b is None:
        return a
    if a is None:
        return b if op is Add else IntImm(b.dtype, 0) - b
    return op(a, b)


def _split_sum(e: PrimExpr, inner: set[int]) -> tuple[Any, Any] | None:
    """(outer, inner) parts with e == outer + inner (None: a zero part), or None."""
    if not uses_var(e, inner):
        return e, None
    if isinstance(e, Var):
        return None, e
    if isinstance(e, Add | Sub):
        a, b = _split_sum(e.a, inner), _split_sum(e.b, inner)
        if a is None or b is None:
            return None
        return _plus(type(e), a[0], b[0]), _plus(type(e), a[1], b[1])
    for coef, rest in ((e.b, "a"), (e.a, "b")) if isinstance(e, Mul) else ():
        if const_int(coef) is not None:
            parts = _split_sum(getattr(e, rest), inner)
            if parts is None:
                return None
            return tuple(None if p is None else p * coef for p in parts)
    return None if _all_vars_except(e, inner) else (None, e)


def _div_exact(e: PrimExpr, c: int) -> PrimExpr | None:
    """e / c when every term of the sum e is a multiple of c, built without simplification."""
    if const_int(e) is not None:
        return IntImm(e.dtype, const_int(e) // c) if const_int(e) % c == 0 else None
    if isinstance(e, Add | Sub):
        a, b = _div_exact(e.a, c), _div_exact(e.b, c)
        return None if a is None or b is None else _plus(type(e), a, b)
    if isinstance(e, Mul):
        for coef, rest in ((e.b, e.a), (e.a, e.b)):
            k = const_int(coef)
            if k is not None and k % c == 0:
                return rest if k == c else rest * (k // c)
    return None


def _extent_of(e: PrimExpr, ana: Any, fallback: PrimExpr) -> PrimExpr | None:
    """The extent of the values of `e` when they start at 0 (else None)."""
    if is_one(fallback):
        return fallback
    bound = ana.const_int_bound(e)
    if bound.min_value != 0 or bound.max_value >= 2**62:
        return None
    return IntImm(fallback.dtype, bound.max_value + 1)


class _Division:
    """One iter var's division: outer binding/extent, inner binding/extent."""

    def __init__(self, outer: PrimExpr, outer_ext: PrimExpr, inner: PrimExpr, inner_ext: PrimExpr):
        self.outer, self.outer_ext, self.inner, self.inner_ext = outer, outer_ext, inner, inner_ext


def divide(
    func: PrimFunc, iv: IterVar, e: PrimExpr, inner: set[int], ana: Any, block: Block
) -> _Division:
    """Divide binding `e` of `iv` into the outer and inner spaces (raises when it cannot)."""
    dt = iv.var.dtype
    one, zero = IntImm(dt, 1), IntImm(dt, 0)
    parts = _split_sum(e, inner)

    def fail(why: str) -> Exception:
        return schedule_error(
            func,
            f"blockize: the binding {iv.var.name} = {e} of block '{block.name_hint}' cannot be "
            f"divided into the loops outside and inside the blockized loop ({why}); split or "
            "reorder the loops so that the inner loops form a whole tile",
            block,
        )

    if parts is None:
        raise fail("it mixes outer and inner loop variables non-linearly")
    outer, inner_part = parts
    if inner_part is None:  # only the outer space
        ext = _extent_of(outer, ana, iv.dom.extent) or iv.dom.extent
        return _Division(outer, ext, zero, one)
    if outer is None:  # only the inner space
        ext = _extent_of(inner_part, ana, iv.dom.extent)
        if ext is None:
            raise fail(f"the inner part {inner_part} does not start at 0")
        return _Division(zero, one, inner_part, ext)
    c = _extent_of(inner_part, ana, IntImm(dt, 0))
    if c is None:
        raise fail(f"the inner part {inner_part} does not start at 0")
    quotient = _div_exact(outer, const_int(c))
    if quotient is None:
        raise fail(f"the outer part {outer} is not a multiple of the inner extent {c}")
    ext = _extent_of(quotient, ana, IntImm(dt, 0))
    if ext is None:
        raise fail(f"the outer part {quotient} does not start at 0")
    return _Division(quotient, ext, inner_part, c)


def relax_regions(regions: tuple, dom: dict) -> tuple:
    """Each region widened over the iter vars of `dom` (Var -> Range), and only those."""
    ana = analyzer()
    out = []
    for region in regions:
        ranges = []
        for r, size in zip(region.region, region.buffer.shape):
            lo = ana.int_set(r.min, dom)
            hi = ana.int_set(r.min + r.extent - 1, dom)
            if lo.lo is None or hi.hi is None:
                ranges.append(Range(IntImm(r.min.dtype, 0), size))
            else:
                ranges.append(Range(lo.lo, ana.simplify(hi.hi - lo.lo + 1)))
        out.append(BufferRegion(region.buffer, tuple(ranges)))
    return tuple(out)


def _outer_init(init: Any, inner: BlockRealize, loops: list[For], name: str) -> Any:
    """The outer block's init: the init statement as a block over the inner spatial iters."""
    block = inner.block
    vmap: dict[int, PrimExpr] = {}
    ivs, values = [], []
    for iv, value in zip(block.iter_vars, inner.iter_values):
        if iv.iter_type == IterType.DataPar and uses_var(init, {id(iv.var)}):
            var = Var(f"{iv.var.name}_init", iv.var.dtype)
            vmap[id(iv.var)] = var
            ivs.append(iv.replace(var=var))
            values.append(value)
    stmt: Any = BlockRealize(
        tuple(values),
        inner.predicate,
        Block(tuple(ivs), (), block.writes, name, init),
    )
    for loop in reversed(loops):
        if any(uses_var(v, {id(loop.loop_var)}) for v in values):
            var = Var(loop.loop_var.name, loop.loop_var.dtype)
            vmap[id(loop.loop_var)] = var
            stmt = loop.replace(loop_var=var, body=stmt)
    return subst_simplify(stmt, vmap, analyzer())


def blockize_loop(
    func: PrimFunc, loop: For, path: Path, preserve_unit_iters: bool
) -> tuple[PrimFunc, BlockRealize]:
    """`func` with the subtree of `loop` made into a block; returns it and the new realize."""
    new = blockize_realize(func, loop, path, preserve_unit_iters)
    return replace_stmt(func, loop, new), new


def blockize_realize(
    func: PrimFunc, loop: For, path: Path, preserve_unit_iters: bool
) -> BlockRealize:
    """The outer BlockRealize that replaces `loop` (see the module docstring)."""
    inner_loops, realize = single_block_under(func, loop, "blockize")
    outer_loops = loops_above(path)
    block = realize.block
    ana = analyzer([*outer_loops, *inner_loops])
    unit = {}
    if not preserve_unit_iters:  # unit loops read as their only value
        unit = {id(f.loop_var): f.min for f in (*outer_loops, *inner_loops) if is_one(f.extent)}
    inner_ids = {id(f.loop_var) for f in inner_loops}
    bindings = [subst_simplify(v, unit, ana) for v in realize.iter_values]
    divisions = [
        divide(func, iv, e, inner_ids, ana, block) for iv, e in zip(block.iter_vars, bindings)
    ]
    if uses_var(realize.predicate, inner_ids) and uses_var(
        realize.predicate, {id(f.loop_var) for f in outer_loops}
    ):
        raise schedule_error(
            func,
            f"blockize: the predicate {realize.predicate} of block '{block.name_hint}' uses loops "
            "both outside and inside the blockized loop",
            block,
        )
    inner_pred = uses_var(realize.predicate, inner_ids)
    outer_ivs, outer_values, inner_ivs, inner_values = [], [], [], []
    vmap: dict[int, PrimExpr] = {}
    for iv, d in zip(block.iter_vars, divisions):
        o_var = Var(f"{iv.var.name}_o", iv.var.dtype)
        outer_ivs.append(IterVar(Range(IntImm(iv.var.dtype, 0), d.outer_ext), o_var, iv.iter_type))
        outer_values.append(d.outer)
        if is_one(d.inner_ext):
            both_unit = is_one(d.outer_ext) and not preserve_unit_iters
            vmap[id(iv.var)] = IntImm(iv.var.dtype, 0) if both_unit else o_var
            continue
        i_var = Var(f"{iv.var.name}_i", iv.var.dtype)
        inner_ivs.append(IterVar(Range(IntImm(iv.var.dtype, 0), d.inner_ext), i_var, iv.iter_type))
        inner_values.append(d.inner)
        vmap[id(iv.var)] = i_var if is_one(d.outer_ext) else o_var * d.inner_ext + i_var
    for iv in inner_ivs:
        ana.bind(iv.var, iv.dom)
    for iv in outer_ivs:
        ana.bind(iv.var, iv.dom)
    sub = subst_simplify(block, vmap, ana)
    outer_reduce = any(iv.iter_type == IterType.CommReduce for iv in outer_ivs)
    reads = sub.writes + sub.reads if (sub.init is not None and outer_reduce) else sub.reads
    true = IntImm("bool", 1)
    inner = BlockRealize(
        tuple(inner_values),
        realize.predicate if inner_pred else true,
        sub.replace(iter_vars=tuple(inner_ivs), init=None, reads=reads),
    )
    body: Any = inner
    for f in reversed(inner_loops):
        body = f.replace(body=body)
    dom = {iv.var: iv.dom for iv in inner_ivs}
    name = unique_name(func, f"{block.name_hint}_o")
    init = None
    if sub.init is not None:
        init = _outer_init(sub.init, inner, inner_loops, f"{block.name_hint}_init")
    outer_block = Block(
        tuple(outer_ivs),
        relax_regions(sub.reads, dom),
        relax_regions(sub.writes, dom),
        name,
        body,
        init=init,
    )
    return BlockRealize(
        tuple(outer_values), true if inner_pred else realize.predicate, outer_block
    )


__all__ = ["blockize_loop", "blockize_realize", "single_block_under", "subst_simplify"]


def blockize_blocks(func: PrimFunc, located: list, preserve_unit_iters: bool) -> Any:
    """blockize of a list of blocks (TVM's `outer_<names>_` block) is not implemented yet."""
    names = [r.block.name_hint for r, _ in located]
    raise schedule_error(
        func,
        f"blockize: a list of blocks ({names}) is not supported yet; blockize the loop above "
        "them instead when they share one loop nest",
    )
