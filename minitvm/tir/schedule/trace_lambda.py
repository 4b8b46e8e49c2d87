"""Index-map functions in traces: printed as `lambda i, j: (...)`, read back without eval.

A primitive such as transform_layout takes a Python function (or an IndexMap). The trace
keeps the object for in-process replay; to print or serialise it, the function is called on
symbolic variables named after its parameters and the result printed as a lambda. Reading a
lambda back builds a `TraceLambda`: a callable that evaluates the lambda's body — arithmetic,
comparisons, `T.<intrinsic>(...)` from a fixed list and IndexMap.AXIS_SEPARATOR — on the
arguments it is given. Nothing else is allowed, and nothing is passed to eval.
"""

from __future__ import annotations

import ast
import inspect
import operator
import types
from collections.abc import Callable
from typing import Any

from ...error import ScheduleError
from ..expr import PrimExpr, Var

_BINOPS: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Div: operator.truediv,
}
_COMPARES: dict[type, Callable] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_INTRINSICS = frozenset(
    [
        "min",
        "max",
        "if_then_else",
        "Cast",
        "cast",
        "floordiv",
        "floormod",
        "truncdiv",
        "truncmod",
        "Select",
        "likely",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "bool",
    ]
)


def _intrinsic(name: str) -> Callable:
    """The tir-level function behind `T.<name>` in a lambda's text (no script import: tir sits
    below the script stage)."""
    from .. import op
    from ..expr import Cast, Select

    special = {
        "Cast": lambda dtype, value: Cast(dtype, value),
        "cast": lambda value, dtype: Cast(dtype, value),
        "Select": lambda c, t, f: Select(c, t, f),
    }
    if name in special:
        return special[name]
    if name in _DTYPE_NAMES:
        return lambda value: op.const(value, name)
    return getattr(op, name)


_DTYPE_NAMES = frozenset(
    ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    + ("float16", "float32", "float64", "bool")
)


def _separator() -> Any:
    from ..index_map import IndexMap

    return IndexMap.AXIS_SEPARATOR


class TraceLambda:
    """A callable read from a printed lambda; its body is evaluated by a restricted walker."""

    def __init__(self, node: ast.Lambda, source: str) -> None:
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            raise ScheduleError(f"trace lambda {source!r}: only plain parameters are allowed")
        self.params = [a.arg for a in args.args]
        self.body = node.body
        self.source = source
        self._check(self.body)
        # from_func inspects the signature for parameter names
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in self.params]
        )

    @staticmethod
    def parse(source: str) -> TraceLambda:
        try:
            node = ast.parse(source, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            # ValueError: a NUL byte; RecursionError / MemoryError: nesting past the parser's
            raise ScheduleError(
                f"trace lambda {source[:80]!r} does not parse: {type(err).__name__}: {err}"
            ) from err
        if not isinstance(node, ast.Lambda):
            raise ScheduleError(f"trace value {source!r} is not a lambda")
        return TraceLambda(node, source)

    def _check(self, node: ast.AST) -> None:
        """Reject anything outside the grammar up front (so a bad JSON fails on load)."""
        self._eval(node, {p: 0 for p in self.params}, dry=True)

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.params):
            raise ScheduleError(
                f"trace lambda {self.source!r} takes {len(self.params)} indices, got {len(args)}"
            )
        return self._eval(self.body, dict(zip(self.params, args)), dry=False)

    def _eval(self, node: ast.AST, env: dict, dry: bool) -> Any:
        ev = lambda n: self._eval(n, env, dry)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool):
            return node.value
        if isinstance(node, ast.Name) and node.id in env:
            return env[node.id]
        if isinstance(node, ast.Tuple | ast.List):
            return [ev(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return 0 if dry else -ev(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(a, str | list) or isinstance(b, str | list):
                # index arithmetic is on numbers: "x" * 10**11 would be a 100 GB string
                raise ScheduleError(
                    f"trace lambda {self.source[:80]!r}: {ast.unparse(node)[:80]!r} applies "
                    "arithmetic to a string or a list; index expressions compute numbers"
                )
            return 0 if dry else _BINOPS[type(node.op)](a, b)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARES:
            a, b = ev(node.left), ev(node.comparators[0])
            return 0 if dry else _COMPARES[type(node.ops[0])](a, b)
        if isinstance(node, ast.BoolOp):
            values = [ev(v) for v in node.values]
            if dry:
                return 0
            from ..expr import And, Or, binary

            op = And if isinstance(node.op, ast.And) else Or
            out = values[0]
            for v in values[1:]:
                out = binary(op, out, v)
            return out
        if _is_separator(node):
            return 0 if dry else _separator()
        if _is_intrinsic_call(node):
            args = [ev(a) for a in node.args]
            kwargs = {
                k.arg: ev(k.value) if not _is_str(k.value) else k.value.value for k in node.keywords
            }
            args = [a.value if _is_str(a) else v for a, v in zip(node.args, args)]
            if dry:
                return 0
            try:
                return _intrinsic(node.func.attr)(*args, **kwargs)
            except (TypeError, ValueError) as err:
                raise ScheduleError(f"trace lambda {self.source!r}: {err}") from err
        if _is_str(node):
            return node.value
        raise ScheduleError(
            f"trace lambda {self.source!r}: {ast.unparse(node)!r} is outside the index "
            "expression grammar (arithmetic, comparisons, T.<intrinsic>(...))"
        )

    def __repr__(self) -> str:
        return self.source


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_separator(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "AXIS_SEPARATOR"
        and isinstance(node.value, ast.Name)
        and node.value.id in ("IndexMap", "T")
    )


def _is_intrinsic_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "T"
        and node.func.attr in _INTRINSICS
    )


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        inner = ", ".join(_text(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    return str(value)


def lambda_source(fn: Any) -> str:
    """`lambda a, b: (...)` for a mapping function or an IndexMap."""
    from ..index_map import IndexMap

    if isinstance(fn, IndexMap):
        names = [v.name for v in fn.initial_indices]
        return f"lambda {', '.join(names)}: {_text(list(fn.final_indices))}"
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError) as err:
        raise ScheduleError(f"trace: cannot read the parameters of {fn!r}") from err
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise ScheduleError(
            f"trace: the index map function {fn!r} takes *args/**kwargs; a trace can print "
            "only functions with plain parameters (or pass an IndexMap)"
        )
    args = [Var(p.name, "int32") for p in params]
    return f"lambda {', '.join(p.name for p in params)}: {_text(fn(*args))}"


def is_index_function(value: Any) -> bool:
    from ..index_map import IndexMap

    return isinstance(value, types.FunctionType | TraceLambda | IndexMap)


__all__ = ["PrimExpr", "TraceLambda", "is_index_function", "lambda_source"]
