"""`Stage.set_store_predicate`: a stage's block stores only where a condition holds.

The condition is written over the stage's IterVars (any of them: split parts, fused loops,
the original axes) and the thread axes its loops are bound to. After the schedule is
replayed, those are mapped to the block's loop variables and the condition is conjoined to
the block's predicate (`T.where`), so the whole element is skipped where it is false.
"""

from __future__ import annotations

from typing import Any

from ..error import ScheduleError
from ..tir.expr import IterType, PrimExpr, Var, logical_and
from ..tir.function import PrimFunc
from ..tir.functor import Mutator, post_order_visit, substitute
from ..tir.stmt import BlockRealize, For

_THREAD_KINDS = ("threadIdx", "blockIdx", "vthread")


class _AddPredicate(Mutator):
    def __init__(self, block_name: str, cond: PrimExpr, axes: list, threads: dict,
                 shown: PrimExpr) -> None:  # fmt: skip
        super().__init__()
        self.shown = shown  # the condition as the user wrote it
        self.block_name, self.cond, self.axes, self.done = block_name, cond, axes, False
        self.threads = threads  # loop var standing for a thread axis -> the axis's name
        self.enclosing: set[int] = set()

    def visit_For(self, loop: For) -> Any:
        self.enclosing.add(id(loop.loop_var))
        try:
            return self.generic_visit(loop)
        finally:
            self.enclosing.discard(id(loop.loop_var))

    def visit_BlockRealize(self, n: BlockRealize) -> Any:
        if n.block.name_hint != self.block_name:
            return self.generic_visit(n)
        self.done = True
        for v in _free_vars(self.cond):
            if id(v) in self.threads and id(v) not in self.enclosing:
                # the loop bound to that thread is elsewhere: its variable means nothing here
                raise ScheduleError(
                    f"set_store_predicate: the condition `{self.shown}` uses the thread axis "
                    f"'{self.threads[id(v)]}', but block '{self.block_name}' is not inside a "
                    "loop bound to it; to let one thread store, split an axis of the stage by "
                    "factor 1 and bind the inner part to that thread axis instead"
                )
        # the stage's original axes are the block's iter vars: their loop-var bindings
        cond = substitute(self.cond, dict(zip(self.axes, n.iter_values)))
        pred = n.predicate
        keep = getattr(pred, "value", 0) == 1 and pred.dtype.is_bool
        return n.replace(predicate=cond if keep else logical_and(pred, cond))


def _free_vars(e: PrimExpr) -> list[Var]:
    found: dict[int, Var] = {}
    post_order_visit(e, lambda n: found.setdefault(id(n), n) if isinstance(n, Var) else None)
    return list(found.values())


def apply_store_predicate(
    func: PrimFunc, stage: Any, block_name: str, loop_var_of: dict, threads: dict
) -> PrimFunc:
    """`func` with `stage.store_predicate` added to the predicate of its block `block_name`.

    `loop_var_of`: id(leaf IterVar) -> its loop variable; `threads`: id(thread axis var) ->
    the loop variable of the loop bound to that thread.
    """
    cond = stage.store_predicate
    vmap: dict[Var, PrimExpr] = {}
    for iv in stage.leaf_iter_vars:
        if id(iv) in loop_var_of and iv not in stage.initial:
            vmap[iv.var] = loop_var_of[id(iv)]
    own = {id(iv.var) for iv in stage.all_iter_vars}
    bound_reduce = {id(iv.var) for iv in stage.leaf_iter_vars if stage._is_bound(iv)}
    reduce_vars = {
        id(iv.var) for iv in stage.all_iter_vars if iv.iter_type is IterType.CommReduce
    } - bound_reduce
    thread_loops = {}
    for v in _free_vars(cond):
        if id(v) in threads:
            vmap[v] = threads[id(v)]
            thread_loops[id(threads[id(v)])] = v.name
        elif id(v) in reduce_vars:
            raise ScheduleError(
                f"set_store_predicate on stage '{stage.name}': the condition `{cond}` uses the "
                f"reduction loop '{v.name}'; skipping some updates of a reduction would leave "
                "its result half-initialized. Use te.sum(..., where=...) to skip elements"
            )
        elif v.name.split(".")[0] in _THREAD_KINDS:
            raise ScheduleError(
                f"set_store_predicate on stage '{stage.name}': the condition `{cond}` uses the "
                f"thread axis '{v.name}', but no loop of '{stage.name}' (or of a stage it is "
                "computed in) is bound to it; bind one with s[...].bind(loop, that_axis)"
            )
        elif id(v) not in own and stage._sch._owner_of_var(v) is not None:
            raise ScheduleError(
                f"set_store_predicate on stage '{stage.name}': the condition `{cond}` uses "
                f"'{v.name}', a loop of stage '{stage._sch._owner_of_var(v).name}' (or a thread "
                "axis no loop of this stage is bound to); use this stage's IterVars"
            )
    cond = substitute(cond, vmap)
    adder = _AddPredicate(
        block_name, cond, [iv.var for iv in stage.initial], thread_loops, stage.store_predicate
    )
    body = adder.visit(func.body)
    if not adder.done:
        raise ScheduleError(
            f"set_store_predicate on stage '{stage.name}': its block is gone (the stage was "
            "inlined); a predicate needs a stage that stores"
        )
    return func.replace(body=body)


__all__ = ["apply_store_predicate"]
