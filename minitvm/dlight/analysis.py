"""`dlight.analysis` (TVM's `tvm.s_tir.dlight.analysis`): what a rule reads off a schedule's
blocks, one `SBlockInfo` per block (its name, its iterators as "S"/"R"/"O" with the loop each
runs on), for rules written outside minitvm.

sch = tvm.s_tir.Schedule(func)
infos = normalize_prim_func(sch)  # [SBlockInfo("C", SSR)], or None
loops = sch.get_loops(infos[0].block_rv)
"""

from __future__ import annotations

from typing import Any

from ..error import ScheduleError
from ..tir.expr import IntImm, IterType, PrimExpr, Var
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.schedule import BlockRV, LoopRV, Schedule
from ..tir.stmt import Block, BlockRealize
from .base.analysis import blocks

_KIND = {IterType.DataPar: "S", IterType.CommReduce: "R"}  # any other iterator is "O"


class IterInfo:
    """One block iterator: its kind ("S" spatial, "R" reduction, "O" other), its variable, its
    extent and the loop it is bound to."""

    def __init__(self, kind: str, var: Var, dom: PrimExpr, loop_rv: LoopRV) -> None:
        self.kind = kind
        self.var = var
        self._dom = dom
        self.loop_rv = loop_rv

    @property
    def dom(self) -> int | PrimExpr:
        """The extent: an int when constant, else the expression (a symbolic batch)."""
        return int(self._dom.value) if isinstance(self._dom, IntImm) else self._dom

    def __repr__(self) -> str:
        return f'Iter("{self.kind}", {self.dom})'


class SBlockInfo:
    """A block of a schedule: its name, iterators (IterInfo) and handle."""

    def __init__(
        self, name: str, iters: list[IterInfo], block_rv: BlockRV, reduction_block: bool = False
    ) -> None:
        self.name = name
        self.iters = iters
        self.block_rv = block_rv
        self._reduction_block = reduction_block

    def dom(self) -> list[int | PrimExpr]:
        return [i.dom for i in self.iters]

    def dom_kind(self) -> str:
        """The iterator kinds in order, e.g. "SSR" for a matmul."""
        return "".join(i.kind for i in self.iters)

    def get_loops(self) -> list[LoopRV]:
        return [i.loop_rv for i in self.iters]

    def is_injective(self) -> bool:
        """Every iterator spatial: each output element is computed once, independently."""
        return all(k == "S" for k in self.dom_kind())

    def is_reduction(self) -> bool:
        return self._reduction_block

    def __repr__(self) -> str:
        return f'SBlockInfo("{self.name}", "{self.dom_kind()}", {self.dom()})'


BlockInfo = SBlockInfo  # the name before TVM 0.24


def _realize_of(sch: Schedule, block_rv: BlockRV) -> BlockRealize:
    block = sch.get(block_rv)
    for _, func in sch.mod.functions_items():
        if isinstance(func, PrimFunc):
            for realize in blocks(func):
                if realize.block is block:
                    return realize
    raise ScheduleError(f"block '{block.name_hint}' is not in the schedule's module")


def get_sblock_info(sch: Schedule, block_rv: BlockRV) -> SBlockInfo | None:
    """The SBlockInfo of one block; None unless each iterator is bound to exactly one of the
    block's loops (minitvm does not rewrite a block's layout to make it so, as TVM may)."""
    realize = _realize_of(sch, block_rv)
    loops = sch.get_loops(block_rv)
    loop_of = {id(sch.get(loop).loop_var): loop for loop in loops}
    iters = []
    for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        loop = loop_of.get(id(value)) if isinstance(value, Var) else None
        if loop is None:
            return None
        iters.append(IterInfo(_KIND.get(iv.iter_type, "O"), iv.var, iv.dom.extent, loop))
    if len(iters) != len(loops):
        return None  # loops binding no iterator (an unnormalized layout)
    reduction = any(i.kind == "R" for i in iters)
    return SBlockInfo(realize.block.name_hint, iters, block_rv, reduction)


get_block_info = get_sblock_info  # the name before TVM 0.24


def get_root_block(sch: Schedule, func_name: str = "main") -> BlockRV:
    """The root block of `func_name`."""
    body = sch.mod[func_name].body
    if not isinstance(body, BlockRealize):
        raise ScheduleError(
            f"get_root_block: the body of '{func_name}' is not a root block; write the function "
            "with blocks (TVMScript T.sblock or te.create_prim_func)"
        )
    return sch.get_block(body.block.name_hint, func_name)


def normalize_prim_func(sch: Schedule) -> list[SBlockInfo] | None:
    """The SBlockInfo of each block directly under the root, in program order; None when some
    block is not in normal form (see get_sblock_info) or the function has no root block."""
    try:
        children = sch.get_child_blocks(sch.get_block("root"))
    except ScheduleError:
        return None
    infos = [get_sblock_info(sch, b) for b in children]
    return None if any(i is None for i in infos) else infos


def collect_vars_used_in_prim_expr(expr: PrimExpr) -> set[Var]:
    """The variables `expr` reads."""
    found: set[Var] = set()
    post_order_visit(expr, lambda n: found.add(n) if isinstance(n, Var) else None)
    return found


def collect_block_iter_vars_used_in_access_region(block: Block, region: Any) -> set[Var]:
    """The iterators of `block` a buffer region's start indices use."""
    used: set[Var] = set()
    for rng in region:
        used |= collect_vars_used_in_prim_expr(rng.min)
    return used & {iv.var for iv in block.iter_vars}


__all__ = [
    "BlockInfo",
    "IterInfo",
    "SBlockInfo",
    "collect_block_iter_vars_used_in_access_region",
    "collect_vars_used_in_prim_expr",
    "get_block_info",
    "get_root_block",
    "get_sblock_info",
    "normalize_prim_func",
]
