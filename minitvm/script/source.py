"""Where TVMScript comes from, and how its errors point back at it.

`source_of` finds the definition of a decorated function or class in its file (or notebook
cell, via linecache) with the original line numbers and columns, so a `ParseError` reads
`file.py:12:8: error: ...` followed by the source line and a caret.
"""

from __future__ import annotations

import ast
import inspect
import linecache
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ..error import ParseError


class TVMScriptError(ParseError):
    """A ParseError whose message is `file:line:col: error: what` plus the line and a caret."""

    def __init__(self, message: str, filename: str, lineno: int, col: int, text: str):
        caret = " " * col + "^"
        full = f"{filename}:{lineno}:{col}: error: {message}\n{text.rstrip()}\n{caret}"
        super().__init__(full)
        self.msg = message
        self.filename, self.lineno, self.offset, self.text = filename, lineno, col + 1, text
        self.col = col

    def __str__(self) -> str:
        return self.args[0]


# ----------------------------------------------------------------------------- source


@dataclass
class Source:
    """The file a definition came from: its name, all its lines, and the definition's AST."""

    filename: str
    lines: list[str]
    node: ast.AST

    def error(self, node: ast.AST | None, message: str) -> TVMScriptError:
        lineno = getattr(node, "lineno", 1) or 1
        col = getattr(node, "col_offset", 0) or 0
        text = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return TVMScriptError(message, self.filename, lineno, col, text.rstrip("\n"))


def _parse_lines(lines: list[str], filename: str) -> ast.Module | None:
    try:
        return ast.parse("".join(lines), filename)
    except SyntaxError:
        return None


def _find_def(tree: ast.AST, kind: type, name: str, line: int) -> ast.AST | None:
    """The `def`/`class` called `name` whose span (decorators included) contains `line`."""
    best = None
    for n in ast.walk(tree):
        if isinstance(n, kind) and n.name == name:
            first = min([n.lineno] + [d.lineno for d in n.decorator_list])
            inside = first <= line <= (n.end_lineno or n.lineno)
            if inside and (best is None or first >= best[0]):
                best = (first, n)
    return best[1] if best else None


def source_of(obj: Any, kind: type) -> Source:
    """Find the source of a function (or, via one of its methods, a class).

    Works for files, notebook cells (IPython registers cells with linecache) and functions
    defined inside functions; line numbers and columns are those of the original file.
    """
    code = getattr(obj, "__code__", None)
    if code is None and isinstance(obj, type):
        methods = [getattr(v, "__code__", None) for v in vars(obj).values()]
        code = next((c for c in methods if c is not None), None)
    if code is not None:
        filename = code.co_filename
        lines = linecache.getlines(filename, getattr(obj, "__globals__", None))
        tree = _parse_lines(lines, filename) if lines else None
        if tree is not None:
            node = _find_def(tree, kind, obj.__name__, code.co_firstlineno)
            if node is not None:
                return Source(filename, lines, node)
    try:
        text = inspect.getsource(obj)
        first = inspect.getsourcelines(obj)[1]
        filename = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as err:
        raise ParseError(
            f"cannot find the source of {obj.__name__!r} to parse it as TVMScript; define it in a "
            "file or notebook cell, or pass the text to minitvm.script.from_source"
        ) from err
    # keep original columns: an indented definition parses inside an `if 1:` wrapper
    wrapped = text if not text[:1].isspace() else "if 1:\n" + text
    tree = ast.parse(wrapped)
    ast.increment_lineno(tree, first - 1 - (wrapped is not text))
    node = next(n for n in ast.walk(tree) if isinstance(n, kind))
    lines = [""] * (first - 1) + text.splitlines(keepends=True)
    return Source(filename, lines, node)


def capture_env(frame: FrameType | None) -> Mapping[str, Any]:
    """The Python names visible at a decoration site (locals over globals)."""
    if frame is None:
        return {}
    return ChainMap(dict(frame.f_locals), frame.f_globals)


def decorates_ir_module_class(frame: FrameType) -> bool:
    """Whether `frame` runs the body of a class that an `ir_module` decorator will parse.

    A `@T.prim_func` / `@R.function` inside such a class stays a Python function (the module
    decorator parses the whole class, cross-references included); inside any other class it
    is parsed at once, as in TVM. When the class's source cannot be read, the module case is
    assumed: the function stays unparsed rather than failing on a cross-reference.
    """
    if "__module__" not in frame.f_locals or "__qualname__" not in frame.f_locals:
        return False
    code = frame.f_code
    lines = linecache.getlines(code.co_filename, frame.f_globals)
    if not lines:
        return True
    header: list[str] = []
    for line in lines[code.co_firstlineno - 1 : code.co_firstlineno + 50]:
        stripped = line.strip()
        if stripped.startswith(("class ", "class(")):
            break
        header.append(stripped)
    else:
        return True
    decorators = " ".join(header)
    return "ir_module" in decorators or ".rewriter" in decorators  # R.rewriter parses a module
