"""CanonicalizeBindings: remove the bindings that only rename a value.

Three kinds go, as in TVM's pass of the same name:
- `y = x` (a var bound to a var): later uses read `x`. A dataflow output bound to a dataflow var
  (`gv = lv` at the end of a block) instead takes over `lv`'s definition, since `lv` is not
  visible after the block.
- `y = R.match_cast(x, sinfo)` when `x` is already known to have `sinfo` and the cast defines no
  new symbolic dim: the same as `y = x`.
- `z = t[i]` where `t` was bound to a tuple literal: `z` reads the field.
A replacement happens only when the kept variable's struct info is at least as precise as the
removed one's, so no use loses shape information. Last, a Var bound in a dataflow block and used
nowhere after the block becomes a DataflowVar (it need not be an output), as in TVM.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from .. import expr as rx
from .. import struct_info as si
from ..analysis import _same, struct_info_lca
from ..functor import ExprMutator, used_vars


def _same_sinfo(a: si.StructInfo, b: si.StructInfo) -> bool:
    """Equal struct infos with symbolic dims compared as they are (n is not m)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, si.TensorStructInfo):
        return (
            a.dtype == b.dtype
            and a.ndim == b.ndim
            and (a.shape is None) == (b.shape is None)
            and (a.shape is None or _same(a.shape, b.shape))
        )
    if isinstance(a, si.TupleStructInfo):
        return len(a.fields) == len(b.fields) and all(
            _same_sinfo(x, y) for x, y in zip(a.fields, b.fields)
        )
    if isinstance(a, si.ShapeStructInfo):
        return a.ndim == b.ndim and (
            (a.values is None and b.values is None)
            or (a.values is not None and b.values is not None and _same(a.values, b.values))
        )
    if isinstance(a, si.PrimStructInfo):
        return a.dtype == b.dtype and _same(a.value, b.value)
    return _same(a, b)


def _at_least_as_precise(kept: si.StructInfo, removed: si.StructInfo) -> bool:
    """Whether every value of `kept`'s struct info is a value of `removed`'s."""
    return _same_sinfo(struct_info_lca(kept, removed), removed)


class _Canonicalizer(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.tuples: dict[rx.Var, rx.Tuple] = {}

    def visit_tuple_getitem(self, e: rx.TupleGetItem) -> Any:
        value = self.visit_expr(e.tuple_value)
        literal = self.tuples.get(value) if isinstance(value, rx.Var) else None
        if literal is not None and 0 <= e.index < len(literal.fields):
            return literal.fields[e.index]
        return e.replace(tuple_value=value)

    def visit_binding(self, b: rx.Binding, block: rx.BindingBlock) -> list[rx.Binding]:
        value = self.visit_expr(b.value)
        if isinstance(b, rx.MatchCast) and not (
            isinstance(value, rx.Var)
            and _same_sinfo(value.struct_info, b.struct_info)
            and _at_least_as_precise(value.struct_info, b.var.struct_info)
        ):
            return [b.replace(value=value)]
        if isinstance(value, rx.Tuple):
            self.tuples[b.var] = value
        replaceable = (
            isinstance(value, rx.Var)
            and _at_least_as_precise(value.struct_info, b.var.struct_info)
            # a var that outlives its dataflow block cannot be replaced by one that does not
            and (isinstance(b.var, rx.DataflowVar) or not isinstance(value, rx.DataflowVar))
        )
        if replaceable:
            self.var_map[b.var] = value
            return []
        if isinstance(b, rx.MatchCast):
            return [rx.VarBinding(b.var, value)]
        return [b.replace(value=value)]

    def visit_block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        block = super().visit_block(block)
        if isinstance(block, rx.DataflowBlock):
            block = _hoist_outputs(block)
        return block


def _hoist_outputs(block: rx.DataflowBlock) -> rx.DataflowBlock:
    """`lv = f(...); ...; gv = lv` becomes `gv = f(...); ...` with `lv` read as `gv`."""
    bindings = list(block.bindings)
    defined = {b.var: i for i, b in enumerate(bindings) if isinstance(b, rx.VarBinding)}
    renames: dict[rx.Var, rx.Var] = {}
    drop: set[int] = set()
    for i, b in enumerate(bindings):
        value = b.value
        if (
            isinstance(b, rx.VarBinding)
            and not isinstance(b.var, rx.DataflowVar)
            and isinstance(value, rx.DataflowVar)
            and value in defined
            and value not in renames
            and defined[value] < i
            and _at_least_as_precise(value.struct_info, b.var.struct_info)
        ):
            renames[value] = b.var
            drop.add(i)
    if not renames:
        return block
    out = []
    for i, b in enumerate(bindings):
        if i in drop:
            continue
        new_value = _rename(b.value, renames)
        new_var = renames.get(b.var, b.var)
        if new_var is not b.var or new_value is not b.value:
            b = (
                rx.VarBinding(new_var, new_value)
                if new_var is not b.var
                else b.replace(value=new_value)
            )
        out.append(b)
    return rx.DataflowBlock(tuple(out))


def _rename(e: Any, renames: dict) -> Any:
    if not (used_vars(e) & renames.keys()):
        return e
    mutator = ExprMutator()
    mutator.var_map.update(renames)
    return mutator.visit_expr(e)


class _BlockLocals(ExprMutator):
    """Vars bound in a dataflow block and read nowhere after it become DataflowVars."""

    def visit_seq(self, seq: rx.SeqExpr) -> rx.SeqExpr:
        seq = super().visit_seq(seq)  # nested sequences (branches, inner functions) first
        read_later = used_vars(seq.body)
        blocks = []
        for block in reversed(seq.blocks):
            if isinstance(block, rx.DataflowBlock):
                block = _demote(block, read_later)
            for b in block.bindings:
                read_later |= used_vars(b.value)
            blocks.append(block)
        blocks.reverse()
        if all(a is b for a, b in zip(blocks, seq.blocks)):
            return seq
        return rx.SeqExpr(tuple(blocks), seq.body)


def _demote(block: rx.DataflowBlock, read_later: set[rx.Var]) -> rx.DataflowBlock:
    renames = {
        b.var: rx.DataflowVar(b.var.name_hint, b.var.struct_info)
        for b in block.bindings
        if not isinstance(b.var, rx.DataflowVar) and b.var not in read_later
    }
    if not renames:
        return block
    return rx.DataflowBlock(
        tuple(
            b.replace(var=renames.get(b.var, b.var), value=_rename(b.value, renames))
            for b in block.bindings
        )
    )


def canonicalize_bindings(mod: IRModule) -> IRModule:
    """Every relax function of `mod` with its renaming bindings removed."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function):
            new = _BlockLocals().visit_function(_Canonicalizer().visit_function(func))
            if new is not func:
                out[gv] = new
    return out
