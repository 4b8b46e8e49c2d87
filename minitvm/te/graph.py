"""Graph queries of TE programs that TVM exposes under `te.schedule`: the read graph, a
post-order of operations, and the body of a scan."""

from __future__ import annotations

from typing import Any

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
    order: list = []
    seen: set[int] = set()
    for root in _ops(roots):
        stack = [(root, False)]
        while stack:
            op, done = stack.pop()
            if done:
                order.append(op)
                continue
            if id(op) in seen:
                continue
            seen.add(id(op))
            stack.append((op, True))
            stack.extend((t.op, False) for t in reversed(read_graph.get(op, [])))
    return order


def ScanGetBody(scan_op: Any) -> list:
    """The scan operation and the operations it runs at every step (its update stages)."""
    return [*scan_op.body_ops(), scan_op]
