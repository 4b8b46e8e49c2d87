"""`relay.ScopeBuilder`: writes nested `let` and `if` expressions in statement order.

>>> sb = relay.ScopeBuilder()
>>> with sb.if_scope(cond):
...     sb.ret(sb.let("t", relay.add(x, one)))
>>> with sb.else_scope():
...     sb.ret(y)
>>> body = sb.get()   # if (%cond) { let %t = add(%x, 1f); %t } else { %y }
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..error import TVMError
from .expr import Expr, If, Let, Var, var


class ScopeError(TVMError):
    """A ScopeBuilder used out of order (ret twice, else without if, get inside a scope)."""


@dataclass
class _Scope:
    bindings: list = field(default_factory=list)
    ret: Any = None
    then: tuple | None = None  # (cond, true branch) of an if_scope awaiting its else_scope

    def expr(self, where: str) -> Expr:
        """The scope's lets around its result."""
        if self.then is not None:
            raise ScopeError(f"{where}: an if_scope has no else_scope; add `with sb.else_scope():`")
        if self.ret is None:
            raise ScopeError(f"{where}: no sb.ret(value) was called in this scope")
        out = self.ret
        for v, value in reversed(self.bindings):
            out = Let(v, value, out)
        return out


class ScopeBuilder:
    """Builds `let` chains with `if` / `else` scopes; `get()` gives the whole expression."""

    def __init__(self) -> None:
        self._scopes = [_Scope()]

    def let(self, name: Any, value: Expr) -> Var:
        """Bind `value` to a new variable (a name, a (name, type) pair or a Var) and return it."""
        if isinstance(name, tuple | list):
            if len(name) > 2:
                raise ScopeError(f"ScopeBuilder.let: give (name, type), got {name!r}")
            name = var(*name)
        elif isinstance(name, str):
            name = var(name)
        self._scopes[-1].bindings.append((name, value))
        return name

    def ret(self, value: Expr) -> None:
        """Set the result of the current scope."""
        scope = self._scopes[-1]
        if scope.ret is not None or scope.then is not None:
            raise ScopeError("ScopeBuilder.ret: this scope's result is already set")
        scope.ret = value

    @contextlib.contextmanager
    def if_scope(self, cond: Expr) -> Iterator[None]:
        """The true branch of `if (cond)`; an else_scope must follow."""
        self._scopes.append(_Scope())
        yield
        branch = self._scopes.pop().expr("ScopeBuilder.if_scope")
        outer = self._scopes[-1]
        if outer.ret is not None or outer.then is not None:
            raise ScopeError("ScopeBuilder.if_scope: the enclosing scope's result is already set")
        outer.then = (cond, branch)

    @contextlib.contextmanager
    def else_scope(self) -> Iterator[None]:
        """The false branch of the if_scope just closed; the if becomes the scope's result."""
        if self._scopes[-1].then is None:
            raise ScopeError("ScopeBuilder.else_scope: it must follow an if_scope")
        self._scopes.append(_Scope())
        yield
        branch = self._scopes.pop().expr("ScopeBuilder.else_scope")
        outer = self._scopes[-1]
        (cond, then), outer.then = outer.then, None
        outer.ret = If(cond, then, branch)

    def type_of(self, expr: Expr) -> Any:
        """The type annotation of a variable (other expressions: infer the type instead)."""
        if isinstance(expr, Var):
            return expr.type_annotation
        raise ScopeError("ScopeBuilder.type_of: only variables; use relay.transform.InferTypeLocal")

    def get(self) -> Expr:
        """The built expression (every scope closed, ret called)."""
        if len(self._scopes) != 1:
            raise ScopeError("ScopeBuilder.get: called inside an if/else scope")
        return self._scopes[0].expr("ScopeBuilder.get")
