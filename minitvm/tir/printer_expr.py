"""TIR expressions as TVMScript text: operator precedence, names, literals, and one printer
method per expression node (`_EXPR_TABLE`); the statement printer (printer.py) builds on it."""

from __future__ import annotations

import json
import keyword
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..ir.dtype import DataType
from ..ir.structural import structural_equal
from .buffer import Buffer
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Select,
    StringImm,
    Sub,
    Var,
)
from .names import FABS, IF_THEN_ELSE
from .op import BUILTINS, builtin_dtype
from .stmt import (
    BufferRegion,
)

# Python operator precedence (higher binds tighter); atoms are 100.
_ATOM = 100


_UNARY_MINUS = 11


_BINOPS: dict[type, tuple[str, int]] = {
    Or: ("or", 1),
    And: ("and", 2),
    EQ: ("==", 4),
    NE: ("!=", 4),
    LT: ("<", 4),
    LE: ("<=", 4),
    GT: (">", 4),
    GE: (">=", 4),
    Add: ("+", 9),
    Sub: ("-", 9),
    Mul: ("*", 10),
    FloorDiv: ("//", 10),
    FloorMod: ("%", 10),
}


_CMP_PREC = 4


_NOT_PREC = 3


# binary nodes printed as calls: class -> T name (Div/Mod are `/` on floats, see _print_div).
_CALL_BINOPS: dict[type, str] = {Min: "T.min", Max: "T.max", Mod: "T.truncmod"}


# intrinsic op name -> TVMScript spelling when it differs from `T.<name>`.
_OP_SPELLING = {FABS: "T.abs"}


_RESERVED = set(keyword.kwlist) | {"T", "I", "R", "range", "print", "int", "float", "bool"}


class _Names:
    """Unique, valid Python identifiers for vars and buffers (two `i`s print as `i`, `i_1`)."""

    def __init__(self) -> None:
        self.by_id: dict[int, str] = {}
        self.used: set[str] = set(_RESERVED)
        self.keep: list[Any] = []

    def get(self, obj: Any, hint: str | None = None) -> str:
        name = self.by_id.get(id(obj))
        if name is None:
            name = self.fresh(obj, hint if hint is not None else _hint_of(obj))
        return name

    def fresh(self, obj: Any, hint: str) -> str:
        """Name a definition; one already named and still in scope keeps its name."""
        known = self.by_id.get(id(obj))
        if known is not None and known in self.used:
            return known
        base = _sanitize(hint)
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self.by_id[id(obj)] = name
        self.keep.append(obj)
        if isinstance(obj, Buffer):  # the parser reads `B.data`, `B.elem_offset` as B's own
            own = {"data": obj.data, "elem_offset": obj.elem_offset}
            own.update({f"strides[{k}]": st for k, st in enumerate(obj.strides)})
            for field, v in own.items():
                if isinstance(v, Var) and id(v) not in self.by_id:
                    self.by_id[id(v)] = f"{name}.{field}"
                    self.keep.append(v)
        return name

    def release(self, objs: Iterable[Any]) -> None:
        """Leaving a scope: sibling scopes may reuse these names (two sibling `for i` loops)."""
        for obj in objs:
            self.used.discard(self.by_id.get(id(obj)))


def _hint_of(obj: Any) -> str:
    if isinstance(obj, Buffer):
        return obj.name
    return getattr(obj, "name", "v") or "v"


def _sanitize(hint: str) -> str:
    name = re.sub(r"\W", "_", hint or "v")
    if not name or name[0].isdigit():
        name = "v" + name
    return name


def _q(s: str) -> str:
    """A double-quoted Python string literal."""
    return json.dumps(s)


def _fmt_float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return _q(str(value))  # T.float32("inf"), T.float32("nan")
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


