"""What the TVMScript parser's parts share: the wrapper of a statement that scopes the rest of
its body, TIR's binary operators, and the message for unsupported syntax."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import tir
from ..tir.expr import PrimExpr, logical_and, logical_or
from ..tir.op import power, shift_left, shift_right
from ..tir.stmt import (
    Stmt,
)


@dataclass
class _Wrap:
    """A statement that scopes over the rest of its statement list (let, allocate, ...)."""

    build: Callable[[Stmt], Stmt]


# ast operator -> how to build TIR when an operand is an expression
_TIR_BINOPS: dict[type, Callable[[Any, Any], PrimExpr]] = {
    ast.Add: tir.Add,
    ast.Sub: tir.Sub,
    ast.Mult: tir.Mul,
    ast.Div: tir.Div,
    ast.FloorDiv: tir.FloorDiv,
    ast.Mod: tir.FloorMod,
    ast.Pow: power,
    ast.BitAnd: logical_and,
    ast.BitOr: logical_or,
    ast.LShift: shift_left,
    ast.RShift: shift_right,
}


_SYNTAX_NAMES: dict[type, str] = {
    ast.ListComp: "list comprehensions",
    ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.JoinedStr: "f-strings",
    ast.Set: "sets",
    ast.Try: "try",
    ast.Raise: "raise",
    ast.FunctionDef: "nested def",
    ast.ClassDef: "class",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Delete: "del",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
    ast.AsyncFunctionDef: "async def",
    ast.Match: "match",
}


def _is_expr(x: Any) -> bool:
    return isinstance(x, PrimExpr)


def _unsupported(node: ast.AST) -> str:
    what = _SYNTAX_NAMES.get(type(node), type(node).__name__)
    return f"unsupported Python syntax in TVMScript: {what}"
