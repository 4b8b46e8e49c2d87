"""A small dataflow pattern language (TVM's `relax.dpl`): wildcards, op calls and constants.

A pattern is a tree; `match_binding` matches it against a relax value, looking through the vars
bound earlier in the same dataflow block, and returns which expression each pattern node took.
Only what offloading patterns need is here: `wildcard()`, `is_op("relax.x")(*args)`,
`is_const()`; anything else is refused by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import ArgumentError, MiniTVMError
from ...ir.op import Op
from .. import expr as rx


class DFPattern:
    """Base of the pattern nodes; compared by identity, as the annotation maps key on them."""

    __slots__ = ()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def match(self, expr: rx.Expr) -> bool:
        """Whether `expr` (its own tree, no bindings followed) matches."""
        return match_expr(self, expr, {}) is not None


class WildcardPattern(DFPattern):
    """Matches any expression; the matched subgraph's inputs are its wildcards."""

    __slots__ = ()


class ConstantPattern(DFPattern):
    """Matches a `relax.Constant`."""

    __slots__ = ()


class ExprPattern(DFPattern):
    """Matches an operator by name (`is_op("relax.matmul")` builds one of these, then a call)."""

    __slots__ = ("op_name",)

    def __init__(self, op_name: str):
        self.op_name = op_name

    def __call__(self, *args: DFPattern) -> CallPattern:
        return CallPattern(self, args)


class CallPattern(DFPattern):
    """Matches a call of `op` whose arguments match `args` one by one (same count)."""

    __slots__ = ("args", "op")

    def __init__(self, op: ExprPattern, args: tuple):
        for k, a in enumerate(args):
            if not isinstance(a, DFPattern):
                raise ArgumentError(
                    f"is_op('{op.op_name}')(...): argument {k} is a {type(a).__name__}, not a "
                    "pattern; use wildcard(), is_const() or another is_op(...) call"
                )
        self.op, self.args = op, tuple(args)


def wildcard() -> WildcardPattern:
    """A pattern matching anything."""
    return WildcardPattern()


def is_const() -> ConstantPattern:
    """A pattern matching a constant tensor."""
    return ConstantPattern()


def is_op(op_name: str) -> ExprPattern:
    """The operator `op_name`; call it with argument patterns: `is_op("relax.nn.relu")(x)`."""
    try:
        Op.get(op_name)
    except MiniTVMError as e:
        raise ArgumentError(
            f"is_op('{op_name}'): no relax operator of that name; spell it as registered, "
            "e.g. 'relax.matmul' or 'relax.nn.relu'"
        ) from e
    return ExprPattern(op_name)


def match_expr(
    pat: DFPattern, expr: rx.Expr, bound: dict[rx.Var, rx.Expr]
) -> dict[DFPattern, rx.Expr] | None:
    """Pattern node -> the expression it matched, or None. A call pattern looks through a var to
    the call it is bound to in `bound`; the map then holds the var (the graph node)."""
    found: dict[DFPattern, rx.Expr] = {}
    return found if _match(pat, expr, bound, found) else None


def _match(pat: DFPattern, expr: Any, bound: dict, found: dict) -> bool:
    if pat in found:  # a pattern node used twice must take the same expression both times
        return found[pat] is expr
    rule = _RULES.get(type(pat))
    if rule is None:
        raise ArgumentError(f"pattern {type(pat).__name__} is not supported by minitvm's matcher")
    if not rule(pat, expr, bound, found):
        return False
    found[pat] = expr
    return True


def _match_call(pat: CallPattern, expr: Any, bound: dict, found: dict) -> bool:
    call = bound.get(expr, expr) if isinstance(expr, rx.Var) else expr
    if not (isinstance(call, rx.Call) and isinstance(call.op, Op)):
        return False
    if call.op.name != pat.op.op_name or len(call.args) != len(pat.args):
        return False
    return all(_match(p, a, bound, found) for p, a in zip(pat.args, call.args, strict=True))


_RULES: dict[type, Callable[..., bool]] = {
    WildcardPattern: lambda pat, expr, bound, found: True,
    ConstantPattern: lambda pat, expr, bound, found: isinstance(expr, rx.Constant),
    CallPattern: _match_call,
}

__all__ = [
    "CallPattern",
    "ConstantPattern",
    "DFPattern",
    "ExprPattern",
    "WildcardPattern",
    "is_const",
    "is_op",
    "match_expr",
    "wildcard",
]
