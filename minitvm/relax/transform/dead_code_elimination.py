"""DeadCodeElimination: drop bindings whose variables are never used, and functions that no
entry (named, or externally exposed) reaches."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.module import GlobalVar, IRModule
from ..expr import Call, Function, MatchCast, SeqExpr, Var
from ..functor import ExprVisitor, used_vars


def remove_unused_bindings(func: Function) -> Function:
    """Drop bindings whose var is unused (in one backward sweep; calls in impure functions stay)."""
    if not isinstance(func.body, SeqExpr):
        return func
    from ..analysis import definable_tir_vars_in_struct_info  # analysis imports this module

    seq = func.body
    live: set[Var] = set(used_vars(seq.body))
    param_dims = {
        id(v) for p in func.params for v in definable_tir_vars_in_struct_info(p.struct_info)
    }
    new_blocks = []
    for block in reversed(seq.blocks):
        kept = []
        for b in reversed(block.bindings):
            if (
                b.var in live
                or (not func.is_pure and isinstance(b.value, Call))
                or _defines_dims(b, param_dims)
            ):
                kept.append(b)
                live |= used_vars(b.value)
        if kept:
            kept.reverse()
            new_blocks.append(
                block if len(kept) == len(block.bindings) else type(block)(tuple(kept))
            )
    new_blocks.reverse()
    if len(new_blocks) == len(seq.blocks) and all(a is b for a, b in zip(new_blocks, seq.blocks)):
        return func
    return func.replace(body=SeqExpr(tuple(new_blocks), seq.body))


def _defines_dims(b, param_dims: set[int]) -> bool:
    """A MatchCast that binds a symbolic dim the parameters do not: later struct infos (and the
    kernels' shapes) may read the dim even when the cast's variable is unused, so it stays."""
    if not isinstance(b, MatchCast):
        return False
    from ..analysis import definable_tir_vars_in_struct_info

    return any(id(v) not in param_dims for v in definable_tir_vars_in_struct_info(b.struct_info))


class _Callees(ExprVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_global_var(self, gv: GlobalVar) -> None:
        self.found.add(gv.name_hint)


def dead_code_elimination(mod: IRModule, entry_functions: Sequence[str] | None = None) -> IRModule:
    """Remove unused bindings in every relax function, then the functions unreachable from the
    entries: those named plus every externally exposed one (a `global_symbol` attribute), as in
    TVM. A module with no relax function among them keeps every relax function and its callees."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, Function):
            out[gv] = remove_unused_bindings(func)
    entries = list(entry_functions or ())
    entries += [gv.name_hint for gv, f in out.functions_items() if f.attrs.get("global_symbol")]
    if not any(isinstance(out[name], Function) for name in entries if name in out):
        # no graph-level entry (a module built without names): every relax function is one
        entries += [gv.name_hint for gv, f in out.functions_items() if isinstance(f, Function)]
    if not entries:
        return out
    reached, todo = set(), list(entries)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        if name not in out:
            return out  # a callee outside the module: what it reaches is unknown (as TVM)
        reached.add(name)
        func = out[name]
        if isinstance(func, Function):
            finder = _Callees()
            finder.visit_expr(func)
            todo.extend(finder.found)
    for name in list(out):
        if name not in reached:
            out.remove(name)
    return out
