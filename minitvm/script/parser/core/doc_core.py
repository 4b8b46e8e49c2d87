"""`tvm.script.parser.core.doc_core`: the Python AST the parser reads. TVM keeps a copy of
Python's node classes that is stable across Python versions; minitvm parses with `ast` itself,
so its node classes are these."""

import ast

_names = [
    n
    for n in dir(ast)
    if isinstance(getattr(ast, n), type) and issubclass(getattr(ast, n), ast.AST)
]
globals().update({n: getattr(ast, n) for n in _names})

__all__ = sorted(_names)
