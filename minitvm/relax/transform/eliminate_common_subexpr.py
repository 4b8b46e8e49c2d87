"""EliminateCommonSubexpr: a binding whose value repeats an earlier one in the same dataflow
block reuses the earlier variable."""

from __future__ import annotations

from ...ir.module import IRModule
from ...ir.structural import structural_equal, structural_hash
from ..expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    ExternFunc,
    Function,
    Op,
    VarBinding,
)
from ..functor import ExprMutator
from ._util import map_functions

_IMPURE = (
    "relax.call_dps_packed",
    "relax.call_inplace_packed",
)  # may have side effects: never merged


class _CSE(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[int, list[tuple]] = {}

    def visit_block(self, block: BindingBlock) -> BindingBlock:
        self.seen = {}
        return super().visit_block(block)

    def visit_binding(self, b: Binding, block: BindingBlock) -> list[Binding]:
        value = self.visit_expr(b.value)
        if (
            not isinstance(block, DataflowBlock)
            or not isinstance(b, VarBinding)
            or not _mergeable(value)
        ):
            return [b.replace(value=value)]
        key = structural_hash(value)
        for earlier_value, earlier_var in self.seen.get(key, []):
            if structural_equal(earlier_value, value):
                if isinstance(b.var, DataflowVar):
                    self.var_map[b.var] = earlier_var
                    return []
                return [b.replace(value=earlier_var)]  # an output var keeps its name
        self.seen.setdefault(key, []).append((value, b.var))
        return [b.replace(value=value)]


def _mergeable(value) -> bool:
    """Calls of pure ops only: a registered function (ExternFunc) may make state, so two equal
    calls (two KV caches created alike) are two objects."""
    if not isinstance(value, Call) or isinstance(value.op, ExternFunc):
        return False
    return not (isinstance(value.op, Op) and value.op.name in _IMPURE)


def eliminate_common_subexpr_function(func: Function) -> Function:
    return _CSE().visit_function(func)


def eliminate_common_subexpr(mod: IRModule) -> IRModule:
    """CSE inside the dataflow blocks of every relax function."""
    return map_functions(mod, eliminate_common_subexpr_function)
