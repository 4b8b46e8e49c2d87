"""TopologicalSort: reorder the bindings of each dataflow block by a depth- or breadth-first walk
of the function's def-use graph, from its inputs or from its outputs (TVM's semantics).

The graph has two extra nodes, INPUT (before every parameter and every binding that uses no
variable) and OUTPUT (after every use outside a binding and every unused binding), so that a walk
from either end reaches all bindings. A binding is emitted once all of its neighbours on the side
the walk came from were visited; ties keep the order the uses appear in the function.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Any

from ...error import TVMError
from ...ir.module import IRModule
from ...ir.transform import Pass
from ..expr import Binding, DataflowBlock, Function, SeqExpr, Var
from ..functor import ExprVisitor
from ._util import map_functions


class TraversalOrder(enum.Enum):
    DEPTH_FIRST = "depth-first"
    BREADTH_FIRST = "breadth-first"


class StartingLocation(enum.Enum):
    FROM_INPUTS = "from-inputs"
    FROM_OUTPUTS = "from-outputs"


_INPUT = "<input>"  # the two end nodes; strings never collide with relax Vars
_OUTPUT = "<output>"

Edges = dict[Any, list[Any]]


class _DefUse(ExprVisitor):
    """Edges in use order: `users[v]` lists who reads v (repeats kept), `needs[v]` what v reads."""

    def __init__(self) -> None:
        self.users: Edges = {}
        self.needs: Edges = {}
        self.bound: list[Var] = []
        self.current: Any = _OUTPUT

    def edge(self, src: Any, dst: Any) -> None:
        self.users.setdefault(src, []).append(dst)
        self.needs.setdefault(dst, []).append(src)

    def visit_function(self, e: Function) -> None:
        for p in e.params:
            self.edge(_INPUT, p)
        self.visit_expr(e.body)

    def visit_binding(self, b: Binding) -> None:
        self.bound.append(b.var)
        outer, self.current = self.current, b.var
        super().visit_binding(b)
        self.current = outer

    def visit_var(self, v: Var) -> None:
        self.edge(v, self.current)


def _def_use(func: Function) -> tuple[Edges, Edges]:
    walk = _DefUse()
    walk.visit_function(func)
    users, needs = walk.users, walk.needs
    sources = [v for v in walk.bound if v not in needs]
    sinks = [v for v in walk.bound if v not in users]
    for v in sources:
        walk.edge(_INPUT, v)
    needs[_OUTPUT] = sinks + needs.get(_OUTPUT, [])
    for v in sinks:
        users.setdefault(v, []).insert(0, _OUTPUT)
    return users, needs


def _sort_block(
    block: DataflowBlock, forward: Edges, backward: Edges, start: Any, depth_first: bool
) -> list[Binding]:
    pending = {b.var: b for b in block.bindings}
    todo: deque[Any] = deque([start])
    seen: set[Any] = set()
    order: list[Binding] = []
    while todo:
        node = todo.pop() if depth_first else todo.popleft()
        if node in pending:
            order.append(pending.pop(node))
        seen.add(node)
        for nxt in forward.get(node, ()):
            if nxt not in seen and all(p in seen for p in backward[nxt]):
                todo.append(nxt)
    if pending:
        names = ", ".join(v.name_hint for v in pending)
        raise TVMError(
            f"TopologicalSort: bindings {names} were not reached from the function's "
            f"{'inputs' if start is _INPUT else 'outputs'}; is the block's def-use graph cyclic?"
        )
    return order


def topological_sort_function(
    func: Function, order: TraversalOrder, start: StartingLocation
) -> Function:
    """`func` with each top-level dataflow block's bindings in the walk's order."""
    if not isinstance(func.body, SeqExpr):
        return func
    users, needs = _def_use(func)
    depth_first = order is TraversalOrder.DEPTH_FIRST
    if depth_first:
        users = {k: v[::-1] for k, v in users.items()}
    from_inputs = start is StartingLocation.FROM_INPUTS
    forward, backward = (users, needs) if from_inputs else (needs, users)
    blocks = []
    for block in func.body.blocks:
        if isinstance(block, DataflowBlock):
            bindings = _sort_block(
                block, forward, backward, _INPUT if from_inputs else _OUTPUT, depth_first
            )
            if not from_inputs:
                bindings.reverse()
            if any(a is not b for a, b in zip(bindings, block.bindings)):
                block = block.replace(bindings=tuple(bindings))
        blocks.append(block)
    if all(a is b for a, b in zip(blocks, func.body.blocks)):
        return func
    return func.replace(body=func.body.replace(blocks=tuple(blocks)))


def _parse(kind: type[enum.Enum], text: str, what: str) -> Any:
    try:
        return kind(text)
    except ValueError as err:
        allowed = " or ".join(f'"{k.value}"' for k in kind)
        raise TVMError(
            f'TopologicalSort: invalid {what} "{text}"; allowed values are {allowed}'
        ) from err


def topological_sort(
    mod: IRModule, order: str = "depth-first", direction: str = "from-inputs"
) -> IRModule:
    """Every relax function of `mod` with its dataflow blocks topologically sorted."""
    walk = _parse(TraversalOrder, order, "traversal order")
    start = _parse(StartingLocation, direction, "starting location")
    return map_functions(mod, lambda f: topological_sort_function(f, walk, start))


def TopologicalSort(order: str = "depth-first", direction: str = "from-inputs") -> Pass:
    """Sort dataflow bindings: order "depth-first"/"breadth-first", direction
    "from-inputs"/"from-outputs"; e.g. TopologicalSort("depth-first", "from-outputs")."""
    _parse(TraversalOrder, order, "traversal order")  # a bad argument is reported here
    _parse(StartingLocation, direction, "starting location")
    return Pass(lambda mod: topological_sort(mod, order, direction), "TopologicalSort")
