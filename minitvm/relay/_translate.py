"""Relay -> relax: each Relay op call becomes the relax calls of its op-table row.

Functions called in the program (FuseOps' "Primitive" functions, module functions) are
inlined: the relax pipeline does its own fusion, so Relay's grouping is not kept.
"""

from __future__ import annotations

from typing import Any

from ..error import BuildError
from ..ir.module import GlobalVar, IRModule
from ..relax import expr as rx
from ..relax.block_builder import BlockBuilder
from .expr import Call, Constant, Function, If, Let, Op, Tuple, TupleGetItem, Var
from .expr_functor import ExprFunctor, post_order_visit
from .type_infer import infer_type, to_struct_info


class _Translator(ExprFunctor):
    """Emits the relax bindings of one Relay function body into `bb`."""

    def __init__(self, bb: BlockBuilder, mod: IRModule, env: dict, stack: tuple = ()):
        super().__init__()
        self.bb, self.mod, self.env, self.stack = bb, mod, env, stack

    def visit_var(self, v: Var) -> Any:
        try:
            return self.env[v]
        except KeyError:
            raise BuildError(f"relay.build: variable %{v.name_hint} is free in the body") from None

    def visit_constant(self, c: Constant) -> Any:
        return rx.const(c.data.numpy())

    def visit_tuple(self, tup: Tuple) -> Any:
        return rx.Tuple(tuple(self.visit(f) for f in tup.fields))

    def visit_tuple_getitem(self, item: TupleGetItem) -> Any:
        value = self.visit(item.tuple_value)
        if isinstance(value, rx.Tuple):
            return value.fields[item.index]
        return self.bb.emit(rx.TupleGetItem(value, item.index))

    def visit_call(self, c: Call) -> Any:
        args = [self.visit(a) for a in c.args]
        if isinstance(c.op, Op) and getattr(c.op.op_def, "canonicalize", None) is not None:
            types = [a.checked_type for a in c.args]
            return self.visit(c.op.op_def.canonicalize(list(c.args), types, c.attrs))
        if isinstance(c.op, Op):
            out = c.op.op_def.to_relax(self.bb.emit, args, c.attrs)
            return out if isinstance(out, rx.Var | rx.Constant | rx.Tuple) else self.bb.emit(out)
        func, name = c.op, "a local function"
        if isinstance(func, GlobalVar):
            name = f"@{func.name_hint}"
            if name in self.stack:
                raise BuildError(f"relay.build: {name} calls itself; recursion is not supported")
            func = self.mod[func]
        if not isinstance(func, Function):
            raise BuildError(f"relay.build: cannot call {type(func).__name__} {name}")
        return self.inline(func, args, name)

    def inline(self, func: Function, args: list, name: str) -> Any:
        """The body of `func` emitted here with its params bound to `args`."""
        env = dict(self.env)
        env.update(zip(func.params, args))
        return _Translator(self.bb, self.mod, env, (*self.stack, name)).visit(func.body)

    def visit_let(self, let: Let) -> Any:
        self.env[let.var] = self.visit(let.value)
        return self.visit(let.body)

    def visit_if(self, node: If) -> Any:
        """A relax If whose branches are blocks of their own (the function has no dataflow
        block then: relax keeps control flow outside dataflow)."""
        cond = self.visit(node.cond)
        branches = [self.branch(b) for b in (node.true_branch, node.false_branch)]
        return self.bb.emit(rx.If(cond, *branches))

    def branch(self, expr: Any) -> Any:
        """`expr` as a relax SeqExpr: its own bindings; what was computed before stays shared."""
        inner = _Translator(self.bb, self.mod, dict(self.env), self.stack)
        inner.memo_map = dict(self.memo_map)
        self.bb._begin_rewrite_block(False)
        value = inner.visit(expr)
        bindings = self.bb._end_rewrite_block()
        blocks = (rx.BindingBlock(tuple(bindings)),) if bindings else ()
        return rx.SeqExpr(blocks, value)

    def visit_function(self, func: Function) -> Any:
        raise BuildError("relay.build: a function used as a value (not called) is not supported")

    def visit_op(self, op: Op) -> Any:
        raise BuildError(f"relay.build: op {op.name} used as a value; call it")

    def visit_global_var(self, gv: GlobalVar) -> Any:
        raise BuildError(f"relay.build: @{gv.name_hint} used as a value; call it")


def to_relax(mod: IRModule | Function, func_name: str = "main") -> IRModule:
    """The relax IRModule of a Relay module's `func_name` (type-checked first)."""
    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if func_name in mod and isinstance(mod[func_name], rx.Function):
        return mod  # already relax: what relay.frontend's importers return
    mod = infer_type(mod)
    func = mod[func_name]
    if not isinstance(func, Function):
        raise BuildError(f"relay.build: @{func_name} is not a Relay function")
    bb = BlockBuilder()
    params = [rx.Var(p.name_hint, to_struct_info(p.checked_type)) for p in func.params]
    translator = _Translator(bb, mod, dict(zip(func.params, params)), (f"@{func_name}",))
    with bb.function(func_name, params):
        if _has_if(func.body):
            bb.emit_func_output(translator.visit(func.body))
        else:
            with bb.dataflow():
                gv = bb.emit_output(translator.visit(func.body))
            bb.emit_func_output(gv)
    return bb.get()


def _has_if(expr: Any) -> bool:
    found = []
    post_order_visit(expr, lambda e: found.append(e) if isinstance(e, If) else None)
    return bool(found)
