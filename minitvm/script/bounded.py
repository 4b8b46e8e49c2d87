"""The Python arithmetic a TVMScript text asks of its parser, with bounds on what it may cost.

Outside `T.*` calls, a script's Python values (shapes, constants, strings, lists) are computed
while it is parsed. Text from someone else (a tuning database's workload) could ask for
`9**9**9` (a number of 370 million digits, minutes of CPU) or `"x" * 10**11` (100 GB). Every
such operation is checked against the bounds below *before* it runs, and refused with a
ParseError that the parser reports at the expression's file:line.
"""

from __future__ import annotations

import ast
import builtins
import operator
from collections.abc import Callable
from typing import Any

from ..error import ParseError

# A Python integer between IR constants may need a few more bits than the IR's 64 (2**64 - 1,
# the product of two int64); IR constants themselves are checked against their dtype.
MAX_INT_BITS = 128
# Elements of a computed string, list, tuple or dict, nested elements counted.
MAX_ITEMS = 1 << 20
# round(x, -n) computes 10**n
MAX_ROUND_DIGITS = 38

BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}

# Python builtins a script may call (parsing text must not reach eval, open, __import__, ...)
BUILTIN_NAMES = frozenset(
    {"int", "float", "bool", "str", "len", "min", "max", "abs", "tuple", "list", "dict", "zip"}
    | {"enumerate", "sum", "round", "divmod", "True", "False", "None"}
)
_CALLABLE_BUILTINS = frozenset(
    id(getattr(builtins, n)) for n in BUILTIN_NAMES if n not in ("True", "False", "None")
)


def binop(op: type, a: Any, b: Any) -> Any:
    """`a <op> b` on Python values, refused before it runs when the result would be too big."""
    _check_cost(op, a, b)
    try:
        result = BINOPS[op](a, b)
    except ArithmeticError as err:  # 1 // 0, 10.0 ** 400
        raise ParseError(f"{type(err).__name__}: {err}") from err
    return check_value(result)


def is_python_builtin(fn: Any) -> bool:
    return id(fn) in _CALLABLE_BUILTINS


def call_builtin(fn: Callable, args: list, kwargs: dict) -> Any:
    """A call of one of BUILTIN_NAMES, with the same bounds as the operators."""
    ndigits = args[1] if len(args) > 1 else kwargs.get("ndigits")
    if fn is builtins.round and isinstance(ndigits, int) and ndigits < -MAX_ROUND_DIGITS:
        raise ParseError(
            f"round(x, {_short(ndigits)}): ndigits below -{MAX_ROUND_DIGITS} rounds past any "
            "TIR number"
        )
    if fn is builtins.sum and (len(args) > 1 or "start" in kwargs):
        start = args[1] if len(args) > 1 else kwargs["start"]
        if not isinstance(start, int | float):
            raise ParseError("sum() in TVMScript adds numbers; give a numeric start")
    try:
        result = fn(*args, **kwargs)
    except ArithmeticError as err:  # divmod(1, 0), float(10**400)
        raise ParseError(f"{type(err).__name__}: {err}") from err
    return check_value(result)


def check_value(value: Any) -> Any:
    """`value`, when within MAX_INT_BITS and MAX_ITEMS; else a ParseError."""
    if isinstance(value, int):
        _check_bits(value.bit_length())
    elif isinstance(value, str | bytes | list | tuple | dict):
        _check_items(_size(value))
    return value


def _check_cost(op: type, a: Any, b: Any) -> None:
    """Estimate the size of `a <op> b` from its operands where computing it could explode."""
    if op is ast.Mod and isinstance(a, str | bytes):
        raise ParseError('string formatting with % is not TVMScript ("%099999999d" % 1 ...)')
    if op is ast.Pow and _is_int(a) and _is_int(b) and b > 0 and abs(a) > 1:
        # |a| ** b has about bit_length(a) * b bits; b itself may be huge, so compare first
        if b > MAX_INT_BITS or (abs(a).bit_length() - 1) * b > MAX_INT_BITS:
            _check_bits(MAX_INT_BITS + 1, f"{_short(a)} ** {_short(b)}")
    elif op is ast.LShift and _is_int(a) and _is_int(b) and a != 0 and b > 0:
        if b > MAX_INT_BITS or a.bit_length() + b > MAX_INT_BITS:
            _check_bits(MAX_INT_BITS + 1, f"{_short(a)} << {_short(b)}")
    elif op is ast.Mult:
        seq, n = (a, b) if _is_int(b) else (b, a)
        big = _is_int(n) and n > 0 and (n > MAX_ITEMS or _size(seq) * n > MAX_ITEMS)
        if _is_sequence(seq) and big:
            _check_items(MAX_ITEMS + 1, f"a {type(seq).__name__} repeated {_short(n)} times")


def _is_int(x: Any) -> bool:
    return isinstance(x, int)  # bool included: True << 10**9 is as big


def _is_sequence(x: Any) -> bool:
    return isinstance(x, str | bytes | list | tuple)


def _size(value: Any, budget: int = MAX_ITEMS + 1) -> int:
    """Elements of `value`, nested ones counted; stops counting past `budget`."""
    if isinstance(value, str | bytes):
        return len(value)
    if not isinstance(value, list | tuple | dict):
        return 1
    total = len(value)
    items = value.values() if isinstance(value, dict) else value
    for item in items:
        if total > budget:
            break
        if isinstance(item, list | tuple | dict | str | bytes):
            total += _size(item, budget - total)
    return total


def _check_bits(bits: int, what: str = "an integer") -> None:
    if bits > MAX_INT_BITS:
        raise ParseError(
            f"{what} would have more than {MAX_INT_BITS} bits; TVMScript constants are TIR "
            "integers (at most 64-bit), so the script is refused rather than computed"
        )


def _check_items(count: int, what: str = "a computed value") -> None:
    if count > MAX_ITEMS:
        raise ParseError(
            f"{what} would have more than {MAX_ITEMS} elements or characters; the script is "
            "refused rather than computed"
        )


def _short(x: Any) -> str:
    text = str(x) if not isinstance(x, int) or x.bit_length() < 200 else f"<{x.bit_length()}-bit>"
    return text[:40]


__all__ = ["BINOPS", "BUILTIN_NAMES", "MAX_INT_BITS", "MAX_ITEMS", "binop", "call_builtin"]
