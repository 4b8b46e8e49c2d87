"""Turn a block's `T.init()` into a guarded statement run on the first reduction iteration."""

from __future__ import annotations

from ..expr import EQ, IterType, PrimExpr, binary
from ..function import PrimFunc
from ..functor import Mutator
from ..op import all as all_of
from ..stmt import Block, IfThenElse, seq
from ._pass import prim_func_pass


def _first_iteration(block: Block) -> PrimExpr:
    """`rk0 == min0 and rk1 == min1 ...` over the block's reduction iter vars (True if none)."""
    conds = [
        binary(EQ, iv.var, iv.dom.min)
        for iv in block.iter_vars
        if iv.iter_type == IterType.CommReduce
    ]
    return all_of(*conds)


class _LowerInit(Mutator):
    def visit_Block(self, block: Block) -> Block:
        block = self.generic_visit(block)
        if block.init is None:
            return block
        cond = _first_iteration(block)
        init = block.init if _is_true(cond) else IfThenElse(cond, block.init)
        return block.replace(body=seq(init, block.body), init=None)


def _is_true(cond: PrimExpr) -> bool:
    return getattr(cond, "value", None) == 1 and cond.dtype.is_bool


def lower_init_block(func: PrimFunc) -> PrimFunc:
    """`block { init: I; body: B }` → `block { if (reduce vars at their min) I; B }`."""
    return func.replace(body=_LowerInit().visit(func.body))


LowerInitBlock = prim_func_pass(lower_init_block, "LowerInitBlock")
