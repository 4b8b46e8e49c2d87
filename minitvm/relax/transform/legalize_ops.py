"""LegalizeOps: every high-level op call becomes `call_tir` of a PrimFunc made from its TE
definition in `topi` (identical PrimFuncs are shared)."""

from __future__ import annotations

from ...error import MiniTVMError
from ...ir.module import IRModule
from ..block_builder import BlockBuilder
from ..expr import Binding, BindingBlock, Call, Function, Op
from ..functor import ExprMutator
from ..op.shape_ops import BUILTIN_LOWERING


class _Legalizer(ExprMutator):
    def __init__(self, bb: BlockBuilder) -> None:
        super().__init__()
        self.bb = bb

    def visit_call(self, call: Call):
        call = super().visit_call(call)
        op = call.op
        lower = BUILTIN_LOWERING.get(op.name) if isinstance(op, Op) else None
        lowered = lower(call) if lower is not None else None
        if lowered is not None:  # a VM builtin does it (shape values, run-time checks)
            return lowered
        if not isinstance(op, Op) or op.op_def is None or op.op_def.te is None:
            return call
        short = op.name.split(".", 1)[1].replace(".", "_")
        try:
            return self.bb.call_te(
                op.op_def.te,
                *call.args,
                **dict(call.attrs),
                primfunc_name_hint=short,
                _canonical_names=True,
            )
        except MiniTVMError as err:
            raise type(err)(f"LegalizeOps: cannot legalize {op.name}: {err}") from err

    def visit_binding(self, b: Binding, block: BindingBlock) -> list[Binding]:
        return [b.replace(value=self.visit_expr(b.value))]


def legalize_ops(mod: IRModule) -> IRModule:
    """Replace high-level op calls by `call_tir`s of TE-generated PrimFuncs added to the module."""
    bb = BlockBuilder(mod)
    updates: dict = {}
    for gv, func in mod.functions_items():
        if isinstance(func, Function):
            new = _Legalizer(bb).visit_function(func)
            if new is not func:
                updates[gv] = new
    out = bb.get()
    for gv, func in updates.items():
        out[gv] = func
    return out
