"""Graph queries of TE programs that TVM exposes under `te.schedule`: the read graph, a
post-order of operations, and the body of a scan."""

from __future__ import annotations

from typing import Any

from ..ir.recursion import post_order
from .tensor import Tensor


def _ops(roots: Any) -> list:
    roots = roots if isinstance(roots, list | tuple) else [roots]
    return [r.op if isinstance(r, Tensor) else r for r in roots]


def CreateReadGraph(roots: Any) -> dict:
    """Every operation feeding `roots` → the tensors it reads, in first-use order."""
    graph: dict = {}
    stack = _ops(roots)
    while stack:
        op = stack.pop()
        if op in graph:
            continue
        graph[op] = list(op.input_tensors)
        stack.extend(t.op for t in graph[op])
    return graph


def PostDFSOrder(roots: Any, read_graph: dict) -> list:
    """The operations of `read_graph` reachable from `roots`, producers before consumers."""
    return post_order(_ops(roots), lambda op: [t.op for t in read_graph.get(op, [])])


def ScanGetBody(scan_op: Any) -> list:
    """The scan operation and the operations it runs at every step (its update stages)."""
    return [*scan_op.body_ops(), scan_op]


def ScanFixPointAnalysis(scan_op: Any) -> dict:
    """For each spatial axis of a scan's outputs: 1 when step t's element i reads the states
    only at element i of the same axis (the axis may be split or parallelized across steps
    without mixing elements), else 0. Reads are followed through the scan body's stages."""
    from ..tir.expr import IntImm, Var

    axes: dict[tuple, Any] = {}
    spatial = iter(scan_op.spatial_axis_)
    for k, u in enumerate(scan_op.update):
        for d in range(1, len(u.shape)):
            axes[(k, d)] = next(spatial)
    states = {id(t.op): k for k, t in enumerate(scan_op.state_placeholder)}
    reach: dict[int, list[set]] = {}  # id(op) -> per dim, the spatial axes it stands for
    for k, u in enumerate(scan_op.update):
        dims = reach.setdefault(id(u.op), [set() for _ in u.shape])
        for d in range(1, len(u.shape)):
            dims[d].add((k, d))
    fixed = dict.fromkeys(axes, True)
    for op in reversed(scan_op.body_ops()):
        if id(op) not in reach:
            continue
        of_var = {id(iv.var): reach[id(op)][d] for d, iv in enumerate(op.axis)}
        for load in _producer_loads(op):
            target = load.producer.op
            for e, index in enumerate(load.indices):
                exact = of_var.get(id(index), set()) if isinstance(index, Var) else set()
                touched = set().union(*(of_var.get(id(v), set()) for v in _vars(index)))
                if id(target) in states:
                    own = (states[id(target)], e)
                    if own in fixed and own not in exact:
                        fixed[own] = False
                    for s in touched - {own}:
                        fixed[s] = False
                elif e > 0:
                    dims = reach.setdefault(id(target), [set() for _ in load.indices])
                    dims[e] |= exact
    return {axes[s]: IntImm("int32", int(ok)) for s, ok in fixed.items()}


def _producer_loads(op: Any) -> list:
    from ..tir.functor import post_order_visit
    from .tensor import ProducerLoad

    found: list = []
    post_order_visit(op.body, lambda n: found.append(n) if isinstance(n, ProducerLoad) else None)
    return found


def _vars(e: Any) -> list:
    from ..tir.expr import Var
    from ..tir.functor import post_order_visit

    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) else None)
    return found
