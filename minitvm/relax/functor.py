"""The graph-level visitor and mutator: functions → blocks → bindings, iterating over bindings.

Passes override `visit_binding` (return the new bindings, or none to drop it) or `visit_call`.
Variables are remapped through `var_map`, so replacing a variable's value everywhere is
`self.var_map[var] = new_expr`.
"""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.module import GlobalVar
from .expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)


def dispatch(table: dict[type, str], node: Any, default: str | None = None) -> str:
    """The method name `table` gives `node`'s class (the nearest base class listed), cached per
    class; `default` for a class nothing in its MRO lists (None: an error naming the class).
    The one dispatch of relax's visitors (ExprVisitor/ExprMutator here, PyExprVisitor/
    PyExprMutator in expr_functor.py), as tir's functor dispatches on its node classes."""
    cls = type(node)
    cache = _DISPATCH_CACHE.setdefault(id(table), {})
    name = cache.get(cls)
    if name is None:
        name = next((table[c] for c in cls.__mro__ if c in table), default)
        if name is None:
            raise MiniTVMError(
                f"no visitor method for a {cls.__name__}; expected a relax expression"
            )
        cache[cls] = name
    return name


_DISPATCH_CACHE: dict[int, dict[type, str]] = {}

_MUTATOR_HOOKS: dict[type, str] = {
    Var: "visit_var",
    Call: "visit_call",
    Tuple: "visit_tuple",
    TupleGetItem: "visit_tuple_getitem",
    SeqExpr: "visit_seq",
    If: "visit_if",
    Function: "visit_function",
}
_VISITOR_HOOKS: dict[type, str] = {**_MUTATOR_HOOKS, GlobalVar: "visit_global_var"}


class ExprMutator:
    """Rebuilds a relax Function; nodes are rebuilt only when something under them changed."""

    def __init__(self) -> None:
        self.var_map: dict[Var, Expr] = {}

    # ------------------------------------------------------------------ functions and blocks
    def visit_function(self, func: Function) -> Function:
        body = self.visit_expr(func.body)
        return func.replace(body=body)

    def visit_seq(self, seq: SeqExpr) -> SeqExpr:
        blocks = []
        for block in seq.blocks:
            new = self.visit_block(block)
            if new.bindings:
                blocks.append(new)
        body = self.visit_expr(seq.body)
        same = len(blocks) == len(seq.blocks) and all(a is b for a, b in zip(blocks, seq.blocks))
        return seq.replace(body=body) if same else SeqExpr(tuple(blocks), body)

    def visit_block(self, block: BindingBlock) -> BindingBlock:
        out: list[Binding] = []
        for b in block.bindings:
            out.extend(self.visit_binding(b, block))
        if len(out) == len(block.bindings) and all(a is b for a, b in zip(out, block.bindings)):
            return block
        return type(block)(tuple(out))

    def visit_binding(self, b: Binding, block: BindingBlock) -> list[Binding]:
        """The bindings that replace `b` (default: `b` with its value visited)."""
        value = self.visit_expr(b.value)
        return [b.replace(value=value)]

    # ------------------------------------------------------------------ expressions
    def visit_expr(self, e: Any) -> Any:
        return getattr(self, dispatch(_MUTATOR_HOOKS, e, "visit_leaf"))(e)

    def visit_var(self, v: Var) -> Any:
        return self.var_map.get(v, v)

    def visit_tuple(self, e: Tuple) -> Any:
        fields = tuple(self.visit_expr(f) for f in e.fields)
        return e if all(a is b for a, b in zip(fields, e.fields)) else Tuple(fields)

    def visit_tuple_getitem(self, e: TupleGetItem) -> Any:
        return e.replace(tuple_value=self.visit_expr(e.tuple_value))

    def visit_if(self, e: If) -> Any:
        return e.replace(
            cond=self.visit_expr(e.cond),
            true_branch=self.visit_expr(e.true_branch),
            false_branch=self.visit_expr(e.false_branch),
        )

    def visit_leaf(self, e: Any) -> Any:
        return e  # Constant, ShapeExpr, PrimValue, ExternFunc, GlobalVar, Op, StringImm

    def visit_call(self, call: Call) -> Expr:
        args = tuple(self.visit_expr(a) for a in call.args)
        same = all(a is b for a, b in zip(args, call.args))
        return call if same else call.replace(args=args)


class ExprVisitor:
    """Walks a relax expression; override `visit_binding` / `visit_call` and call super()."""

    def visit_expr(self, e: Any) -> None:
        getattr(self, dispatch(_VISITOR_HOOKS, e, "visit_leaf"))(e)

    def visit_tuple(self, e: Tuple) -> None:
        for f in e.fields:
            self.visit_expr(f)

    def visit_tuple_getitem(self, e: TupleGetItem) -> None:
        self.visit_expr(e.tuple_value)

    def visit_seq(self, e: SeqExpr) -> None:
        for block in e.blocks:
            for b in block.bindings:
                self.visit_binding(b)
        self.visit_expr(e.body)

    def visit_if(self, e: If) -> None:
        for x in (e.cond, e.true_branch, e.false_branch):
            self.visit_expr(x)

    def visit_function(self, e: Function) -> None:
        self.visit_expr(e.body)

    def visit_leaf(self, e: Any) -> None:
        pass

    def visit_binding(self, b: Binding) -> None:
        self.visit_expr(b.value)

    def visit_call(self, call: Call) -> None:
        if isinstance(call.op, GlobalVar):
            self.visit_global_var(call.op)
        elif isinstance(call.op, Expr):
            self.visit_expr(call.op)
        for a in call.args:
            self.visit_expr(a)

    def visit_var(self, v: Var) -> None:
        pass

    def visit_global_var(self, gv: GlobalVar) -> None:
        pass


def used_vars(e: Any) -> set[Var]:
    """Every relax Var used (not defined) under `e`."""

    class _Uses(ExprVisitor):
        def __init__(self) -> None:
            self.found: set[Var] = set()

        def visit_var(self, v: Var) -> None:
            self.found.add(v)

    finder = _Uses()
    finder.visit_expr(e)
    return finder.found


__all__ = ["DataflowBlock", "ExprMutator", "ExprVisitor", "MatchCast", "VarBinding", "used_vars"]


def substitute_dims(node: Any, dims: dict) -> Any:
    """Replace symbolic dims (tir Vars) everywhere under a relax node, struct infos included."""
    from ..tir.functor import Mutator

    table = {id(k): v for k, v in dims.items()}

    class _Subst(Mutator):
        def visit_Var(self, v: Any) -> Any:
            if isinstance(v, Var):
                return self.generic_visit(v)
            return table.get(id(v), v)

    return _Subst().visit(node) if dims else node
