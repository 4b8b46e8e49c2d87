"""`tvm.script.parser.core.evaluator.ExprEvaluator`: evaluates a Python expression AST against
a table of values, with TVMScript's rules (no eval; 9**9**9 and private attributes refused)."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Mapping
from typing import Any

from ....error import MiniTVMError
from ... import bounded
from ...parser_expr import _ExprEvaluator
from ...source import TVMScriptError
from .diagnostics import Source


class ExprEvaluator:
    """`ExprEvaluator.eval(parser, value_table, node)`: the value of expression `node`, its
    names looked up in `value_table` (then Python's harmless builtins)."""

    @staticmethod
    def eval(parser: Any, value_table: Mapping[str, Any], node: ast.AST) -> Any:
        return _TableEvaluator(parser, value_table).eval(node)


class _TableEvaluator(_ExprEvaluator):
    def __init__(self, parser: Any, value_table: Mapping[str, Any]) -> None:
        self.parser, self.value_table = parser, dict(value_table)

    def with_names(self, names: dict[str, Any], fn: Callable[[], Any]) -> Any:
        outer = self.value_table
        self.value_table = {**outer, **names}
        try:
            return fn()
        finally:
            self.value_table = outer

    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.value_table:
            return self.value_table[name]
        if name in bounded.BUILTIN_NAMES:
            return getattr(builtins, name)
        raise self.error(node, f"Undefined variable: {name}")

    def error(self, node: ast.AST | None, message: str) -> TVMScriptError:
        source = getattr(self.parser, "source", None)
        if hasattr(source, "error"):
            return source.error(node, message)
        return Source(ast.unparse(node) if node is not None else "").report_error(None, message)

    def guard(self, node: ast.AST, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except TVMScriptError:
            raise
        except (MiniTVMError, TypeError, ValueError, KeyError, IndexError) as err:
            raise self.error(node, str(err)) from err
