"""Turn a block's `T.init()` into a statement that runs before its reduction loops.

The init is hoisted out of the loops that drive the block's reduction iter vars: it sits in
front of the outermost such loop, inside copies of the spatial loops nested in between,
guarded by the spatial part of the block predicate. It therefore runs even when the
reduction is over an empty range (`range(0)`, `te.reduce_axis((5, 2))`), where a sum must
give 0 and a max the reducer's identity.

When the reduction is not driven by loops of the block's scope in a separable way (a loop
fused from spatial and reduction axes, a reduction bound to an outer block's iterator), the
init becomes `if reduce vars at their min: init` inside the block; that placement is only
right when the reduction range is non-empty, so it is refused unless that is provable.
"""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ..expr import EQ, And, IntImm, IterType, IterVar, PrimExpr, Var, binary
from ..expr_build import flatten_operands
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..op import all as all_of
from ..stmt import Block, BlockRealize, For, IfThenElse, Stmt, seq
from ._pass import prim_func_pass


def _var_ids(n: Any) -> set[int]:
    found: set[int] = set()
    post_order_visit(n, lambda x: found.add(id(x)) if isinstance(x, Var) else None)
    return found


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    return [c for c in flatten_operands(cond, And) if not _is_true(c)]


def _is_true(cond: PrimExpr) -> bool:
    return isinstance(cond, IntImm) and cond.value == 1


def _is_reduce(iv: IterVar) -> bool:
    return iv.iter_type == IterType.CommReduce


class _Scope:
    """What the pass knows at a block: its enclosing loops and the vars that vary around it."""

    def __init__(self, loops: list[For], varying: set[int]) -> None:
        self.loops = loops  # loops of the current block scope, outermost first
        self.varying = varying  # ids of every loop var / block iter var in scope


def _hoisted_init(realize: BlockRealize, scope: _Scope) -> tuple[For, Stmt] | None:
    """(loop to put the init in front of, the init statement), or None if not separable."""
    block = realize.block
    reduce_ids = {id(iv.var) for iv in block.iter_vars if _is_reduce(iv)}
    bind = list(zip(block.iter_vars, realize.iter_values))
    reduce_uses = set().union(*(_var_ids(v) for iv, v in bind if _is_reduce(iv)))
    loop_ids = [id(lp.loop_var) for lp in scope.loops]
    if (reduce_uses & scope.varying) - set(loop_ids):
        return None  # the reduction also moves with an outer block's iterator
    red = [n for n, v in enumerate(loop_ids) if v in reduce_uses]
    if not red:
        return None
    red_vars = {loop_ids[n] for n in red}
    kept = [c for c in _conjuncts(realize.predicate) if not _var_ids(c) & red_vars]
    spatial_values = [v for iv, v in bind if not _is_reduce(iv)]
    spatial_uses = set().union(*map(_var_ids, spatial_values), *map(_var_ids, kept))
    dropped = [c for c in _conjuncts(realize.predicate) if _var_ids(c) & red_vars]
    inner = scope.loops[red[0] :]
    copied = [lp for lp in inner if id(lp.loop_var) not in red_vars]
    other_vars = scope.varying - red_vars
    if red_vars & spatial_uses or any(_var_ids(c) & other_vars for c in dropped):
        return None  # a loop (or a condition) mixes spatial and reduction axes
    if any(_var_ids((lp.min, lp.extent)) & red_vars for lp in copied):
        return None  # a spatial loop's range depends on the reduction (triangular nest)
    init_ids = _var_ids((block.init, block.writes))
    if init_ids & reduce_ids or init_ids & {id(b.data) for b in block.alloc_buffers}:
        return None
    return scope.loops[red[0]], _init_nest(realize, kept, copied)


def _init_nest(realize: BlockRealize, kept: list[PrimExpr], copied: list[For]) -> Stmt:
    """The init as its own block (spatial iter vars only) inside fresh copies of `copied`."""
    block = realize.block
    vmap: dict[Any, PrimExpr] = {}
    new_loops = []
    for lp in copied:
        fresh = Var(lp.loop_var.name, lp.loop_var.dtype)
        new_loops.append((lp, fresh, substitute(lp.min, vmap), substitute(lp.extent, vmap)))
        vmap[lp.loop_var] = fresh
    iter_map: dict[Any, PrimExpr] = {}
    iter_vars, values = [], []
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if _is_reduce(iv):
            continue
        var = Var(iv.var.name, iv.var.dtype)
        iter_map[iv.var] = var
        iter_vars.append(iv.replace(var=var))
        values.append(substitute(value, vmap))
    init_block = Block(
        tuple(iter_vars),
        (),
        substitute(block.writes, iter_map),
        block.name_hint + "_init",
        substitute(block.init, iter_map),
    )
    stmt: Stmt = BlockRealize(tuple(values), substitute(all_of(*kept), vmap), init_block)
    for lp, fresh, lo, extent in reversed(new_loops):
        stmt = lp.replace(loop_var=fresh, min=lo, extent=extent, body=stmt)
    return stmt


def _guarded_init(realize: BlockRealize) -> BlockRealize:
    """`if reduce vars at their min: init` inside the block; refused if the range may be empty."""
    block = realize.block
    reduce_ivs = [iv for iv in block.iter_vars if _is_reduce(iv)]
    empty = [iv for iv in reduce_ivs if not _provably_positive(iv.dom.extent)]
    if empty:
        names = ", ".join(f"'{iv.var.name}' (extent {iv.dom.extent})" for iv in empty)
        raise BuildError(
            f"block '{block.name_hint}': cannot place its T.init(): the reduction over {names} "
            "may be empty and its loops are not separable from the spatial loops (fused, or "
            "bound to an outer block); use sch.decompose_reduction on the block first"
        )
    cond = all_of(*(binary(EQ, iv.var, iv.dom.min) for iv in reduce_ivs))
    init = block.init if _is_true(cond) else IfThenElse(cond, block.init)
    return realize.replace(block=block.replace(body=seq(init, block.body), init=None))


def _provably_positive(extent: PrimExpr) -> bool:
    return isinstance(extent, IntImm) and extent.value >= 1


class _LowerInit(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.scope = _Scope([], set())
        self.before_loop: dict[int, list[Stmt]] = {}  # id(original loop) -> inits in front of it

    def visit_For(self, loop: For) -> Stmt:
        self.scope.loops.append(loop)
        self.scope.varying.add(id(loop.loop_var))
        new = self.generic_visit(loop)
        self.scope.loops.pop()
        inits = self.before_loop.pop(id(loop), None)
        return new if inits is None else seq(*inits, new)

    def visit_BlockRealize(self, realize: BlockRealize) -> Stmt:
        block = realize.block
        outer = self.scope
        varying = outer.varying | {id(iv.var) for iv in block.iter_vars}
        self.scope = _Scope([], varying)  # loops inside a block form a new scope
        new_block = self.generic_visit(block)
        self.scope = outer
        realize = realize.replace(block=new_block)
        if new_block.init is None:
            return realize
        hoisted = _hoisted_init(realize, outer)
        if hoisted is None:
            return _guarded_init(realize)
        loop, init = hoisted
        self.before_loop.setdefault(id(loop), []).append(init)
        return realize.replace(block=new_block.replace(init=None))


def lower_init_block(func: PrimFunc) -> PrimFunc:
    """`for k: block { init: I; body: B }` → `block_init { I }; for k: block { B }`."""
    return func.replace(body=_LowerInit().visit(func.body))


LowerInitBlock = prim_func_pass(lower_init_block, "LowerInitBlock")
