"""EliminateCommonSubexpr with TVM's semantics: a binding whose value (after earlier
replacements) repeats an earlier binding's value becomes `var = earlier_var`, and later uses of
`var` read `earlier_var` (DeadCodeElimination then drops the trivial binding if it is unused).

Scopes: a value bound in a dataflow block by a DataflowVar is not reused after the block; the
branches of an `If` see the bindings before it but not each other's; an inner function starts
afresh. Never merged: calls with side effects (impure ops, ExternFuncs, impure callees), DPS
packed calls and allocations (two equal calls make two objects), MatchCasts to different struct
infos. With `call_only`, only calls are merged.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from .. import expr as rx
from ..functor import ExprMutator, ExprVisitor
from ._util import map_functions
from .convert_dataflow import is_impure_call

# calls that create a new object each time they run, so two equal calls are not one value
_FRESH_OBJECT_OPS = frozenset(
    {
        "relax.call_dps_packed",
        "relax.call_inplace_packed",
        "relax.builtin.alloc_tensor",
        "relax.memory.alloc_storage",
        "relax.memory.alloc_tensor",
        "relax.vm.alloc_storage",
        "relax.vm.alloc_tensor",
    }
)


class _Unmergeable(ExprVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_call(self, call: rx.Call) -> None:
        op = call.op
        if (
            is_impure_call(call)
            or isinstance(op, rx.ExternFunc)
            or (isinstance(op, Op) and op.name in _FRESH_OBJECT_OPS)
        ):
            self.found = True
        super().visit_call(call)

    def visit_function(self, e: rx.Function) -> None:
        pass  # a closure's body runs when it is called, not here


def _mergeable(value: Any, call_only: bool) -> bool:
    if call_only and not isinstance(value, rx.Call):
        return False
    check = _Unmergeable()
    check.visit_expr(value)
    return not check.found


class _CSE(ExprMutator):
    def __init__(self, call_only: bool) -> None:
        super().__init__()
        self.call_only = call_only
        # structural hash -> [(value, match_cast struct info or None, [vars bound to it])]
        self.seen: dict[int, list[tuple[Any, Any, list[rx.Var]]]] = {}

    def visit_block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        if not isinstance(block, rx.DataflowBlock):
            return super().visit_block(block)
        saved_map = dict(self.var_map)
        out = super().visit_block(block)
        for entries in self.seen.values():  # block-local vars are gone after the block
            for entry in entries:
                entry[2][:] = [v for v in entry[2] if not isinstance(v, rx.DataflowVar)]
        self.var_map = saved_map
        return out

    def visit_binding(self, b: rx.Binding, block: rx.BindingBlock) -> list[rx.Binding]:
        value = self.visit_expr(b.value)
        cast = b.struct_info if isinstance(b, rx.MatchCast) else None
        if not _mergeable(value, self.call_only):
            return [b.replace(value=value)]
        key = structural_hash(value)
        for earlier, earlier_cast, holders in self.seen.get(key, []):
            if holders and structural_equal(earlier, value) and _same_cast(earlier_cast, cast):
                self.var_map[b.var] = holders[0]
                holders.append(b.var)
                return [rx.VarBinding(b.var, holders[0])]
        self.seen.setdefault(key, []).append((value, cast, [b.var]))
        return [b.replace(value=value)]

    def visit_if(self, e: rx.If) -> Any:
        cond = self.visit_expr(e.cond)
        branches = []
        for branch in (e.true_branch, e.false_branch):
            saved_map, saved_seen = dict(self.var_map), _copy_seen(self.seen)
            branches.append(self.visit_expr(branch))
            self.var_map, self.seen = saved_map, saved_seen
        return e.replace(cond=cond, true_branch=branches[0], false_branch=branches[1])

    def visit_function(self, func: rx.Function) -> rx.Function:
        if self.seen or self.var_map:  # an inner function: a fresh scope
            return _CSE(self.call_only).visit_function(func)
        return super().visit_function(func)


def _same_cast(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return structural_equal(a, b)


def _copy_seen(seen: dict) -> dict:
    return {k: [(v, c, list(h)) for v, c, h in entries] for k, entries in seen.items()}


def eliminate_common_subexpr_function(func: rx.Function, call_only: bool = False) -> rx.Function:
    return _CSE(call_only).visit_function(func)


def eliminate_common_subexpr(mod: IRModule, call_only: bool = False) -> IRModule:
    """CSE in every relax function of `mod` (see the module docstring)."""
    return map_functions(mod, lambda f: eliminate_common_subexpr_function(f, call_only))
