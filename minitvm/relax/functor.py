"""The graph-level visitor and mutator: functions → blocks → bindings, iterating over bindings.

Passes override `visit_binding` (return the new bindings, or none to drop it) or `visit_call`.
Variables are remapped through `var_map`, so replacing a variable's value everywhere is
`self.var_map[var] = new_expr`.
"""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.module import GlobalVar
from . import expr as rx
from .expr import DataflowBlock, MatchCast, VarBinding  # in __all__: passes' binding kinds


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
    rx.Var: "visit_var",
    rx.Call: "visit_call",
    rx.Tuple: "visit_tuple",
    rx.TupleGetItem: "visit_tuple_getitem",
    rx.SeqExpr: "visit_seq",
    rx.If: "visit_if",
    rx.Function: "visit_function",
}
_VISITOR_HOOKS: dict[type, str] = {**_MUTATOR_HOOKS, GlobalVar: "visit_global_var"}


class ExprMutator:
    """Rebuilds a relax Function; nodes are rebuilt only when something under them changed."""

    def __init__(self) -> None:
        self.var_map: dict[rx.Var, rx.Expr] = {}

    # ------------------------------------------------------------------ functions and blocks
    def visit_function(self, func: rx.Function) -> rx.Function:
        body = self.visit_expr(func.body)
        return func.replace(body=body)

    def visit_seq(self, seq: rx.SeqExpr) -> rx.SeqExpr:
        blocks = []
        for block in seq.blocks:
            new = self.visit_block(block)
            if new.bindings:
                blocks.append(new)
        body = self.visit_expr(seq.body)
        same = len(blocks) == len(seq.blocks) and all(a is b for a, b in zip(blocks, seq.blocks))
        return seq.replace(body=body) if same else rx.SeqExpr(tuple(blocks), body)

    def visit_block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        out: list[rx.Binding] = []
        for b in block.bindings:
            out.extend(self.visit_binding(b, block))
        if len(out) == len(block.bindings) and all(a is b for a, b in zip(out, block.bindings)):
            return block
        return type(block)(tuple(out))

    def visit_binding(self, b: rx.Binding, block: rx.BindingBlock) -> list[rx.Binding]:
        """The bindings that replace `b` (default: `b` with its value visited)."""
        value = self.visit_expr(b.value)
        return [b.replace(value=value)]

    # ------------------------------------------------------------------ expressions
    def visit_expr(self, e: Any) -> Any:
        return getattr(self, dispatch(_MUTATOR_HOOKS, e, "visit_leaf"))(e)

    def visit_var(self, v: rx.Var) -> Any:
        return self.var_map.get(v, v)

    def visit_tuple(self, e: rx.Tuple) -> Any:
        fields = tuple(self.visit_expr(f) for f in e.fields)
        return e if all(a is b for a, b in zip(fields, e.fields)) else rx.Tuple(fields)

    def visit_tuple_getitem(self, e: rx.TupleGetItem) -> Any:
        return e.replace(tuple_value=self.visit_expr(e.tuple_value))

    def visit_if(self, e: rx.If) -> Any:
        return e.replace(
            cond=self.visit_expr(e.cond),
            true_branch=self.visit_expr(e.true_branch),
            false_branch=self.visit_expr(e.false_branch),
        )

    def visit_leaf(self, e: Any) -> Any:
        return e  # Constant, ShapeExpr, PrimValue, ExternFunc, GlobalVar, Op, StringImm

    def visit_call(self, call: rx.Call) -> rx.Expr:
        args = tuple(self.visit_expr(a) for a in call.args)
        same = all(a is b for a, b in zip(args, call.args))
        return call if same else call.replace(args=args)


class ExprVisitor:
    """Walks a relax expression; override `visit_binding` / `visit_call` and call super()."""

    def visit_expr(self, e: Any) -> None:
        getattr(self, dispatch(_VISITOR_HOOKS, e, "visit_leaf"))(e)

    def visit_tuple(self, e: rx.Tuple) -> None:
        for f in e.fields:
            self.visit_expr(f)

    def visit_tuple_getitem(self, e: rx.TupleGetItem) -> None:
        self.visit_expr(e.tuple_value)

    def visit_seq(self, e: rx.SeqExpr) -> None:
        for block in e.blocks:
            for b in block.bindings:
                self.visit_binding(b)
        self.visit_expr(e.body)

    def visit_if(self, e: rx.If) -> None:
        for x in (e.cond, e.true_branch, e.false_branch):
            self.visit_expr(x)

    def visit_function(self, e: rx.Function) -> None:
        self.visit_expr(e.body)

    def visit_leaf(self, e: Any) -> None:
        pass

    def visit_binding(self, b: rx.Binding) -> None:
        self.visit_expr(b.value)

    def visit_call(self, call: rx.Call) -> None:
        if isinstance(call.op, GlobalVar):
            self.visit_global_var(call.op)
        elif isinstance(call.op, rx.Expr):
            self.visit_expr(call.op)
        for a in call.args:
            self.visit_expr(a)

    def visit_var(self, v: rx.Var) -> None:
        pass

    def visit_global_var(self, gv: GlobalVar) -> None:
        pass


def used_vars(e: Any) -> set[rx.Var]:
    """Every relax Var used (not defined) under `e`."""

    class _Uses(ExprVisitor):
        def __init__(self) -> None:
            self.found: set[rx.Var] = set()

        def visit_var(self, v: rx.Var) -> None:
            self.found.add(v)

    finder = _Uses()
    finder.visit_expr(e)
    return finder.found


__all__ = ["DataflowBlock", "ExprMutator", "ExprVisitor", "MatchCast", "VarBinding", "used_vars"]


def substitute_vars(e: Any, vmap: dict) -> Any:
    """`e` with the Vars that `vmap` maps replaced, inside calls, tuples and tuple items (a
    binding's value in A-normal form; nested functions and blocks are left as they are)."""
    if isinstance(e, rx.Var):
        return vmap.get(e, e)
    if isinstance(e, rx.Call):
        return rx.Call(e.op, tuple(substitute_vars(a, vmap) for a in e.args), e.attrs, e.sinfo_args)
    if isinstance(e, rx.Tuple):
        return rx.Tuple(tuple(substitute_vars(f, vmap) for f in e.fields))
    if isinstance(e, rx.TupleGetItem):
        return rx.TupleGetItem(substitute_vars(e.tuple_value, vmap), e.index)
    return e


def argument_vars(e: Any) -> list[rx.Var]:
    """The Vars `e` reads as call arguments, tuple fields and tuple items, in order, repeats
    kept (a binding's value in A-normal form; not a called Var nor nested functions)."""
    if isinstance(e, rx.Var):
        return [e]
    if isinstance(e, rx.Call):
        return [v for a in e.args for v in argument_vars(a)]
    if isinstance(e, rx.Tuple):
        return [v for f in e.fields for v in argument_vars(f)]
    if isinstance(e, rx.TupleGetItem):
        return argument_vars(e.tuple_value)
    return []


def substitute_dims(node: Any, dims: dict) -> Any:
    """Replace symbolic dims (tir Vars) everywhere under a relax node, struct infos included."""
    from ..tir.functor import Mutator

    table = {id(k): v for k, v in dims.items()}

    class _Subst(Mutator):
        def visit_Var(self, v: Any) -> Any:
            if isinstance(v, rx.Var):
                return self.generic_visit(v)
            return table.get(id(v), v)

    return _Subst().visit(node) if dims else node
