"""`tvm.ir.diagnostics`: where TVMScript parse errors are reported. By default an error is
raised with its file:line:col text; `override_renderer(fn)` also hands each error, as a
`Diagnostic` with a `Span`, to `fn` first (tools and tests collect them this way)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from ..error import ArgumentError


class DiagnosticLevel(enum.IntEnum):
    BUG = 10
    ERROR = 20
    WARNING = 30
    NOTE = 40
    HELP = 50


class Span:
    """A source location: file name, 1-based line and column, and where it ends."""

    def __init__(self, source_name: Any, line: int, column: int, end_line: int, end_column: int):
        self.source_name = source_name
        self.line, self.column = int(line), int(column)
        self.end_line, self.end_column = int(end_line), int(end_column)

    def __repr__(self) -> str:
        return f"Span({self.source_name!s}:{self.line}:{self.column})"


class Diagnostic:
    """One message at one place."""

    def __init__(self, level: DiagnosticLevel, span: Span, message: str):
        self.level, self.span, self.message = DiagnosticLevel(level), span, str(message)

    def __repr__(self) -> str:
        return f"Diagnostic({self.level.name}, {self.span!r}, {self.message!r})"


class DiagnosticContext:
    """The diagnostics reported by one parse, handed to the renderer."""

    def __init__(self, module: Any = None, renderer: Any = None):
        self.module = module
        self.renderer = renderer
        self.diagnostics: list[Diagnostic] = []

    def emit(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def render(self) -> None:
        if self.renderer is not None:
            self.renderer.render(self)


class DiagnosticRenderer:
    """Wraps a callable taking a DiagnosticContext."""

    def __init__(self, render_func: Callable[[DiagnosticContext], None]):
        if not callable(render_func):
            raise ArgumentError(f"DiagnosticRenderer: expected a callable, got {render_func!r}")
        self.render_func = render_func

    def render(self, ctx: DiagnosticContext) -> None:
        self.render_func(ctx)


# The one override slot (None: errors are only raised, with their text).
_renderer: list[DiagnosticRenderer | None] = [None]


def override_renderer(render_func: Callable[[DiagnosticContext], None] | None) -> None:
    """Send every later parse error to `render_func(ctx)` (ctx.diagnostics lists them) before it
    is raised; `None` restores the default."""
    _renderer[0] = None if render_func is None else DiagnosticRenderer(render_func)


def get_renderer() -> DiagnosticRenderer | None:
    """The renderer set by `override_renderer`, or None."""
    return _renderer[0]


def report_error(message: str, filename: str, line: int, column: int) -> None:
    """Hand one error to the overriding renderer, if any (the caller still raises it)."""
    renderer = _renderer[0]
    if renderer is None:
        return
    ctx = DiagnosticContext(renderer=renderer)
    ctx.emit(Diagnostic(DiagnosticLevel.ERROR, Span(filename, line, column, line, column), message))
    ctx.render()


__all__ = [
    "Diagnostic",
    "DiagnosticContext",
    "DiagnosticLevel",
    "DiagnosticRenderer",
    "Span",
    "get_renderer",
    "override_renderer",
    "report_error",
]
