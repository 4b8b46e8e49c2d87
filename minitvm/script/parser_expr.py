"""Evaluating TVMScript expressions: names, attributes, calls, subscripts (buffer loads), literals
and Python operators, each node kind one method (a base class of TIRParser)."""

from __future__ import annotations

import ast
import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any, ClassVar

from .. import tir
from ..error import ParseError
from ..tir.buffer import Buffer
from ..tir.op import buffer_access_ptr
from ..tir.stmt import (
    BufferRegion,
)
from . import bounded
from . import tir as T
from .parser_common import _TIR_BINOPS, _is_expr, _unsupported

_PYTHON_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


_TIR_CMP: dict[type, type] = {
    ast.Eq: tir.EQ,
    ast.NotEq: tir.NE,
    ast.Lt: tir.LT,
    ast.LtE: tir.LE,
    ast.Gt: tir.GT,
    ast.GtE: tir.GE,
}


# Buffer methods of TVM's TVMScript: `B.access_ptr("r")` -> tir/op.py's builder with B bound.
_BUFFER_METHODS = {"access_ptr": buffer_access_ptr}


def _py_cmp(op: ast.cmpop, a: Any, b: Any) -> Any:
    if isinstance(op, ast.In):
        return a in b
    if isinstance(op, ast.NotIn):
        return a not in b
    if isinstance(op, ast.Is):
        return a is b
    return a is not b


def _region(buf: Buffer, idx: tuple) -> BufferRegion:
    ranges = []
    for dim, i in zip(buf.shape, idx):
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise ParseError("buffer regions take no step: write A[lo:hi]")
            ranges.append(
                tir.Range.from_min_extent(*T.min_extent(i.start, dim if i.stop is None else i.stop))
            )
        else:
            ranges.append(tir.Range.from_min_extent(i, 1))
    return BufferRegion(buf, tuple(ranges))


# T.<name>(...) calls whose arguments are buffer regions, so A[lo:hi] stays a region there
_REGION_FUNCS = frozenset({"reads", "writes", "match_buffer", "realize"})


def _has_bounded_slice(node: ast.AST) -> bool:
    """`A[lo:hi]` with both bounds: an operand TVM reads as a vector (a step of 1 is implied)."""
    if not isinstance(node, ast.Subscript):
        return False
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return any(isinstance(i, ast.Slice) and i.lower and i.upper for i in items)


def _lanes(start: Any, stop: Any, step: Any) -> int:
    count = (stop - start + step - 1) // step
    if not isinstance(count, int):
        from ..arith import Analyzer  # noqa: PLC0415 - only slices of symbolic bounds need it

        count = Analyzer().simplify(count)
    if isinstance(count, tir.IntImm):
        count = count.value
    if not isinstance(count, int) or count < 1:
        raise ParseError(
            f"a vector slice [{start}:{stop}:{step}] needs a constant, positive number of lanes; "
            f"got {count}"
        )
    return count


def vector_indices(buf: Buffer, idx: tuple) -> tuple:
    """Slices as vector indices, as TVM's: A[lo:hi:step] is A[T.Ramp(lo, step, lanes)], and a
    slice of one lane is its start."""
    out = []
    for dim, i in zip(buf.shape, idx):
        if not isinstance(i, slice):
            out.append(i)
            continue
        start = 0 if i.start is None else i.start
        stop = dim if i.stop is None else i.stop
        step = 1 if i.step is None else i.step
        lanes = _lanes(start, stop, step)
        if lanes == 1:
            out.append(start)
            continue
        if isinstance(start, tir.PrimExpr) and isinstance(step, int):
            step = tir.IntImm(start.dtype, step)
        out.append(tir.Ramp(start, step, lanes))
    return tuple(out)


