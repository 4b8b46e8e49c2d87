"""Remove blocks: bind iter vars to their values, guard predicates, allocate block buffers."""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ...ir.node import FrozenDict
from ..buffer import Buffer
from ..expr import IntImm, PrimExpr, Var
from ..function import PrimFunc
from ..functor import Mutator
from ..op import likely
from ..stmt import Allocate, BlockRealize, DeclBuffer, For, IfThenElse, Stmt
from ._pass import prim_func_pass

# Block annotations with these prefixes still mean something after lowering: they move to the
# innermost enclosing loop (where codegen reads them). Others (schedule bookkeeping) are dropped.
_KEPT_ANNOTATION_PREFIXES = ("pragma_",)


def allocate_buffer(buf: Buffer, body: Stmt) -> Allocate:
    """`Allocate` of `buf`'s memory around `body`, which sees `buf` through a DeclBuffer."""
    return Allocate(
        buf.data,
        buf.dtype,
        buf.shape,
        IntImm("bool", 1),
        DeclBuffer(buf, body),
        FrozenDict({"storage_scope": buf.storage_scope}),
    )


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


class _BlocksToLoops(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.binding: dict[int, PrimExpr] = {}
        self.keep: list[Any] = []  # keeps bound vars alive so their ids stay unique
        self.pending: list[dict] = [{}]  # annotations waiting for their enclosing loop

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.binding.get(id(v), v)

    def visit_For(self, loop: For) -> For:
        self.pending.append({})
        loop = self.generic_visit(loop)
        moved = self.pending.pop()
        if moved:
            loop = loop.replace(annotations=FrozenDict({**moved, **loop.annotations}))
        return loop

    def visit_BlockRealize(self, realize: BlockRealize) -> Stmt:
        block = realize.block
        if block.match_buffers:
            raise BuildError(
                f"block '{block.name_hint}' uses T.match_buffer on a region; lowering of "
                "match_buffer is not supported yet: index the source buffer directly instead"
            )
        values = [self.visit(v) for v in realize.iter_values]
        for iv, value in zip(block.iter_vars, values):
            self.binding[id(iv.var)] = value
            self.keep.append(iv.var)
        body = self.visit(block.body)
        for buf in reversed(block.alloc_buffers):
            body = allocate_buffer(self.visit(buf), body)
        predicate = self.visit(realize.predicate)
        if not _is_true(predicate):
            body = IfThenElse(likely(predicate), body)
        kept = {
            k: v for k, v in block.annotations.items() if k.startswith(_KEPT_ANNOTATION_PREFIXES)
        }
        self.pending[-1].update(kept)
        return body


def convert_blocks_to_loops(func: PrimFunc) -> PrimFunc:
    """Replace every BlockRealize by its body with iter vars substituted by their bindings.

    A non-trivial predicate becomes `if likely(pred)`; block alloc_buffers become `Allocate`
    statements at the block (plan_and_update_buffer_allocation_location moves them later).
    """
    mutator = _BlocksToLoops()
    # annotations of blocks outside every loop have no loop to live on and are dropped
    return func.replace(body=mutator.visit(func.body))


ConvertBlocksToLoops = prim_func_pass(convert_blocks_to_loops, "ConvertBlocksToLoops")
LowerOpaqueBlock = ConvertBlocksToLoops  # TVM's name for the same step
