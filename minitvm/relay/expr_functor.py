"""ExprFunctor, ExprVisitor and ExprMutator over Relay expressions (TVM's `visit_call` names).

Dispatch is a table from node class to method name; results are memoised by node identity,
so a node shared by several users (a DAG) is visited once.
"""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.module import GlobalVar
from ..ir.recursion import deep_recursion
from .expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var

_METHOD = {
    Var: "visit_var",
    Constant: "visit_constant",
    Call: "visit_call",
    Tuple: "visit_tuple",
    TupleGetItem: "visit_tuple_getitem",
    Function: "visit_function",
    Let: "visit_let",
    If: "visit_if",
    Op: "visit_op",
    GlobalVar: "visit_global_var",
}


def _method_name(cls: type) -> str:
    for klass in cls.__mro__:
        name = _METHOD.get(klass)
        if name is not None:
            return name
    raise MiniTVMError(f"relay expression functors cannot visit a {cls.__name__}")


class ExprFunctor:
    """Memoised dispatch of `visit(expr)` to `visit_<kind>(expr)`."""

    def __init__(self) -> None:
        self.memo_map: dict[Any, Any] = {}

    def visit(self, expr: Any) -> Any:
        """Visit `expr` once; later visits of the same node return the first result."""
        try:
            return self.memo_map[expr]
        except KeyError:
            pass
        with deep_recursion():
            out = getattr(self, _method_name(type(expr)))(expr)
        self.memo_map[expr] = out
        return out

    def visit_var(self, v: Var) -> Any:
        raise NotImplementedError

    visit_constant = visit_call = visit_tuple = visit_tuple_getitem = visit_var
    visit_function = visit_let = visit_if = visit_op = visit_global_var = visit_var


class ExprVisitor(ExprFunctor):
    """Walks every sub-expression once (override `visit_<kind>` and call super to recurse)."""

    def visit_var(self, v: Var) -> None:
        pass

    def visit_constant(self, c: Constant) -> None:
        pass

    def visit_op(self, op: Op) -> None:
        pass

    def visit_global_var(self, gv: GlobalVar) -> None:
        pass

    def visit_call(self, call: Call) -> None:
        self.visit(call.op)
        for a in call.args:
            self.visit(a)

    def visit_tuple(self, tup: Tuple) -> None:
        for f in tup.fields:
            self.visit(f)

    def visit_tuple_getitem(self, item: TupleGetItem) -> None:
        self.visit(item.tuple_value)

    def visit_function(self, func: Function) -> None:
        for p in func.params:
            self.visit(p)
        self.visit(func.body)

    def visit_let(self, let: Let) -> None:
        self.visit(let.var)
        self.visit(let.value)
        self.visit(let.body)

    def visit_if(self, node: If) -> None:
        self.visit(node.cond)
        self.visit(node.true_branch)
        self.visit(node.false_branch)


def _same(a: tuple, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


class ExprMutator(ExprFunctor):
    """Rebuilds an expression bottom-up; a node whose children did not change is kept as is."""

    def visit_var(self, v: Var) -> Expr:
        return v

    def visit_constant(self, c: Constant) -> Expr:
        return c

    def visit_op(self, op: Op) -> Expr:
        return op

    def visit_global_var(self, gv: GlobalVar) -> Any:
        return gv

    def visit_call(self, call: Call) -> Expr:
        op = self.visit(call.op)
        args = [self.visit(a) for a in call.args]
        if op is call.op and _same(call.args, args):
            return call
        return Call(op, args, call.attrs, call.type_args)

    def visit_tuple(self, tup: Tuple) -> Expr:
        fields = [self.visit(f) for f in tup.fields]
        return tup if _same(tup.fields, fields) else Tuple(fields)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        return item if value is item.tuple_value else TupleGetItem(value, item.index)

    def visit_function(self, func: Function) -> Expr:
        params = [self.visit(p) for p in func.params]
        body = self.visit(func.body)
        if _same(func.params, params) and body is func.body:
            return func
        return Function(params, body, func.ret_type, func.type_params, func.attrs)

    def visit_let(self, let: Let) -> Expr:
        var, value, body = self.visit(let.var), self.visit(let.value), self.visit(let.body)
        if var is let.var and value is let.value and body is let.body:
            return let
        return Let(var, value, body)

    def visit_if(self, node: If) -> Expr:
        parts = [self.visit(node.cond), self.visit(node.true_branch), self.visit(node.false_branch)]
        if _same((node.cond, node.true_branch, node.false_branch), parts):
            return node
        return If(*parts)


def post_order_visit(expr: Expr, fvisit: Any) -> None:
    """Call `fvisit(node)` on every sub-expression of `expr`, children first, each once."""

    class _PostOrder(ExprVisitor):
        def visit(self, e: Any) -> Any:
            if e in self.memo_map:
                return None
            out = super().visit(e)
            fvisit(e)
            return out

    _PostOrder().visit(expr)
