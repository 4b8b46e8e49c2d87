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

from ..expr import Add, IntImm, IterType, IterVar, Max, Min, Mul, PrimExpr, Range, Sub, Var
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import Block, BlockRealize, BufferRegion, For, SeqStmt, seq
from .common import analyzer, const_int, is_one, schedule_error, unique_name
from .tree import Path, loops_above, replace_stmt, uses_var, vars_in


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


def _all_vars_except(e: PrimExpr, ids: set[int]) -> set[int]:
    """Ids of the variables of `e` that are not in `ids`."""
    return {id(v) for v in vars_in(e) if id(v) not in ids}


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
                ranges.append(Range.from_min_extent(IntImm(r.min.dtype, 0), size))
            else:
                ranges.append(Range.from_min_extent(lo.lo, ana.simplify(hi.hi - lo.lo + 1)))
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


class _Split:
    """A block divided at a loop: the outer iterators and the inner block realize."""

    def __init__(self, outer_ivs, outer_values, inner, sub, dom, outer_pred):
        self.outer_ivs, self.outer_values, self.inner = outer_ivs, outer_values, inner
        self.sub, self.dom, self.outer_pred = sub, dom, outer_pred


def _split_block(
    func: PrimFunc,
    realize: BlockRealize,
    inner_loops: list[For],
    outer_loops: list[For],
    preserve_unit_iters: bool,
    shared: _Split | None = None,
) -> _Split:
    """Divide `realize` between `outer_loops` and `inner_loops` (those below the division).

    With `shared`, the outer iterators are those of another block of the same outer block,
    and this block's outer bindings must be the same.
    """
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
    if shared is not None and len(shared.outer_ivs) != len(divisions):
        raise _shared_error(func, block, "a different number of iterators")
    inner_pred = uses_var(realize.predicate, inner_ids)
    outer_ivs, outer_values, inner_ivs, inner_values = [], [], [], []
    vmap: dict[int, PrimExpr] = {}
    for k, (iv, d) in enumerate(zip(block.iter_vars, divisions)):
        if shared is None:
            o_var = Var(f"{iv.var.name}_o", iv.var.dtype)
            o_iv = IterVar(Range.from_min_extent(IntImm(iv.var.dtype, 0), d.outer_ext), o_var, iv.iter_type)
        else:
            o_iv = shared.outer_ivs[k]
            o_var = o_iv.var
            same = ana.can_prove_equal(o_iv.dom.extent, d.outer_ext) and ana.can_prove_equal(
                shared.outer_values[k], d.outer
            )
            if not same:
                raise _shared_error(func, block, f"outer binding {d.outer} for iterator {k}")
        outer_ivs.append(o_iv)
        outer_values.append(d.outer)
        if is_one(d.inner_ext):
            both_unit = is_one(d.outer_ext) and not preserve_unit_iters
            vmap[id(iv.var)] = IntImm(iv.var.dtype, 0) if both_unit else o_var
            continue
        i_var = Var(f"{iv.var.name}_i", iv.var.dtype)
        inner_ivs.append(IterVar(Range.from_min_extent(IntImm(iv.var.dtype, 0), d.inner_ext), i_var, iv.iter_type))
        inner_values.append(d.inner)
        vmap[id(iv.var)] = i_var if is_one(d.outer_ext) else o_var * d.inner_ext + i_var
    for iv in [*inner_ivs, *outer_ivs]:
        ana.bind(iv.var, iv.dom)
    sub = subst_simplify(block, vmap, ana)
    outer_reduce = any(iv.iter_type == IterType.CommReduce for iv in outer_ivs)
    reads = sub.writes + sub.reads if (sub.init is not None and outer_reduce) else sub.reads
    inner = BlockRealize(
        tuple(inner_values),
        realize.predicate if inner_pred else IntImm("bool", 1),
        sub.replace(iter_vars=tuple(inner_ivs), init=None, reads=reads),
    )
    dom = {iv.var: iv.dom for iv in inner_ivs}
    outer_pred = IntImm("bool", 1) if inner_pred else realize.predicate
    return _Split(outer_ivs, outer_values, inner, sub, dom, outer_pred)


def _shared_error(func: PrimFunc, block: Block, what: str) -> Exception:
    return schedule_error(
        func,
        f"blockize: block '{block.name_hint}' has {what} unlike the first block; blocks "
        "blockized together must share their outer iteration space",
        block,
    )


def _wrap(stmt: Any, loops: list[For]) -> Any:
    for f in reversed(loops):
        stmt = f.replace(body=stmt)
    return stmt


