"""`T.macro`: a Python function written in TVMScript whose body is pasted, with its arguments
bound, wherever a `@T.prim_func` calls it (TVM's TIR macros).

A hygienic macro (the default) resolves its other names where it was defined; a non-hygienic
one resolves them at the call, so it can use the caller's loop variables.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections import ChainMap
from collections.abc import Callable
from typing import Any

from ..error import TVMError
from .source import capture_env, source_of


class MacroError(TVMError, ValueError):
    """`T.macro` was used the wrong way (TVM raises a ValueError)."""


class TIRMacro:
    """What `@T.macro` returns: the function, the names visible where it was defined, and
    whether it is hygienic. Calling it outside a TVMScript function is an error."""

    def __init__(self, func: Callable, env: Any, hygienic: bool, bound_self: Any = None):
        self.func, self.env, self.hygienic, self.bound_self = func, env, hygienic, bound_self
        self.__name__ = func.__name__
        self._source = None

    def source(self) -> Any:
        if self._source is None:
            self._source = source_of(self.func, ast.FunctionDef)
        return self._source

    def __get__(self, obj: Any, objtype: Any = None) -> TIRMacro:
        # a macro defined in a class: `o.load(A)` binds `self` as a method call would
        if obj is None:
            return self
        return TIRMacro(self.func, self.env, self.hygienic, bound_self=obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise MacroError(
            f"T.macro '{self.__name__}' can only be called inside a @T.prim_func, where its "
            "body is pasted in"
        )


def macro(*args: Any, hygienic: bool = True) -> Any:
    """`@T.macro` or `@T.macro(hygienic=False)`.

    >>> @T.macro
    ... def copy(dst, src, i):
    ...     dst[i] = src[i]
    """
    env = capture_env(sys._getframe(1))

    def decorate(func: Callable) -> TIRMacro:
        return TIRMacro(func, env, bool(hygienic))

    if len(args) == 1 and callable(args[0]):
        return decorate(args[0])
    if args:
        raise MacroError(
            f"T.macro takes only the keyword argument hygienic=..., got {args!r}; "
            "write @T.macro or @T.macro(hygienic=False)"
        )
    return decorate


def expand_macro(parser: Any, call: ast.Call, mac: TIRMacro) -> Any:
    """The statements of `mac`'s body with the call's arguments bound, parsed in place."""
    args: list[Any] = [] if mac.bound_self is None else [mac.bound_self]
    kwargs: dict[str, Any] = {}
    for a in call.args:
        if isinstance(a, ast.Starred):
            args.extend(parser.eval(a.value))
        else:
            args.append(parser.eval(a))
    for kw in call.keywords:
        if kw.arg is None:
            kwargs.update(parser.eval(kw.value))
        else:
            kwargs[kw.arg] = parser.eval(kw.value)
    try:
        bound = inspect.signature(mac.func).bind(*args, **kwargs)
    except TypeError as err:
        raise parser.error(call, f"calling T.macro '{mac.__name__}': {err}") from err
    bound.apply_defaults()
    saved = parser.source, parser.env, parser.scopes
    parser.source = mac.source()
    if mac.hygienic:
        parser.env = ChainMap(dict(mac.env), parser.env)
        parser.scopes = [dict(bound.arguments)]
    else:
        parser.scopes = [*parser.scopes, dict(bound.arguments)]
    try:
        return parser.body(parser.source.node.body)
    finally:
        parser.source, parser.env, parser.scopes = saved


__all__ = ["MacroError", "TIRMacro", "expand_macro", "macro"]
