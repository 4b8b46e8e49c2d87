"""`tvm.script.parser.core`: the parser's source handling, expression evaluator and AST."""

from . import diagnostics, doc_core, evaluator

__all__ = ["diagnostics", "doc_core", "evaluator"]
