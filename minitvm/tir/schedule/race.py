"""Does running a loop's iterations at the same time make two of them update one element?

A block that accumulates (it has an init, or reads what it writes) must touch disjoint
elements in different iterations of a parallel loop. We decide this exactly for constant
loop nests of moderate size by enumerating the iterations, and otherwise conservatively
from the bindings (the loop must at least drive one of the block's spatial iterators).
"""

from __future__ import annotations

import itertools

from ..expr import Cast, FloorDiv, FloorMod, IntImm, IterType, Not, PrimExpr, Select, Var
from ..expr_build import INT_OPERATORS
from ..stmt import BlockRealize, For
from .common import const_int
from .tree import uses_var

_MAX_POINTS = 1 << 14


class Unknown(Exception):
    """The expression uses something the small evaluator does not model."""


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise Unknown
    return a // b


def _floormod(a: int, b: int) -> int:
    if b == 0:
        raise Unknown
    return a % b


# node class -> how to combine the operand values; a division by zero is not modelled
_BINARY = {**INT_OPERATORS, FloorDiv: _floordiv, FloorMod: _floormod}


def eval_int(e: PrimExpr, env: dict[int, int]) -> int:
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        if id(e) not in env:
            raise Unknown
        return env[id(e)]
    if isinstance(e, Cast):
        return eval_int(e.value, env)
    if isinstance(e, Not):
        return int(not eval_int(e.a, env))
    if isinstance(e, Select):
        return eval_int(e.true_value if eval_int(e.condition, env) else e.false_value, env)
    fn = _BINARY.get(type(e))
    if fn is None:
        raise Unknown
    return int(fn(eval_int(e.a, env), eval_int(e.b, env)))


def _spatial(r: BlockRealize) -> list[PrimExpr]:
    return [
        v for iv, v in zip(r.block.iter_vars, r.iter_values) if iv.iter_type != IterType.CommReduce
    ]


def _written(r: BlockRealize, outer: dict) -> list[PrimExpr] | None:
    """The indices the block's own stores write, in the loop variables of its binding (and
    of the enclosing blocks' bindings `outer`); None when a store sits under a loop or block
    inside the block (its index is not a point)."""
    from ..functor import substitute
    from ..stmt import Block, BufferStore
    from ..stmt import For as ForStmt
    from .tree import walk

    bind = dict(outer)
    bind.update({iv.var: substitute(v, outer) for iv, v in zip(r.block.iter_vars, r.iter_values)})
    own = {id(b) for b in r.block.alloc_buffers}
    out: list[PrimExpr] = []
    for s, path in walk(r.block.body):
        if isinstance(s, BufferStore) and id(s.buffer) not in own:
            if any(isinstance(p, ForStmt | Block) for p in path):
                return None
            out += [substitute(i, bind) for i in s.indices]
    return out


def iterations_collide(
    loop: For, r: BlockRealize, inner: list[For], outer: list[For], outer_bind: dict | None = None
) -> bool:
    """True when two iterations of `loop` run block `r` at the same written point.

    `inner` are the loops between `loop` and the block, `outer` the loops around `loop`
    (held at their first iteration). The written point is the store indices when the block
    stores at points, else its spatial iterators (a well-formed block writes by those).
    """
    from ..functor import substitute

    outer_bind = outer_bind or {}
    written = _written(r, outer_bind)
    spatial = written if written else [substitute(v, outer_bind) for v in _spatial(r)]
    if not uses_var(spatial, {id(loop.loop_var)}):
        return True  # every iteration writes the very same elements
    nest = [loop] + inner
    extents = [const_int(f.extent) for f in nest]
    mins = [const_int(f.min) for f in nest + outer]
    size = 1
    for e in extents:
        size *= e if e is not None else _MAX_POINTS + 1
    if None in mins or None in extents or size > _MAX_POINTS:
        # cannot enumerate (a symbolic extent beside an empty loop makes size 0 without a
        # bound): accept, as the loop drives a spatial iterator
        return False
    env = {id(f.loop_var): const_int(f.min) for f in outer}
    owner: dict[tuple, int] = {}
    try:
        for point in itertools.product(*(range(m, m + e) for m, e in zip(mins, extents))):
            env.update({id(f.loop_var): p for f, p in zip(nest, point)})
            if not eval_int(r.predicate, env):
                continue
            key = tuple(eval_int(v, env) for v in spatial)
            if owner.setdefault(key, point[0]) != point[0]:
                return True
    except Unknown:
        return False
    return False


__all__ = ["Unknown", "eval_int", "iterations_collide"]
