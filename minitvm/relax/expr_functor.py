"""TVM's Python-subclassable visitor and mutator: `relax.PyExprVisitor` / `relax.PyExprMutator`.

Override `visit_<node>_` hooks (`visit_call_`, `visit_var_`, ...) as the MLC course's fusion
passes do; decorate the class with `@relax.expr_functor.mutator` / `visitor` (kept for TVM
compatibility: the class works without it). The mutator re-emits every binding through
`self.builder_` (a BlockBuilder), so a hook may return any expression — nested calls are bound
first — and `self.lookup_binding(var)` finds the value a var was (re-)bound to.

    @relax.expr_functor.mutator
    class AddToMultiply(relax.PyExprMutator):
        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            return relax.op.multiply(*call.args) if call.op == tvm.ir.Op.get("relax.add") else call
"""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from . import expr as rx
from .block_builder import BlockBuilder
from .functor import dispatch

# node class → hook name; DataflowVar before Var and DataflowBlock before BindingBlock because
# lookup walks the class's MRO.
_EXPR_HOOKS: dict[type, str] = {
    rx.Constant: "visit_constant_",
    rx.Tuple: "visit_tuple_",
    rx.DataflowVar: "visit_dataflow_var_",
    rx.Var: "visit_var_",
    rx.ShapeExpr: "visit_shape_expr_",
    rx.ExternFunc: "visit_extern_func_",
    GlobalVar: "visit_global_var_",
    rx.Function: "visit_function_",
    rx.Call: "visit_call_",
    rx.SeqExpr: "visit_seq_expr_",
    rx.If: "visit_if_",
    Op: "visit_op_",
    rx.TupleGetItem: "visit_tuple_getitem_",
    rx.PrimValue: "visit_prim_value_",
    rx.StringImm: "visit_string_imm_",
}
_BINDING_HOOKS = {rx.VarBinding: "visit_var_binding_", rx.MatchCast: "visit_match_cast_"}
_BLOCK_HOOKS = {rx.DataflowBlock: "visit_dataflow_block_", rx.BindingBlock: "visit_binding_block_"}


def _hook(table: dict[type, str], node: Any) -> str:
    return dispatch(table, node)  # one dispatch for every relax visitor (functor.py)


