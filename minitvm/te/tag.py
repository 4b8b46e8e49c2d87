"""`te.tag_scope`: computes made inside the scope (or the decorated function) get its tag."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Self

_current = threading.local()


def current_tag() -> str:
    """The tag of the innermost active tag_scope ("" outside any)."""
    scope = getattr(_current, "scope", None)
    return scope.tag if scope is not None else ""


class tag_scope:
    """`with te.tag_scope(tag="gemm"):` (or `@te.tag_scope(tag="conv")`) tags the computes
    made inside that do not name a tag themselves; scopes do not nest (ValueError), as in TVM."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.accept_tag = tag

    def __enter__(self) -> Self:
        if getattr(_current, "scope", None) is not None:
            raise ValueError(
                f"tag_scope '{self.tag}' opened inside tag_scope '{_current.scope.tag}'; "
                "tag scopes do not nest"
            )
        _current.scope = self
        return self

    def __exit__(self, *exc: object) -> None:
        _current.scope = None

    def __call__(self, fdecl: Callable) -> Callable:
        @functools.wraps(fdecl)
        def tagged(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fdecl(*args, **kwargs)

        return tagged