class _ExprEvaluator:
    """Evaluates TVMScript expressions: names, attributes, calls, subscripts, literals, operators."""

    # ast node class -> handler; set below the class (the handlers are its methods) and replaced
    # by a parser that handles some nodes its own way (the relax parser)
    _expr_handlers: ClassVar[dict[type, Callable[[Any, Any], Any]]]

    # -- expressions
    def eval(self, node: ast.AST) -> Any:
        handler = self._expr_handlers.get(type(node))
        if handler is None:
            raise self.error(node, _unsupported(node))
        return handler(self, node)

    def expr_constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def expr_attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        if getattr(base, "__tvmscript__", False):
            if node.attr not in getattr(base, "__all__", ()):
                raise self.error(node, f"unknown name '{ast.unparse(node)}' in TVMScript")
            return getattr(base, node.attr)
        if node.attr.startswith("_"):
            raise self.error(node, f"private attribute '{node.attr}' cannot be used in TVMScript")
        if isinstance(base, Buffer) and node.attr in _BUFFER_METHODS:
            return functools.partial(_BUFFER_METHODS[node.attr], base)
        try:
            return getattr(base, node.attr)
        except AttributeError as err:
            raise self.error(
                node, f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'"
            ) from err

    def expr_call(self, node: ast.Call) -> Any:
        fn = self.eval(node.func)
        args: list[Any] = []
        # `T.f(A[0:4])` passes a vector load, except to the functions that take regions (as TVM)
        takes_regions = getattr(node.func, "attr", "reads") in _REGION_FUNCS
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.eval(a.value))
            else:
                args.append(self.eval(a) if takes_regions else self.operand(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        if not callable(fn):
            raise self.error(node.func, f"'{ast.unparse(node.func)}' is not callable")
        if bounded.is_python_builtin(fn):
            return self.guard(node, lambda: bounded.call_builtin(fn, args, kwargs))
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as err:
            raise self.error(node, f"wrong arguments to {ast.unparse(node.func)}: {err}") from err
        except ValueError:
            pass  # builtins without a signature
        return self.guard(node, lambda: fn(*args, **kwargs))

    def operand(self, node: ast.AST) -> Any:
        """An operator's operand: `A[lo:hi]` there is a vector load, not a region (as TVM)."""
        if not _has_bounded_slice(node):
            return self.eval(node)
        return self.expr_subscript(node, vector=True)

    def expr_subscript(self, node: ast.Subscript, vector: bool = False) -> Any:
        base = self.eval(node.value)
        if isinstance(base, Buffer):
            idx = self.indices(node, base)
            slices = [i for i in idx if isinstance(i, slice)]
            if slices and (vector or any(i.step is not None for i in slices)):
                return self.guard(node, lambda: tir.BufferLoad(base, vector_indices(base, idx)))
            if slices:
                return self.guard(node, lambda: _region(base, idx))
            return self.guard(node, lambda: tir.BufferLoad(base, idx))
        key = self.eval(node.slice)
        return self.guard(node, lambda: base[key])

    def indices(self, node: ast.Subscript, buf: Buffer) -> tuple:
        sl = node.slice
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        idx = tuple(self.eval(i) for i in items)
        if len(idx) != len(buf.shape):
            raise self.error(
                node,
                f"buffer '{buf.name}' has {len(buf.shape)} dimensions but is indexed with {len(idx)} indices",
            )
        return idx

    def expr_slice(self, node: ast.Slice) -> slice:
        parts = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def expr_tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.elements(node.elts))

    def expr_list(self, node: ast.List) -> list:
        return self.elements(node.elts)

    def elements(self, elts: list[ast.expr]) -> list:
        """Items of a tuple or list display; `*xs` spreads a Python sequence, as in Python."""
        out: list = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.eval(e.value))
            else:
                out.append(self.eval(e))
        return out

    def expr_dict(self, node: ast.Dict) -> dict:
        if any(k is None for k in node.keys):
            raise self.error(node, _unsupported(node))
        return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}

    def expr_binop(self, node: ast.BinOp) -> Any:
        a, b = self.operand(node.left), self.operand(node.right)
        op = type(node.op)
        if not (_is_expr(a) or _is_expr(b)):
            if op not in bounded.BINOPS:
                raise self.error(node, _unsupported(node.op))
            return self.guard(node, lambda: bounded.binop(op, a, b))  # 9**9**9 is refused
        fn = _TIR_BINOPS.get(op)
        if fn is None:
            raise self.error(node, _unsupported(node.op))
        return self.guard(node, lambda: fn(a, b))

    def expr_unaryop(self, node: ast.UnaryOp) -> Any:
        x = self.operand(node.operand)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.USub):
            if isinstance(x, tir.IntImm | tir.FloatImm):
                return type(x)(x.dtype, -x.value)
            return self.guard(node, lambda: -x)
        if isinstance(node.op, ast.Not):
            return self.guard(node, lambda: tir.Not(x) if _is_expr(x) else not x)
        return self.guard(node, lambda: ~x)

    def expr_boolop(self, node: ast.BoolOp) -> Any:
        values = [self.operand(v) for v in node.values]
        if not any(_is_expr(v) for v in values):
            fn = all if isinstance(node.op, ast.And) else any
            return fn(values)
        cls = tir.And if isinstance(node.op, ast.And) else tir.Or
        out = values[0]
        for v in values[1:]:
            out = self.guard(node, lambda o=out, v=v: cls(o, v))
        return out

    def expr_compare(self, node: ast.Compare) -> Any:
        left = self.operand(node.left)
        terms = []
        for op, comp in zip(node.ops, node.comparators):
            right = self.operand(comp)
            if _is_expr(left) or _is_expr(right):
                cls = _TIR_CMP.get(type(op))
                if cls is None:
                    raise self.error(node, _unsupported(op))
                terms.append(self.guard(node, lambda c=cls, a=left, b=right: c(a, b)))
            else:
                terms.append(
                    _PYTHON_CMP.get(type(op), lambda a, b, op=op: _py_cmp(op, a, b))(left, right)
                )
            left = right
        out = terms[0]
        for t in terms[1:]:
            out = self.guard(
                node, lambda o=out, t=t: tir.And(o, t) if _is_expr(o) or _is_expr(t) else o and t
            )
        return out

    def expr_ifexp(self, node: ast.IfExp) -> Any:
        cond = self.eval(node.test)
        if not _is_expr(cond):
            return self.eval(node.body if cond else node.orelse)
        a, b = self.eval(node.body), self.eval(node.orelse)
        return self.guard(node, lambda: tir.Select(cond, a, b))

    def expr_lambda(self, node: ast.Lambda) -> Callable:
        """`lambda x, y: x + y` (T.comm_reducer's combiner): a function that evaluates the body
        with the parameters bound; plain positional parameters only."""
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.error(node, "a TVMScript lambda takes plain parameters: lambda x, y: x + y")
        names = [p.arg for p in a.args]

        def call(*values: Any) -> Any:
            if len(values) != len(names):
                raise self.error(
                    node, f"this lambda takes {len(names)} arguments, got {len(values)}"
                )
            return self.with_names(dict(zip(names, values)), lambda: self.eval(node.body))

        call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
        )
        return call

    def with_names(self, names: dict[str, Any], fn: Callable[[], Any]) -> Any:
        """`fn()` with `names` bound on top of the current scope (parsers define it)."""
        raise self.error(None, "lambda is not supported here")


_EXPR_HANDLERS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lambda: _ExprEvaluator.expr_lambda,
    ast.Constant: _ExprEvaluator.expr_constant,
    ast.Name: _ExprEvaluator.expr_name,
    ast.Attribute: _ExprEvaluator.expr_attribute,
    ast.Call: _ExprEvaluator.expr_call,
    ast.Subscript: _ExprEvaluator.expr_subscript,
    ast.Slice: _ExprEvaluator.expr_slice,
    ast.Tuple: _ExprEvaluator.expr_tuple,
    ast.List: _ExprEvaluator.expr_list,
    ast.Dict: _ExprEvaluator.expr_dict,
    ast.BinOp: _ExprEvaluator.expr_binop,
    ast.UnaryOp: _ExprEvaluator.expr_unaryop,
    ast.BoolOp: _ExprEvaluator.expr_boolop,
    ast.Compare: _ExprEvaluator.expr_compare,
    ast.IfExp: _ExprEvaluator.expr_ifexp,
}
_ExprEvaluator._expr_handlers = _EXPR_HANDLERS