class PyExprVisitor:
    """Walks a relax expression; override `visit_<node>_` hooks (call the default to recurse)."""

    def visit_expr(self, expr: Any) -> None:
        getattr(self, _hook(_EXPR_HOOKS, expr))(expr)

    def visit_binding(self, binding: rx.Binding) -> None:
        getattr(self, _hook(_BINDING_HOOKS, binding))(binding)

    def visit_binding_block(self, block: rx.BindingBlock) -> None:
        getattr(self, _hook(_BLOCK_HOOKS, block))(block)

    # ------------------------------------------------------------------ default hooks
    def visit_function_(self, func: rx.Function) -> None:
        for p in func.params:
            self.visit_var_def(p)
        self.visit_expr(func.body)

    def visit_seq_expr_(self, seq: rx.SeqExpr) -> None:
        for block in seq.blocks:
            self.visit_binding_block(block)
        self.visit_expr(seq.body)

    def visit_binding_block_(self, block: rx.BindingBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    visit_dataflow_block_ = visit_binding_block_

    def visit_var_binding_(self, binding: rx.VarBinding) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_match_cast_(self, binding: rx.MatchCast) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_var_def(self, var: rx.Var) -> None:
        hook = "visit_dataflow_var_def_" if isinstance(var, rx.DataflowVar) else "visit_var_def_"
        getattr(self, hook)(var)

    def visit_var_def_(self, var: rx.Var) -> None:
        pass

    def visit_dataflow_var_def_(self, var: rx.DataflowVar) -> None:
        pass

    def visit_call_(self, call: rx.Call) -> None:
        if isinstance(call.op, rx.Expr | GlobalVar):
            self.visit_expr(call.op)
        for a in call.args:
            self.visit_expr(a)

    def visit_tuple_(self, tup: rx.Tuple) -> None:
        for f in tup.fields:
            self.visit_expr(f)

    def visit_tuple_getitem_(self, item: rx.TupleGetItem) -> None:
        self.visit_expr(item.tuple_value)

    def visit_if_(self, node: rx.If) -> None:
        for e in (node.cond, node.true_branch, node.false_branch):
            self.visit_expr(e)

    def _leaf(self, node: Any) -> None:
        pass

    visit_constant_ = visit_var_ = visit_dataflow_var_ = visit_shape_expr_ = _leaf
    visit_extern_func_ = visit_global_var_ = visit_op_ = visit_prim_value_ = _leaf
    visit_string_imm_ = _leaf


class PyExprMutator:
    """Rebuilds a relax expression binding by binding; override `visit_<node>_` hooks.

    `builder_` is the BlockBuilder that re-emits bindings and collects new functions
    (`self.builder_.add_func(...)`, `update_func`, `get()`), starting from `mod` if given.
    """

    def __init__(self, mod: IRModule | None = None) -> None:
        self.builder_ = BlockBuilder(mod)
        self._var_remap: dict[rx.Var, rx.Expr] = {}
        self._bound: dict[rx.Var, rx.Expr] = {}

    # ------------------------------------------------------------------ dispatch
    def visit_expr(self, expr: Any) -> Any:
        return getattr(self, _hook(_EXPR_HOOKS, expr))(expr)

    def visit_binding(self, binding: rx.Binding) -> None:
        getattr(self, _hook(_BINDING_HOOKS, binding))(binding)

    def visit_binding_block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        return getattr(self, _hook(_BLOCK_HOOKS, block))(block)

    def visit_var_def(self, var: rx.Var) -> rx.Var:
        hook = "visit_dataflow_var_def_" if isinstance(var, rx.DataflowVar) else "visit_var_def_"
        return getattr(self, hook)(var)

    def visit_var_def_(self, var: rx.Var) -> rx.Var:
        return var

    visit_dataflow_var_def_ = visit_var_def_

    # ------------------------------------------------------------------ helpers TVM code calls
    def visit_expr_post_order(self, expr: Any) -> Any:
        """`expr` with its children visited (no hook runs on `expr` itself)."""
        if isinstance(expr, rx.Call):
            op = self.visit_expr(expr.op) if isinstance(expr.op, rx.Var) else expr.op
            args = tuple(self.visit_expr(a) for a in expr.args)
            same = op is expr.op and all(a is b for a, b in zip(args, expr.args))
            return expr if same else expr.replace(op=op, args=args)
        if isinstance(expr, rx.Tuple):
            fields = tuple(self.visit_expr(f) for f in expr.fields)
            return expr if all(a is b for a, b in zip(fields, expr.fields)) else rx.Tuple(fields)
        if isinstance(expr, rx.TupleGetItem):
            return expr.replace(tuple_value=self.visit_expr(expr.tuple_value))
        if isinstance(expr, rx.If):
            return expr.replace(
                cond=self.visit_expr(expr.cond),
                true_branch=self.visit_expr(expr.true_branch),
                false_branch=self.visit_expr(expr.false_branch),
            )
        if isinstance(expr, rx.SeqExpr):
            return PyExprMutator.visit_seq_expr_(self, expr)
        if isinstance(expr, rx.Function):
            return PyExprMutator.visit_function_(self, expr)
        return expr

    def lookup_binding(self, var: rx.Var) -> rx.Expr | None:
        """The value `var` is bound to in what was visited so far, or None."""
        return self._bound.get(var)

    def set_var_remap(self, var: rx.Var, new: rx.Expr) -> None:
        """Replace uses of `var` by `new` from now on."""
        self._var_remap[var] = new

    def get_var_remap(self, var: rx.Var) -> rx.Expr | None:
        return self._var_remap.get(var)

    def with_struct_info(self, var: rx.Var, struct_info: Any) -> rx.Var:
        """`var` itself if it already has `struct_info`, else a new var of the same kind and name."""
        if var.struct_info == struct_info:
            return var
        return type(var)(var.name_hint, struct_info)

    # ------------------------------------------------------------------ default hooks
    def visit_function_(self, func: rx.Function) -> rx.Function:
        params = tuple(self.visit_var_def(p) for p in func.params)
        body = self.visit_expr(func.body)
        if body is func.body and all(a is b for a, b in zip(params, func.params)):
            return func
        return rx.Function(params, body, None, func.attrs, func.is_pure)

    def visit_seq_expr_(self, seq: rx.SeqExpr) -> rx.SeqExpr:
        blocks = [self.visit_binding_block(b) for b in seq.blocks]
        body = self.visit_expr(seq.body)
        kept = tuple(b for b in blocks if b.bindings)
        if body is seq.body and len(kept) == len(seq.blocks):
            if all(a is b for a, b in zip(kept, seq.blocks)):
                return seq
        return rx.SeqExpr(kept, body)

    def visit_binding_block_(self, block: rx.BindingBlock) -> rx.BindingBlock:
        self.builder_._begin_rewrite_block(dataflow=isinstance(block, rx.DataflowBlock))
        try:
            for b in block.bindings:
                self.visit_binding(b)
        finally:
            bindings = self.builder_._end_rewrite_block()
        if len(bindings) == len(block.bindings) and all(
            a is b for a, b in zip(bindings, block.bindings)
        ):
            return block
        return type(block)(tuple(bindings))

    visit_dataflow_block_ = visit_binding_block_

    def visit_var_binding_(self, binding: rx.VarBinding) -> None:
        self._reemit(binding, self.visit_expr(binding.value))

    def visit_match_cast_(self, binding: rx.MatchCast) -> None:
        value = self.visit_expr(binding.value)
        if value is binding.value:
            self.builder_._append_binding(binding)
        else:
            self.builder_._append_binding(binding.replace(value=self.builder_.normalize(value)))
        self._bound[binding.var] = value

    def _reemit(self, binding: rx.VarBinding, value: rx.Expr) -> None:
        """Bind `value` in place of `binding`: the same var when nothing changed, else a new one."""
        var = self.visit_var_def(binding.var)
        if value is binding.value and var is binding.var:
            self.builder_._append_binding(binding)
            self._bound[var] = value
            return
        value = self.builder_.normalize(value)
        sinfo = self.builder_.infer_struct_info(value)
        new_var = type(var)(var.name_hint, sinfo)
        self.builder_._append_binding(rx.VarBinding(new_var, value))
        self._var_remap[binding.var] = new_var
        self._bound[new_var] = value

    def visit_var_(self, var: rx.Var) -> rx.Expr:
        return self._var_remap.get(var, var)

    visit_dataflow_var_ = visit_var_

    def visit_call_(self, call: rx.Call) -> rx.Expr:
        return self.visit_expr_post_order(call)

    visit_tuple_ = visit_tuple_getitem_ = visit_if_ = visit_call_

    def _leaf(self, node: Any) -> Any:
        return node

    visit_constant_ = visit_shape_expr_ = visit_extern_func_ = visit_global_var_ = _leaf
    visit_op_ = visit_prim_value_ = visit_string_imm_ = _leaf


def _checked_subclass(cls: Any, decorator: str, base: type) -> type:
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise MiniTVMError(
            f"@relax.expr_functor.{decorator}: {getattr(cls, '__name__', cls)!r} must subclass "
            f"relax.{base.__name__}"
        )
    return cls


def mutator(cls: type) -> type:
    """Class decorator of TVM's `relax.expr_functor.mutator`; checks the class is a PyExprMutator."""
    return _checked_subclass(cls, "mutator", PyExprMutator)


def visitor(cls: type) -> type:
    """Class decorator of TVM's `relax.expr_functor.visitor`; checks the class is a PyExprVisitor."""
    return _checked_subclass(cls, "visitor", PyExprVisitor)


__all__ = ["PyExprMutator", "PyExprVisitor", "mutator", "visitor"]
