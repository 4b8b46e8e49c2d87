"""`tvm.script.ir_builder.base`: IRBuilder, the context that frames (`with I.ir_module():`,
`with T.prim_func():`) build IR into, and IRBuilderFrame, the base of those frames.

    with IRBuilder() as ib:
        with I.ir_module():
            ...
    mod = ib.get()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ...error import TVMError


class IRBuilderError(TVMError, ValueError):
    """IRBuilder used out of order: no builder in scope, or its result asked before it exists."""


_STATE = threading.local()  # per thread: the stack of IRBuilders in scope


def _builders() -> list[IRBuilder]:
    if not hasattr(_STATE, "stack"):
        _STATE.stack = []
    return _STATE.stack


class IRBuilderFrame:
    """A scope of the builder: entering pushes it on the current IRBuilder's frames; leaving
    pops it and runs its exit callbacks (which hand what it built to the frame below)."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []

    def __enter__(self) -> IRBuilderFrame:
        IRBuilder.current()._frames.append(self)
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, trace: Any) -> None:
        builder = IRBuilder.current()
        if not builder._frames or builder._frames[-1] is not self:
            raise IRBuilderError(
                f"{type(self).__name__} is left, but it is not the innermost frame"
            )
        builder._frames.pop()
        if exc_type is None:  # an error inside the scope: leave without building
            self.exit()
            for callback in self._callbacks:
                callback()

    def exit(self) -> None:
        """What leaving the frame builds (subclasses)."""

    def add_callback(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)


class IRBuilder:
    """The builder in scope of `with IRBuilder() as ib:`; `ib.get()` is what its outermost
    frame built."""

    def __init__(self) -> None:
        self._frames: list[IRBuilderFrame] = []
        self._result: Any = None
        self._has_result = False

    def __enter__(self) -> IRBuilder:
        _builders().append(self)
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, trace: Any) -> None:
        stack = _builders()
        if stack and stack[-1] is self:
            stack.pop()

    @staticmethod
    def current() -> IRBuilder:
        """The innermost IRBuilder in scope (ValueError when there is none)."""
        stack = _builders()
        if not stack:
            raise IRBuilderError(
                "no IRBuilder in the current scope; build IR inside `with IRBuilder() as ib:`"
            )
        return stack[-1]

    @staticmethod
    def is_in_scope() -> bool:
        return bool(_builders())

    def get(self) -> Any:
        """The IR the outermost frame built."""
        if not self._has_result:
            raise IRBuilderError(
                "IRBuilder.get(): nothing has been built yet (leave the frame first)"
            )
        return self._result

    def set_result(self, value: Any) -> None:
        """Record what the outermost frame built (frames call this when they are left)."""
        self._result, self._has_result = value, True

    def find_frame(self, kind: type) -> IRBuilderFrame | None:
        """The innermost open frame of class `kind`."""
        for frame in reversed(self._frames):
            if isinstance(frame, kind):
                return frame
        return None


__all__ = ["IRBuilder", "IRBuilderError", "IRBuilderFrame"]
