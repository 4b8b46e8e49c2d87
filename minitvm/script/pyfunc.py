"""`@I.pyfunc`: a plain Python method inside an `@I.ir_module` class (TVM 0.24's BasePyModule).

The module records such a method as an `ExternFunc` named after it, whose attributes mark it
as a Python function and keep its source text, so `mod.script()` prints the method back under
`@I.pyfunc` and the printed text parses to an equal module. The Python object itself is not
part of the IR: `relax.BasePyModule` takes it from the decorated class. Parsing never runs
the method's body.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from ..relax.printer import is_pyfunc, pyfunc_extern
from .source import Source


def pyfunc(func: Callable) -> Callable:
    """Mark a method of an `@I.ir_module` class as Python, run as written (not parsed as IR).

    Example::

        @I.ir_module
        class Module(BasePyModule):
            @I.pyfunc
            def forward(self, x):
                return x * 2
    """
    func.dispatch_token = "pyfunc"  # TVM's marker, read by code written for TVM
    return func


pyfunc.dispatch_token = "pyfunc"


def method_text(source: Source, fdef: ast.FunctionDef) -> str:
    """The method's text from `def` to its last line, less the indentation of `def`: the same
    text whether read from the user's file or from a printed module."""
    first, last = fdef.lineno, fdef.end_lineno or fdef.lineno
    lines = [line.rstrip("\n").rstrip() for line in source.lines[first - 1 : last]]
    pad = fdef.col_offset
    body = [lines[0][pad:]] + [
        line[pad:] if line[:pad].strip() == "" else line for line in lines[1:]
    ]
    return "\n".join(body)


def parse_pyfunc(source: Source, fdef: ast.FunctionDef, env: Mapping, name: str, private: bool):
    """The function parser registered for `@I.pyfunc` (see entry.register_function_parser)."""
    if not fdef.args.args or fdef.args.args[0].arg != "self":
        raise source.error(
            fdef,
            f"@I.pyfunc method '{name}' must take `self` first: BasePyModule calls it as a "
            "method of the module",
        )
    return pyfunc_extern(name, method_text(source, fdef))


__all__ = ["is_pyfunc", "pyfunc", "pyfunc_extern"]
