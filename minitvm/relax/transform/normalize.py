"""Normalize: put relax functions in the normal form the parser and BlockBuilder produce.

IR built by hand (`relax.Function([x], relax.op.multiply(relax.op.add(x, x), ...))`) may nest
calls, nest SeqExprs and leave a function body or If branch as a bare call. Normal form, as in
TVM's `relax.transform.Normalize`:
- every function body and If branch is a SeqExpr;
- call arguments, tuple fields' items and If conditions are leaves (nested calls get bound
  to fresh variables just before their use);
- a SeqExpr bound or returned inside another is spliced into the enclosing bindings, and
  neighbouring blocks of the same kind (dataflow or not) are merged; empty blocks go away.
"""

from __future__ import annotations

from typing import Any

from ...error import MiniTVMError
from ...ir.module import IRModule
from ...ir.structural import structural_equal
from .. import expr as rx
from .. import struct_info as si
from ..analysis import struct_info_lca
from ..block_builder import BlockBuilder


class _Normalizer:
    def __init__(self, mod: IRModule | None) -> None:
        self._bb = BlockBuilder(mod)  # struct info of calls to the module's functions
        self._blocks: list[tuple[bool, list]] = []  # the open scope: (is_dataflow, bindings)
        self._remap: dict = {}  # vars given the struct info of their value (see _typed_var)

    def function(self, func: rx.Function) -> rx.Function:
        body = self.seq(func.body)
        return func.replace(body=body, ret_struct_info=_refined_ret(func.ret_struct_info, body))

    def seq(self, expr: rx.Expr) -> rx.SeqExpr:
        """`expr` as a SeqExpr of its own scope whose result is a leaf (or a tuple of them)."""
        outer, self._blocks = self._blocks, []
        try:
            body = self._splice(expr, dataflow=False)
            if not rx.is_leaf(body) and not isinstance(body, rx.Tuple):
                body = self._leaf(body, dataflow=False)
            blocks = [(df, tuple(bs)) for df, bs in self._blocks if bs]
        finally:
            self._blocks = outer
        if isinstance(expr, rx.SeqExpr) and body is expr.body and _same_blocks(expr, blocks):
            return expr
        kinds = {True: rx.DataflowBlock, False: rx.BindingBlock}
        return rx.SeqExpr(tuple(kinds[df](bs) for df, bs in blocks), body)

    def _emit(self, binding: rx.Binding, dataflow: bool) -> None:
        if self._blocks and self._blocks[-1][0] == dataflow:
            self._blocks[-1][1].append(binding)
        else:
            self._blocks.append((dataflow, [binding]))

    def _splice(self, expr: rx.Expr, dataflow: bool) -> rx.Expr:
        """Emit the bindings of `expr` (when a SeqExpr) into the open scope; return its value
        with leaf operands."""
        while isinstance(expr, rx.SeqExpr):
            for block in expr.blocks:
                inner_df = isinstance(block, rx.DataflowBlock)
                if dataflow and not inner_df:
                    raise MiniTVMError(
                        "Normalize: a non-dataflow block is nested inside a dataflow block; "
                        "move the impure bindings out of the R.dataflow() region"
                    )
                for binding in block.bindings:
                    value = self._splice(binding.value, inner_df)
                    binding = binding.replace(value=value)
                    if isinstance(binding, rx.VarBinding):
                        binding = binding.replace(var=self._typed_var(binding.var, value))
                    self._emit(binding, inner_df)
            expr = expr.body
        return self._value(expr, dataflow)

    def _typed_var(self, var: rx.Var, value: rx.Expr) -> rx.Var:
        """`var`, or a copy carrying `value`'s struct info when `var` was left untyped
        (`relax.Var("y")` is `R.Object`), as TVM's Normalize fills in undefined struct info."""
        if type(var.struct_info) is not si.ObjectStructInfo:
            return var
        try:
            sinfo = self._bb.infer_struct_info(value)
        except MiniTVMError:  # not inferable here: the binding keeps its declared R.Object
            return var
        if type(sinfo) is si.ObjectStructInfo:
            return var
        new = type(var)(var.name_hint, sinfo)
        self._remap[var] = new
        return new

    def _value(self, expr: Any, dataflow: bool) -> Any:
        if isinstance(expr, rx.Var):
            return self._remap.get(expr, expr)
        if isinstance(expr, rx.Call):
            return self._items(expr, "args", dataflow)
        if isinstance(expr, rx.Tuple):
            return self._items(expr, "fields", dataflow)
        if isinstance(expr, rx.TupleGetItem):
            return expr.replace(tuple_value=self._leaf(expr.tuple_value, dataflow))
        if isinstance(expr, rx.If):
            return expr.replace(
                cond=self._leaf(expr.cond, dataflow),
                true_branch=self.seq(expr.true_branch),
                false_branch=self.seq(expr.false_branch),
            )
        if isinstance(expr, rx.Function):
            return self.function(expr)
        return expr

    def _items(self, expr: rx.Expr, field: str, dataflow: bool) -> rx.Expr:
        old = getattr(expr, field)
        new = tuple(self._leaf(a, dataflow) for a in old)
        return expr.replace(**{field: new}) if any(a is not b for a, b in zip(new, old)) else expr

    def _leaf(self, expr: Any, dataflow: bool) -> Any:
        if isinstance(expr, rx.Var):
            return self._remap.get(expr, expr)
        if rx.is_leaf(expr) or not isinstance(expr, rx.Expr):
            return expr
        if isinstance(expr, rx.Tuple):  # tuples stay inline, as BlockBuilder.normalize keeps them
            return self._value(expr, dataflow)
        value = self._splice(expr, dataflow)
        if rx.is_leaf(value):
            return value
        sinfo = self._bb.infer_struct_info(value)
        var = rx.DataflowVar("lv", sinfo) if dataflow else rx.Var("gv", sinfo)
        self._emit(rx.VarBinding(var, value), dataflow)
        return var


def _refined_ret(ret: si.StructInfo, body: rx.SeqExpr) -> si.StructInfo:
    """The declared return struct info, or the normalized body's when that is more specific
    (TVM's Function constructor does this for a normalized body)."""
    result = body.body
    if not (rx.is_leaf(result) or isinstance(result, rx.Tuple)):
        return ret
    body_sinfo = result.struct_info
    if _is_base_of(ret, body_sinfo) and not structural_equal(ret, body_sinfo):
        return body_sinfo
    return ret


def _is_base_of(base: si.StructInfo, derived: si.StructInfo) -> bool:
    """Whether every value of struct info `derived` is also an instance of `base`."""
    return structural_equal(struct_info_lca(base, derived), base, map_free_vars=False)


def _same_blocks(seq: rx.SeqExpr, blocks: list) -> bool:
    """Whether `blocks` holds exactly the blocks of `seq`, binding for binding."""
    return len(seq.blocks) == len(blocks) and all(
        isinstance(old, rx.DataflowBlock) == df
        and len(old.bindings) == len(bs)
        and all(a is b for a, b in zip(old.bindings, bs))
        for old, (df, bs) in zip(seq.blocks, blocks)
    )


def normalize_function(func: rx.Function, mod: IRModule | None = None) -> rx.Function:
    """`func` in normal form; `mod` resolves the struct info of calls to its functions."""
    return _Normalizer(mod).function(func)


def normalize(mod: IRModule) -> IRModule:
    """Every relax function of `mod` in normal form."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function):
            new = normalize_function(func, mod)
            if new is not func:
                out[gv] = new
    return out
