"""Make every block opaque: its iter vars are replaced by the values they are bound to.

After this pass a block has no iter vars and its BlockRealize no iter values; reads, writes,
allocations and body index directly with the loop expressions. Functions made by the classic
TE schedule path (attr `from_legacy_te_schedule`) are returned unchanged, as in TVM.
"""

from __future__ import annotations

from ...error import BuildError
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..stmt import Block, BlockRealize, Stmt
from ._pass import prim_func_pass


def _check_no_own_vars(realize: BlockRealize) -> None:
    """Raise when the predicate or bindings use the block's own iter vars (defined only inside)."""
    own = {id(iv.var): iv.var.name for iv in realize.block.iter_vars}
    seen: list[str] = []
    for e in (realize.predicate, *realize.iter_values):
        post_order_visit(e, lambda n: seen.append(own[id(n)]) if id(n) in own else None)
    if seen:
        raise BuildError(
            f"ConvertBlocksToOpaque: block '{realize.block.name_hint}': variable '{seen[0]}' "
            "occurs in the predicate or iter_values of the block but is defined only inside it; "
            "write the predicate (T.where) in terms of the enclosing loop variables"
        )


class _Opaque(Mutator):
    def visit_BlockRealize(self, realize: BlockRealize) -> Stmt:
        _check_no_own_vars(realize)
        block = realize.block
        if block.init is not None:
            raise BuildError(
                f"ConvertBlocksToOpaque: block '{block.name_hint}' has an init part; run "
                "LowerInitBlock first"
            )
        inner = self.visit(block)  # nested blocks first; their values may use this block's vars
        values = {id(iv.var): v for iv, v in zip(block.iter_vars, realize.iter_values)}
        if values:
            inner = substitute(inner.replace(iter_vars=()), lambda v: values.get(id(v)))
        predicate = self.visit(realize.predicate)
        if inner is block and not realize.iter_values and predicate is realize.predicate:
            return realize
        return BlockRealize((), predicate, inner)

    def visit_Block(self, block: Block) -> Stmt:
        return self.generic_visit(block)


def convert_blocks_to_opaque(func: PrimFunc) -> PrimFunc:
    """Substitute each block's iter vars by their bindings and drop the iter vars."""
    if func.attrs.get("from_legacy_te_schedule"):
        return func
    return func.replace(body=_Opaque().visit(func.body))


ConvertBlocksToOpaque = prim_func_pass(convert_blocks_to_opaque, "ConvertBlocksToOpaque")
