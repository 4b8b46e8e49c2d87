"""The one Visitor and the one Mutator over IR, with per-class dispatch tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..ir.node import FrozenDict, Node, field_names
from ..ir.recursion import DEEP_RECURSION_LIMIT, allows_deep_recursion, deep_recursion  # noqa: F401

# What a walker does with a value, by its type. Cached per type: isinstance against FrozenDict
# (a Mapping, so an ABC) cost a third of every walk when asked of each field.
_NODE, _TUPLE, _LIST, _FROZENDICT, _DICT, _LEAF = range(6)


class _KindTable(dict):
    """type -> the walker kind of its values, worked out on a type's first lookup."""

    def __missing__(self, t: type) -> int:
        kinds = ((Node, _NODE), (tuple, _TUPLE), (list, _LIST), (FrozenDict, _FROZENDICT))
        k = next(
            (k for base, k in kinds if issubclass(t, base)), _DICT if issubclass(t, dict) else _LEAF
        )
        self[t] = k
        return k


_KINDS = _KindTable()


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
        t = type(n)
        k = _KINDS[t]
        if k == _NODE:
            method = _dispatch(type(self), t)
            if method is not None:
                method(self, n)
            else:
                self.generic_visit(n)
        elif k == _TUPLE or k == _LIST:
            for x in n:
                self.visit(x)
        elif k == _FROZENDICT or k == _DICT:
            for key, v in n.items():
                self.visit(key)
                self.visit(v)

    def generic_visit(self, n: Node) -> None:
        visit = self.visit
        for name in field_names(type(n)):
            value = getattr(n, name)
            if _KINDS[type(value)] < _DICT:  # nodes, tuples, lists and FrozenDicts hold children
                visit(value)


class Mutator:
    """Rebuilds IR bottom-up; a node is rebuilt only when a child changed (memoised by identity).

    Override `visit_<NodeClass>(self, node) -> node`; call `self.generic_visit(node)` for the
    default of mutating every child.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, Any]] = {}

    def visit(self, n: Any) -> Any:
        t = type(n)
        k = _KINDS[t]
        if k == _NODE:
            hit = self._memo.get(id(n))
            if hit is not None:
                return hit[1]
            method = _dispatch(type(self), t)
            out = method(self, n) if method is not None else self.generic_visit(n)
            self._memo[id(n)] = (n, out)  # keep n alive so its id is not reused
            return out
        if k == _TUPLE:
            items = [self.visit(x) for x in n]
            return n if all(a is b for a, b in zip(items, n)) else tuple(items)
        if k == _FROZENDICT:
            items = [(self.visit(key), self.visit(v)) for key, v in n.items()]
            same = all(k2 is k1 and v2 is v1 for (k2, v2), (k1, v1) in zip(items, n.items()))
            return n if same else FrozenDict(items)
        return n

    def generic_visit(self, n: Node) -> Node:
        changes = {}
        visit = self.visit
        for name in field_names(type(n)):
            value = getattr(n, name)
            k = _KINDS[type(value)]
            if k == _NODE or k == _TUPLE or k == _FROZENDICT:
                new = visit(value)
                if new is not value:
                    changes[name] = new
        return n.replace(**changes) if changes else n


class _PostOrder(Visitor):
    """Calls `fn` after a node's children; one class for every call so its table stays warm."""

    def __init__(self, fn: Callable[[Node], None]) -> None:
        self.fn = fn

    def visit(self, x: Any) -> None:
        super().visit(x)
        if isinstance(x, Node):
            self.fn(x)


class _PreOrder(Visitor):
    """Calls `fn` before a node's children; `fn` returning False skips them."""

    def __init__(self, fn: Callable[[Node], bool | None]) -> None:
        self.fn = fn

    def visit(self, x: Any) -> None:
        if isinstance(x, Node) and self.fn(x) is False:
            return
        super().visit(x)


@allows_deep_recursion
def post_order_visit(n: Any, fn: Callable[[Node], None]) -> None:
    """Call `fn` on every node under `n`, children before parents."""
    _PostOrder(fn).visit(n)


@allows_deep_recursion
def pre_order_visit(n: Any, fn: Callable[[Node], bool | None]) -> None:
    """Call `fn` on every node under `n`, parents first; `fn` returning False skips the children."""
    _PreOrder(fn).visit(n)


class _Substitute(Mutator):
    def __init__(self, vmap: Mapping) -> None:
        super().__init__()
        self.vmap = {id(k): v for k, v in vmap.items()}
        self.keep = list(vmap)

    def visit_Var(self, v: Node) -> Any:
        return self.vmap.get(id(v), v)


class _FnSubstitute(Mutator):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.fn = fn

    def visit_Var(self, v: Node) -> Any:
        out = self.fn(v)
        return v if out is None else out


class _MapOutermost(Mutator):
    """Replaces the outermost nodes `match` accepts by `fn(node)`; one class for every call."""

    def __init__(self, match: Callable[[Node], bool], fn: Callable[[Node], Any]) -> None:
        super().__init__()
        self.match, self.fn = match, fn

    def visit_Node(self, n: Node) -> Any:
        return self.fn(n) if self.match(n) else self.generic_visit(n)


@allows_deep_recursion
def map_outermost(n: Any, match: Callable[[Node], bool], fn: Callable[[Node], Any]) -> Any:
    """`n` with every outermost node that `match` accepts replaced by `fn(node)`; what lies
    inside a replaced node is not visited (that is `fn`'s to rewrite)."""
    return _MapOutermost(match, fn).visit(n)


@allows_deep_recursion
def substitute(n: Any, vmap: Mapping | Callable[[Any], Any]) -> Any:
    """Replace variables in `n`: `vmap` maps Var → expression (or is a function Var → expr|None)."""
    if callable(vmap) and not isinstance(vmap, Mapping):
        return _FnSubstitute(vmap).visit(n)
    if not vmap:
        return n
    return _Substitute(vmap).visit(n)
