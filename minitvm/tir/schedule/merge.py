"""merge: fuse sibling loop nests of equal shape into one nest that runs their bodies in turn.

`merge(l1, l2, ...)` takes loops at the same depth of consecutive nests of one scope; each nest
from its top loop down to the given loop is a chain of only-child loops with the same extents
(all starting at 0). The result is one chain of loops named `<first>_m` whose innermost body is
the given loops' bodies in order. Running body 2 of iteration t before body 1 of iteration t+1
changes the order of their statements, so merge requires that no nest writes a buffer that
another merged nest reads or writes.
"""

from __future__ import annotations

import itertools

from ..expr import BufferLoad, Var
from ..function import PrimFunc
from ..functor import post_order_visit, substitute
from ..stmt import Block, BufferStore, For, SeqStmt, seq
from .common import analyzer, is_zero, schedule_error
from .tree import Path, enclosing_block, loops_above, replace_stmts


def _chain(func: PrimFunc, loop: For, path: Path) -> list[For]:
    """The loops from the top of the nest (below the scope block) down to `loop`."""
    chain = loops_above(path) + [loop]
    for outer, inner in itertools.pairwise(chain):
        if outer.body is not inner:
            raise schedule_error(
                func,
                f"merge: loop '{inner.loop_var.name}' is not the only child of loop "
                f"'{outer.loop_var.name}'; only perfectly nested loops can be merged",
                outer,
            )
    return chain


def _buffers(stmt: object) -> tuple[set[int], set[int], dict[int, str]]:
    """Ids of the buffers `stmt` reads and writes (block regions and direct accesses)."""
    reads: set[int] = set()
    writes: set[int] = set()
    names: dict[int, str] = {}

    def visit(node: object) -> None:
        if isinstance(node, BufferLoad):
            reads.add(id(node.buffer))
            names[id(node.buffer)] = node.buffer.name
        elif isinstance(node, BufferStore):
            writes.add(id(node.buffer))
            names[id(node.buffer)] = node.buffer.name
        elif isinstance(node, Block):
            for r in node.reads:
                reads.add(id(r.buffer))
                names[id(r.buffer)] = r.buffer.name
            for w in node.writes:
                writes.add(id(w.buffer))
                names[id(w.buffer)] = w.buffer.name

    post_order_visit(stmt, visit)
    return reads, writes, names


def _check_shapes(func: PrimFunc, chains: list[list[For]]) -> None:
    depth = len(chains[0])
    ana = analyzer()
    for chain in chains[1:]:
        if len(chain) != depth:
            raise schedule_error(
                func,
                f"merge: loop '{chain[-1].loop_var.name}' is at depth {len(chain)} of its nest "
                f"but '{chains[0][-1].loop_var.name}' is at depth {depth}; merge loops of the "
                "same level",
            )
    for level in zip(*chains):
        for loop in level:
            if not is_zero(loop.min):
                raise schedule_error(
                    func,
                    f"merge: loop '{loop.loop_var.name}' starts at {loop.min}, not 0",
                    loop,
                )
            if not ana.can_prove_equal(loop.extent, level[0].extent):
                raise schedule_error(
                    func,
                    f"merge: loop '{loop.loop_var.name}' has extent {loop.extent} but "
                    f"'{level[0].loop_var.name}' has {level[0].extent}; merged loops must "
                    "have the same extent",
                    loop,
                )


def _check_independent(func: PrimFunc, chains: list[list[For]]) -> None:
    """No merged nest writes a buffer that another one reads or writes."""
    accesses = [_buffers(chain[-1].body) for chain in chains]
    for i, (_, writes, names) in enumerate(accesses):
        for j, (other_r, other_w, _) in enumerate(accesses):
            clash = writes & (other_r | other_w) if i != j else set()
            if clash:
                name = names[next(iter(clash))]
                raise schedule_error(
                    func,
                    f"merge: the nest of loop '{chains[i][-1].loop_var.name}' writes buffer "
                    f"'{name}' that the nest of loop '{chains[j][-1].loop_var.name}' accesses; "
                    "merging would reorder those accesses",
                )


def _siblings(func: PrimFunc, tops: list[For], paths: list[Path]) -> SeqStmt:
    """The statement list holding every top loop, checked to hold them consecutively."""
    parents = [p[-1] if p else None for p in paths]
    parent = parents[0]
    if not isinstance(parent, SeqStmt) or any(p is not parent for p in parents):
        raise schedule_error(
            func, "merge: the loops' nests must be consecutive statements of one statement list"
        )
    where = [next(i for i, s in enumerate(parent.seq) if s is top) for top in tops]
    if where != list(range(where[0], where[0] + len(tops))):
        raise schedule_error(
            func,
            "merge: the loops' nests must be consecutive statements in the order given; "
            f"they are at positions {where}",
        )
    return parent


def merge(func: PrimFunc, located: list[tuple[For, Path]]) -> tuple[PrimFunc, Var]:
    """`func` with the given loops' nests merged; returns it and the merged innermost loop var."""
    if len(located) < 2:
        raise schedule_error(func, "merge: pass at least two loops")
    scopes = [enclosing_block(path) for _, path in located]
    if any(s is not scopes[0] for s in scopes):
        raise schedule_error(
            func, "merge: the loops are in different blocks' scopes; merge loops of one scope"
        )
    chains = [_chain(func, loop, path) for loop, path in located]
    tops = [chain[0] for chain in chains]
    if len({id(t) for t in tops}) != len(tops):
        raise schedule_error(func, "merge: two of the loops belong to the same loop nest")
    _check_shapes(func, chains)
    _check_independent(func, chains)
    top_paths = [path[: len(path) - len(chain) + 1] for (_, path), chain in zip(located, chains)]
    _siblings(func, tops, top_paths)
    new_vars = [Var(f"{loop.loop_var.name}_m", loop.loop_var.dtype) for loop in chains[0]]
    bodies = [
        substitute(chain[-1].body, {loop.loop_var: v for loop, v in zip(chain, new_vars)})
        for chain in chains
    ]
    stmt = seq(*bodies)
    for loop, var in zip(reversed(chains[0]), reversed(new_vars)):
        stmt = loop.replace(loop_var=var, body=stmt)
    table: dict[int, object] = {id(tops[0]): stmt}
    table.update({id(t): None for t in tops[1:]})
    return replace_stmts(func, table, tops), new_vars[-1]


__all__ = ["merge"]
