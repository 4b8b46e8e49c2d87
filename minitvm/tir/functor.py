"""The one Visitor and the one Mutator over IR, with per-class dispatch tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..ir.node import FrozenDict, Node, field_names
from ..ir.recursion import DEEP_RECURSION_LIMIT, allows_deep_recursion, deep_recursion  # noqa: F401


def _dispatch(visitor_cls: type, node_cls: type) -> Callable | None:
    table = visitor_cls.__dict__.get("_table")
    if table is None:
        table = {}
        visitor_cls._table = table  # type: ignore[attr-defined]
    try:
        return table[node_cls]
    except KeyError:
        pass
    method = None
    for klass in node_cls.__mro__:
        method = getattr(visitor_cls, f"visit_{klass.__name__}", None)
        if method is not None:
            break
    table[node_cls] = method
    return method


class Visitor:
    """Walks IR; override `visit_<NodeClass>(self, node)` and call `self.generic_visit(node)`
    to continue into the children."""

    def visit(self, n: Any) -> None:
        if isinstance(n, Node):
            method = _dispatch(type(self), type(n))
            if method is not None:
                method(self, n)
            else:
                self.generic_visit(n)
        elif isinstance(n, tuple | list):
            for x in n:
                self.visit(x)
        elif isinstance(n, FrozenDict | dict):
            for k, v in n.items():
                self.visit(k)
                self.visit(v)

    def generic_visit(self, n: Node) -> None:
        for name in field_names(type(n)):
            value = getattr(n, name)
            if isinstance(value, Node | tuple | list | FrozenDict):
                self.visit(value)


class Mutator:
    """Rebuilds IR bottom-up; a node is rebuilt only when a child changed (memoised by identity).

    Override `visit_<NodeClass>(self, node) -> node`; call `self.generic_visit(node)` for the
    default of mutating every child.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, Any]] = {}

    def visit(self, n: Any) -> Any:
        if isinstance(n, Node):
            hit = self._memo.get(id(n))
            if hit is not None:
                return hit[1]
            method = _dispatch(type(self), type(n))
            out = method(self, n) if method is not None else self.generic_visit(n)
            self._memo[id(n)] = (n, out)  # keep n alive so its id is not reused
            return out
        if isinstance(n, tuple):
            items = [self.visit(x) for x in n]
            return n if all(a is b for a, b in zip(items, n)) else tuple(items)
        if isinstance(n, FrozenDict):
            items = [(self.visit(k), self.visit(v)) for k, v in n.items()]
            same = all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(items, n.items()))
            return n if same else FrozenDict(items)
        return n

    def generic_visit(self, n: Node) -> Node:
        changes = {}
        for name in field_names(type(n)):
            value = getattr(n, name)
            if isinstance(value, Node | tuple | FrozenDict):
                new = self.visit(value)
                if new is not value:
                    changes[name] = new
        return n.replace(**changes) if changes else n


@allows_deep_recursion
def post_order_visit(n: Any, fn: Callable[[Node], None]) -> None:
    """Call `fn` on every node under `n`, children before parents."""

    class _PostOrder(Visitor):
        def visit(self, x: Any) -> None:
            super().visit(x)
            if isinstance(x, Node):
                fn(x)

    _PostOrder().visit(n)


@allows_deep_recursion
def pre_order_visit(n: Any, fn: Callable[[Node], bool | None]) -> None:
    """Call `fn` on every node under `n`, parents first; `fn` returning False skips the children."""

    class _PreOrder(Visitor):
        def visit(self, x: Any) -> None:
            if isinstance(x, Node) and fn(x) is False:
                return
            super().visit(x)

    _PreOrder().visit(n)


class _Substitute(Mutator):
    def __init__(self, vmap: Mapping) -> None:
        super().__init__()
        self.vmap = {id(k): v for k, v in vmap.items()}
        self.keep = list(vmap)

    def visit_Var(self, v: Node) -> Any:
        return self.vmap.get(id(v), v)


@allows_deep_recursion
def substitute(n: Any, vmap: Mapping | Callable[[Any], Any]) -> Any:
    """Replace variables in `n`: `vmap` maps Var → expression (or is a function Var → expr|None)."""
    if callable(vmap) and not isinstance(vmap, Mapping):
        fn = vmap

        class _FnSubstitute(Mutator):
            def visit_Var(self, v: Node) -> Any:
                out = fn(v)
                return v if out is None else out

        return _FnSubstitute().visit(n)
    if not vmap:
        return n
    return _Substitute(vmap).visit(n)