def blockize_realize(
    func: PrimFunc, loop: For, path: Path, preserve_unit_iters: bool
) -> BlockRealize:
    """The outer BlockRealize that replaces `loop` (see the module docstring)."""
    inner_loops, realize = single_block_under(func, loop, "blockize")
    split = _split_block(func, realize, inner_loops, loops_above(path), preserve_unit_iters)
    block, sub = realize.block, split.sub
    init = None
    if sub.init is not None:
        init = _outer_init(sub.init, split.inner, inner_loops, f"{block.name_hint}_init")
    outer_block = Block(
        tuple(split.outer_ivs),
        relax_regions(sub.reads, split.dom),
        relax_regions(sub.writes, split.dom),
        unique_name(func, f"{block.name_hint}_o"),
        _wrap(split.inner, inner_loops),
        init=init,
    )
    return BlockRealize(tuple(split.outer_values), split.outer_pred, outer_block)


def union_regions(regions: list) -> tuple:
    """One region per buffer (in order of first appearance) covering all of its regions."""
    ana = analyzer()
    order: list = []
    hulls: dict[int, list] = {}
    for region in regions:
        key = id(region.buffer)
        bounds = [(r.min, r.min + r.extent) for r in region.region]
        if key not in hulls:
            order.append(region.buffer)
            hulls[key] = bounds
            continue
        hulls[key] = [
            (ana.simplify(Min(lo, lo2)), ana.simplify(Max(hi, hi2)))
            for (lo, hi), (lo2, hi2) in zip(hulls[key], bounds)
        ]
    return tuple(
        BufferRegion(b, tuple(Range.from_min_extent(lo, ana.simplify(hi - lo)) for lo, hi in hulls[id(b)]))
        for b in order
    )


def _lca_items(func: PrimFunc, located: list) -> tuple[Any, list[int]]:
    """The statement list holding every block's subtree, and each subtree's position in it."""
    paths = [path + (r,) for r, path in located]
    depth = 0
    while all(len(p) > depth + 1 for p in paths) and all(
        p[depth] is paths[0][depth] for p in paths
    ):
        depth += 1
    # paths[.][depth - 1] is the deepest common ancestor: it must be a list of statements
    seq_node = paths[0][depth - 1]
    if not isinstance(seq_node, SeqStmt):
        raise schedule_error(
            func, "blockize: the blocks must be in different statements of one statement list"
        )
    items = [next(k for k, s in enumerate(seq_node.seq) if s is p[depth]) for p in paths]
    if len(set(items)) != len(items):
        raise schedule_error(func, "blockize: two of the blocks are under the same statement")
    if sorted(items) != list(range(min(items), max(items) + 1)):
        raise schedule_error(
            func, "blockize: the blocks' statements must be consecutive in their statement list"
        )
    return seq_node, items


def blockize_blocks(func: PrimFunc, located: list, preserve_unit_iters: bool) -> tuple:
    """`func` with the blocks' subtrees (consecutive statements of one list) made into one
    block `outer_<names>_`; returns it and that block's name."""
    if not located:
        raise schedule_error(func, "blockize: pass at least one block")
    seq_node, items = _lca_items(func, located)
    ordered = [located[k] for k in sorted(range(len(items)), key=items.__getitem__)]
    shared = None
    nests, reads, writes, names = [], [], [], []
    for r, path in ordered:
        loops = [f for f in path[path.index(seq_node) + 1 :] if isinstance(f, For)]
        chain_ok = all(a.body is b for a, b in zip([*loops], [*loops[1:], r])) and len(
            path
        ) - path.index(seq_node) - 1 == len(loops)
        if not chain_ok:
            raise schedule_error(
                func,
                f"blockize: block '{r.block.name_hint}' must sit under a chain of loops below "
                "the blocks' common statement list",
                r.block,
            )
        outer_loops = _outer_loops(path, seq_node)
        split = _split_block(func, r, loops, outer_loops, preserve_unit_iters, shared)
        if split.sub.init is not None and any(
            iv.iter_type == IterType.CommReduce for iv in split.outer_ivs
        ):
            raise schedule_error(
                func,
                f"blockize: block '{r.block.name_hint}' reduces over an outer iterator; blockize "
                "it alone",
                r.block,
            )
        shared = shared or split
        nests.append(_wrap(split.inner, loops))
        reads += relax_regions(split.sub.reads, split.dom)
        writes += relax_regions(split.sub.writes, split.dom)
        names.append(r.block.name_hint)
    name = unique_name(func, "outer_" + "".join(f"{n}_" for n in names))
    outer = BlockRealize(
        tuple(shared.outer_values),
        shared.outer_pred,
        Block(
            tuple(shared.outer_ivs), union_regions(reads), union_regions(writes), name, seq(*nests)
        ),
    )
    first = min(items)
    kept = [s for k, s in enumerate(seq_node.seq) if k not in items]
    kept.insert(first, outer)
    return replace_stmt(func, seq_node, seq(*kept)), name


def _outer_loops(path: Path, seq_node: Any) -> list[For]:
    """Loops between the innermost enclosing block and the statement list (outer space)."""
    return loops_above(path[: path.index(seq_node)])


__all__ = [
    "blockize_blocks",
    "blockize_loop",
    "blockize_realize",
    "single_block_under",
    "subst_simplify",
]
