"""`tvm.script.parser.core.diagnostics.Source`: TVMScript text, or the definition of a Python
function or class, with where it came from and its AST."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

from ...source import TVMScriptError


class Source:
    """The source of `program` (a string of code, or a function or class): `source_name`,
    `start_line`, `start_column`, `source` (the definition's text), `full_source` (its file's),
    and `as_ast()` with line numbers and columns of the original file."""

    def __init__(self, program: str | Any) -> None:
        if isinstance(program, str):
            self.source_name, self.start_line, self.start_column = "<str>", 1, 0
            self.source = self.full_source = program
            return
        self.source_name = inspect.getsourcefile(program)
        lines, self.start_line = inspect.getsourcelines(program)
        self.start_line = max(self.start_line, 1)
        self.start_column = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.source = "".join(lines)
        module = inspect.getmodule(program)
        self.full_source = inspect.getsource(module) if module is not None else self.source

    def as_ast(self) -> ast.Module:
        """The parsed source, its nodes placed at their lines and columns in the full file."""
        tree = ast.parse(textwrap.dedent(self.source), self.source_name)
        for node in ast.walk(tree):
            if hasattr(node, "lineno"):
                node.lineno += self.start_line - 1
                node.end_lineno = (node.end_lineno or node.lineno) + self.start_line - 1
                node.col_offset += self.start_column
                if node.end_col_offset is not None:
                    node.end_col_offset += self.start_column
        return tree

    def report_error(self, node: ast.AST | None, message: str) -> TVMScriptError:
        """The error for `message` at `node`, showing its line of the full source."""
        lines = self.full_source.splitlines()
        lineno = getattr(node, "lineno", 1) or 1
        col = getattr(node, "col_offset", 0) or 0
        text = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        return TVMScriptError(message, self.source_name, lineno, col, text)