class _ExprPrinter:
    """Prints expressions with minimal parentheses; subclassed by the statement printer."""

    def __init__(self, names: _Names | None = None) -> None:
        self.names = names or _Names()

    def expr(self, e: Any) -> str:
        return self._expr(e)[0]

    def _paren(self, e: Any, need: Callable[[int], bool]) -> str:
        text, prec = self._expr(e)
        return f"({text})" if need(prec) else text

    def _expr(self, e: Any) -> tuple[str, int]:
        if not isinstance(e, PrimExpr):
            return self._value(e), _ATOM
        for klass in type(e).__mro__:
            fn = _EXPR_TABLE.get(klass)
            if fn is not None:
                return fn(self, e)
        producer = getattr(e, "producer", None)
        if producer is not None:  # a TE tensor element (te.ProducerLoad) in an error message
            return f"{producer.name}[{self.indices(e.indices)}]", _ATOM
        return f"<{type(e).__name__}>", _ATOM

    def _value(self, v: Any) -> str:
        """A non-expression value inside IR (annotation values, dict entries, lists)."""
        if isinstance(v, IntImm):  # typed, so it does not parse back as a Python int/bool
            return f"T.{v.dtype}({v.value != 0 if v.dtype.is_bool else v.value})"
        if isinstance(v, PrimExpr):
            return self.expr(v)
        if isinstance(v, Buffer):
            return self.names.get(v)
        if isinstance(v, DataType):
            return _q(str(v))
        if isinstance(v, Mapping):
            items = ", ".join(f"{self._value(k)}: {self._value(x)}" for k, x in v.items())
            return "{" + items + "}"
        if isinstance(v, tuple):
            inner = ", ".join(self._value(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if isinstance(v, list):
            return "[" + ", ".join(self._value(x) for x in v) + "]"
        if isinstance(v, Range):
            return f"T.Range({self.expr(v.min)}, {self.expr(_range_end(v))})"
        if isinstance(v, BufferRegion):
            return self.region(v)
        if isinstance(v, IterVar):
            return self.names.get(v.var)
        if isinstance(v, str):
            return _q(v)
        from ..target import Target

        if isinstance(v, Target):  # parses back through T.target
            host = "" if v._host is None else f", host={_q(str(v._host))}"
            return f"T.target({_q(str(v))}{host})"
        return repr(v)

    # -- leaves
    def _var(self, v: Var) -> tuple[str, int]:
        return self.names.get(v), _ATOM

    def _int(self, e: IntImm) -> tuple[str, int]:
        if e.dtype.is_bool:
            return ("True" if e.value else "False"), _ATOM
        if e.dtype == "int32":
            return str(e.value), (_UNARY_MINUS if e.value < 0 else _ATOM)
        return f"T.{e.dtype}({e.value})", _ATOM

    def _float(self, e: FloatImm) -> tuple[str, int]:
        return f"T.{e.dtype}({_fmt_float(e.value)})", _ATOM

    def _string(self, e: StringImm) -> tuple[str, int]:
        return _q(e.value), _ATOM

    # -- operators
    def _binop(self, e: Any) -> tuple[str, int]:
        op, prec = _BINOPS[type(e)]
        if isinstance(e.a, IntImm) and isinstance(e.b, IntImm):
            lhs = self._value(e.a)  # typed: two bare literals would fold in Python when parsed
        elif prec == _CMP_PREC:  # comparisons chain in Python: parenthesise both sides
            lhs = self._paren(e.a, lambda p: p <= prec)
        else:
            lhs = self._paren(e.a, lambda p: p < prec)
        rhs = self._paren(e.b, lambda p: p <= prec)
        return f"{lhs} {op} {rhs}", prec

    def _div(self, e: Div) -> tuple[str, int]:
        if e.dtype.is_float:
            lhs = self._paren(e.a, lambda p: p < 10)
            rhs = self._paren(e.b, lambda p: p <= 10)
            return f"{lhs} / {rhs}", 10
        return f"T.truncdiv({self.expr(e.a)}, {self.expr(e.b)})", _ATOM

    def _call_binop(self, e: Any) -> tuple[str, int]:
        return f"{_CALL_BINOPS[type(e)]}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM

    def _not(self, e: Not) -> tuple[str, int]:
        return "not " + self._paren(e.a, lambda p: p < _NOT_PREC), _NOT_PREC

    def _cast(self, e: Cast) -> tuple[str, int]:
        return f'T.Cast("{e.dtype}", {self.expr(e.value)})', _ATOM

    def _select(self, e: Select) -> tuple[str, int]:
        args = ", ".join(self.expr(x) for x in (e.condition, e.true_value, e.false_value))
        return f"T.Select({args})", _ATOM

    def _load(self, e: BufferLoad) -> tuple[str, int]:
        return f"{self.names.get(e.buffer)}[{self.indices(e.indices)}]", _ATOM

    def _ramp(self, e: Ramp) -> tuple[str, int]:
        return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM

    def _broadcast(self, e: Broadcast) -> tuple[str, int]:
        return f"T.Broadcast({self.expr(e.value)}, {e.lanes})", _ATOM

    def _let(self, e: Let) -> tuple[str, int]:
        name = self.names.get(e.var)
        return f"T.Let({self.expr(e.body)}, where={{{name}: {self.expr(e.value)}}})", _ATOM

    def _call(self, e: Call) -> tuple[str, int]:
        args = ", ".join(self.expr(a) for a in e.args)
        if isinstance(e.op, str):
            sep = ", " if args else ""
            return f'T.call_extern("{e.dtype}", "{e.op}"{sep}{args})', _ATOM
        name = e.op.name
        if name[4:] in BUILTINS:
            return self._builtin(e, args)
        spelled = _OP_SPELLING.get(name, "T." + name[4:] if name.startswith("tir.") else None)
        if spelled is None or not _call_dtype_is_default(e):
            sep = ", " if args else ""
            return f'T.call_intrin("{e.dtype}", "{name}"{sep}{args})', _ATOM
        return f"{spelled}({args})", _ATOM

    def _builtin(self, e: Call, args: str) -> tuple[str, int]:
        """`T.<builtin>(args)`, with `dtype=` where its rule does not give the call's dtype."""
        name = e.op.name[4:]
        if builtin_dtype(name, e.args) != e.dtype:
            args += (", " if args else "") + f'dtype="{e.dtype}"'
        return f"T.{name}({args})", _ATOM

    # -- pieces shared with statements
    def tuple_expr(self, xs: Iterable[Any]) -> str:
        xs = tuple(xs)
        inner = ", ".join(self.expr(x) if isinstance(x, PrimExpr) else repr(x) for x in xs)
        return f"({inner},)" if len(xs) == 1 else f"({inner})"

    def indices(self, indices: Iterable[Any]) -> str:
        indices = tuple(indices)
        if not indices:
            return "()"
        return ", ".join(self.expr(i) for i in indices)

    def region(self, r: BufferRegion) -> str:
        parts = []
        for rng in r.region:
            if isinstance(rng.extent, IntImm) and rng.extent.value == 1:
                parts.append(self.expr(rng.min))
            else:
                lo = self._paren(rng.min, lambda p: p <= _NOT_PREC)
                hi = self._paren(_range_end(rng), lambda p: p <= _NOT_PREC)
                parts.append(f"{lo}:{hi}")
        inner = ", ".join(parts) if parts else "()"
        return f"{self.names.get(r.buffer)}[{inner}]"


def _range_end(r: Range) -> PrimExpr:
    if isinstance(r.min, IntImm) and r.min.value == 0:
        return r.extent
    if isinstance(r.min, IntImm) and isinstance(r.extent, IntImm):
        return IntImm(r.extent.dtype, r.min.value + r.extent.value)
    if isinstance(r.extent, Sub) and structural_equal(r.extent.b, r.min):
        return r.extent.a  # `end - min` came from `min:end`
    return Add(r.min, r.extent)


# Ops whose result dtype the parser can recompute from the arguments.
_BOOL_RESULT = {"tir.isnan", "tir.isinf", "tir.isfinite"}


def _call_dtype_is_default(e: Call) -> bool:
    if not e.args:
        return False
    name = e.op.name
    if name in _BOOL_RESULT:
        return e.dtype.is_bool
    ref = e.args[1] if name == IF_THEN_ELSE else e.args[0]
    return ref.dtype == e.dtype


_EXPR_TABLE: dict[type, Callable[[_ExprPrinter, Any], tuple[str, int]]] = {
    Var: _ExprPrinter._var,
    IntImm: _ExprPrinter._int,
    FloatImm: _ExprPrinter._float,
    StringImm: _ExprPrinter._string,
    Div: _ExprPrinter._div,
    Not: _ExprPrinter._not,
    Cast: _ExprPrinter._cast,
    Select: _ExprPrinter._select,
    BufferLoad: _ExprPrinter._load,
    Ramp: _ExprPrinter._ramp,
    Broadcast: _ExprPrinter._broadcast,
    Let: _ExprPrinter._let,
    Call: _ExprPrinter._call,
    **{cls: _ExprPrinter._binop for cls in _BINOPS},
    **{cls: _ExprPrinter._call_binop for cls in _CALL_BINOPS},
}
