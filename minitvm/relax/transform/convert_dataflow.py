"""ConvertToDataflow: runs of pure bindings outside dataflow blocks become dataflow blocks.

A binding can join a dataflow block unless its value is an `If` or a call with side effects
(an impure op such as R.print, an ExternFunc, or a callee whose function is impure). A run of
at least `min_size` such bindings becomes a block; a shorter run stays where it is unless it
continues an existing dataflow block, which absorbs it. CanonicalizeBindings then turns the
block's variables that nothing after it reads into DataflowVars (TVM's pass does the same).
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...ir.transform import Pass
from .. import expr as rx
from .. import struct_info as si
from ..functor import ExprMutator
from .canonicalize_bindings import canonicalize_bindings

# ops whose calls have side effects (they cannot move into a dataflow block)
IMPURE_OPS = frozenset({"relax.print", "relax.call_packed", "relax.assert_op"})


def is_impure_call(value: Any, mod: IRModule | None = None) -> bool:
    """Whether `value` is a call with side effects: an impure op, an ExternFunc, a closure whose
    struct info says impure, or a function of `mod` declared `pure=False`."""
    if not isinstance(value, rx.Call):
        return False
    op = value.op
    if isinstance(op, Op):
        return op.name in IMPURE_OPS
    if isinstance(op, rx.ExternFunc):
        return True
    if isinstance(op, GlobalVar) and mod is not None and op.name_hint in mod:
        callee = mod[op.name_hint]
        return isinstance(callee, rx.Function) and not callee.is_pure
    sinfo = getattr(op, "struct_info", None)
    return isinstance(sinfo, si.FuncStructInfo) and not sinfo.purity


class _Extractor(ExprMutator):
    def __init__(self, mod: IRModule, min_size: int) -> None:
        super().__init__()
        self.mod, self.min_size = mod, min_size

    def movable(self, b: rx.Binding) -> bool:
        return not isinstance(b.value, rx.If) and not is_impure_call(b.value, self.mod)

    def visit_seq(self, seq: rx.SeqExpr) -> rx.SeqExpr:
        seq = super().visit_seq(seq)  # branches and inner functions first
        blocks: list[rx.BindingBlock] = []
        plain: list[rx.Binding] = []  # bindings that stay outside, not yet emitted
        run: list[rx.Binding] = []  # the current run of movable bindings
        continues_block = False  # the run starts with an existing dataflow block

        def close_run() -> None:
            nonlocal run, plain, continues_block
            if run and (len(run) >= self.min_size or continues_block):
                if plain:
                    blocks.append(rx.BindingBlock(tuple(plain)))
                blocks.append(rx.DataflowBlock(tuple(run)))
                plain = []
            else:
                plain.extend(run)
            run, continues_block = [], False

        for block in seq.blocks:
            if isinstance(block, rx.DataflowBlock):
                run.extend(block.bindings)
                continues_block = True
                continue
            for b in block.bindings:
                if self.movable(b):
                    run.append(b)
                else:
                    close_run()
                    plain.append(b)
        close_run()
        if plain:
            blocks.append(rx.BindingBlock(tuple(plain)))
        if _shape(blocks) == _shape(seq.blocks):
            return seq
        return rx.SeqExpr(tuple(blocks), seq.body)


def _shape(blocks: Any) -> list[tuple[type, tuple[int, ...]]]:
    return [(type(b), tuple(id(x) for x in b.bindings)) for b in blocks]


def convert_to_dataflow(mod: IRModule, min_size: int = 2) -> IRModule:
    """Every relax function of `mod` with its runs of pure bindings in dataflow blocks."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function):
            new = _Extractor(mod, min_size).visit_function(func)
            if new is not func:
                out[gv] = new
    return canonicalize_bindings(out)


def ConvertToDataflow(min_size: int = 2) -> Pass:
    """Runs of at least `min_size` pure bindings become dataflow blocks (convert_dataflow.py)."""
    return Pass(lambda mod: convert_to_dataflow(mod, min_size), "ConvertToDataflow")
