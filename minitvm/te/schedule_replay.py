"""Lowering a classic TE schedule: `te.create_prim_func(args)`, then the Stage records replayed on a
`tir.Schedule` (cache stages first, then stages from the outputs back to the inputs, each
stage's attachment before its own loop actions), and TVM's ScheduleOps over it."""

from __future__ import annotations

from typing import Any

from ..error import ScheduleError, TargetError
from ..tir.expr import IterType, IterVar
from ..tir.function import PrimFunc
from .group import group_attachment
from .operation import ComputeOp, PlaceholderOp
from .schedule import Schedule, Stage
from .tensor import Tensor


def _split_outputs(sch: Schedule, args: list, outputs: tuple) -> dict:
    """id(op) -> its live outputs, for multi-output elementwise stages computed at a loop:
    they become one block per output, since a block writing several buffers cannot be moved.
    An output that no stage reads and that is neither an argument nor a schedule output is
    dead: it gets no block."""
    from .bound import loads_of

    wanted = {id(st.op): st for st in sch.stage_map.values()}
    candidates = [
        st
        for st in wanted.values()
        if isinstance(st.op, ComputeOp)
        and st.op.num_outputs > 1
        and not st.op.reduce_axis
        and st.attach.kind == "at"
        and not any(a[0] == "tensorize" for a in st.actions)
    ]
    out: dict = {}
    for st in candidates:
        keep = []
        for k, t in enumerate(st.op.outputs):
            used = any(isinstance(a, Tensor) and a == t for a in args) or t in outputs
            for other in wanted.values():
                body = getattr(other.op, "body", None)
                if (
                    body is not None
                    and loads_of(body, [t])
                    or getattr(other.op, "source", None) == t
                ):
                    used = True
            if used:
                keep.append(k)
        if keep:
            out[id(st.op)] = tuple(keep)
    return out


class _Replay:
    """Applies a te Schedule's record to a tir.Schedule of create_prim_func(args)."""

    def __init__(self, te_sch: Schedule, args: list) -> None:
        from ..tir.schedule import Schedule as TirSchedule
        from .to_tir import create_prim_func_with_blocks

        self.te = te_sch
        # Outputs left out of the arguments are still computed (into internal buffers).
        outputs = tuple(
            t for op in te_sch.outputs if not isinstance(op, PlaceholderOp) for t in op.outputs
        )
        # An inlined stage that is also an argument is still written (the caller reads it);
        # its consumers get the inlined expression.
        copies = tuple(
            t
            for st in te_sch.stage_map.values()
            if st.attach.kind == "inline" and isinstance(st.op, ComputeOp)
            for t in st.op.outputs
            if any(isinstance(a, Tensor) and a == t for a in args)
        )
        split = _split_outputs(te_sch, args, outputs)
        func, block_of = create_prim_func_with_blocks(
            list(args), also_compute=outputs, inline_copies=copies, split_outputs=split
        )
        self.args = list(args)
        self.sch = TirSchedule(func)
        self.block: dict[int, Any] = {}
        self.more_blocks: dict[int, list] = {}  # a split multi-output stage's other blocks
        for op, bname in block_of.items():
            key = op[0] if isinstance(op, tuple) else op
            stage = te_sch.stage_map.get(id(key))
            if stage is None:
                continue
            if isinstance(op, tuple):
                self.more_blocks.setdefault(id(stage), []).append(self.sch.get_block(bname))
            else:
                self.block[id(stage)] = self.sch.get_block(bname)
        self.loop: dict[int, Any] = {}

    def _buffer_of(self, tensor: Tensor) -> Any:
        for n, a in enumerate(self.args):
            if isinstance(a, Tensor) and a == tensor:
                func = self.sch.mod["main"]
                return func.buffer_map[func.params[n]]
        stage = self.te.stage_map.get(id(tensor.op))
        if stage is None or id(stage) not in self.block:
            raise ScheduleError(f"'{tensor.name}' is neither an argument nor computed here")
        return self.sch.get(self.block[id(stage)]).writes[0].buffer

    def _map_loops(self, stage: Stage, names: bool) -> None:
        loops = self.sch.get_loops(self.block[id(stage)])
        mine = loops[len(loops) - len(stage.initial) :]
        for iv, lp in zip(stage.initial, mine):
            self.loop[id(iv)] = lp
            if names:
                self.sch._rename_loop(lp, iv.var.name)

    def _structural(self) -> None:
        for action in self.te._structural:
            if action[0] == "cache_read":
                _, tensor, scope, readers, stage = action
                buf = self._buffer_of(tensor)
                first = self.block[id(readers[0])]
                reads = self.sch.get(first).reads
                index = next((i for i, r in enumerate(reads) if r.buffer is buf), None)
                if index is None:
                    raise ScheduleError(
                        f"cache_read of '{tensor.name}' for '{readers[0].op.name}': that stage "
                        "no longer reads it once the schedule's other primitives are applied "
                        "(an inline or cache_write rewrote it); cache_read from the stages "
                        "that still read it"
                    )
                consumers = [self.block[id(r)] for r in readers]
                self.block[id(stage)] = self.sch.cache_read(first, index, scope, consumers)
            elif action[0] == "set_scope":
                _, stage, scope = action
                block = self.block[id(stage)]
                for n in range(len(self.sch.get(block).writes)):
                    self.sch.set_scope(block, n, scope)
            elif action[0] == "transform_layout":
                self._transform_layout(*action[1:])
            elif action[0] == "storage_align":
                _, stage, axis, factor, offset = action
                self.sch.storage_align(self.block[id(stage)], 0, axis, factor, offset)
            else:
                _, tensor, scope, stage, cache_stage = action
                block = self.block[id(stage)]
                self.block[id(cache_stage)] = block
                self.block[id(stage)] = self.sch.cache_write(block, 0, scope)

    def _transform_layout(self, stage: Stage, imap: Any, separators: tuple) -> None:
        """The tir layout change of `stage`'s buffer, at its writer (or a reader of an input)."""
        if isinstance(stage.op, PlaceholderOp):
            buf = self._buffer_of(stage.op.output(0))
            where = None
            for block in self.block.values():
                reads = self.sch.get(block).reads
                k = next((i for i, r in enumerate(reads) if r.buffer is buf), None)
                if k is not None:
                    where = (block, ("read", k))
                    break
            if where is None:
                return  # nothing reads the input: its layout changes nothing computed
            targets = [where]
        else:
            block = self.block[id(stage)]
            targets = [(block, ("write", n)) for n in range(stage.op.num_outputs)]
        for block, buffer in targets:
            self.sch.transform_layout(block, buffer, imap)
            if separators:
                self.sch.set_axis_separator(block, buffer, list(separators))

    def _repeat_on_more_blocks(self, st: Stage) -> None:
        """Place and transform the other blocks of a split multi-output stage as its first
        block will be (same attach point, same loop actions)."""
        primary = self.block[id(st)]
        saved = {id(iv): self.loop.get(id(iv)) for iv in st.all_iter_vars}
        for block in self.more_blocks.get(id(st), []):
            self.block[id(st)] = block
            self._map_loops(st, names=True)
            self._attach(st)
            for action in st.actions:
                self._apply(st, action)
        self.block[id(st)] = primary
        self.loop.update({k: v for k, v in saved.items() if v is not None})

    def run(self) -> PrimFunc:
        self._structural()
        stages = [st for st in self.te._consumers_first() if id(st) in self.block]
        for st in stages:
            self._map_loops(st, names=True)
        tensorized = []  # applied last, on the final loops (te/tensor_intrin.py)
        for st in stages:
            self._repeat_on_more_blocks(st)
            self._attach(st)
            for action in st.actions:
                if action[0] == "tensorize":
                    loop = self._loop_of(st, action[1], f"tensorize of stage '{st.name}'")
                    tensorized.append((st.name, self.block[id(st)], loop, action[2]))
                else:
                    self._apply(st, action)
        if tensorized:
            from .tensor_intrin import apply_tensorize

            func = apply_tensorize(self.sch, tensorized)
        else:
            func = self.sch.mod["main"]
        for st in stages:
            if st.store_predicate is not None:
                func = self._store_predicate(func, st)
        return func

    def _store_predicate(self, func: PrimFunc, st: Stage) -> PrimFunc:
        from .predicate import apply_store_predicate

        loop_var_of = {
            id(iv): self.sch.get(self.loop[id(iv)]).loop_var
            for stage in self.te.stage_map.values()
            if stage.attach.kind != "inline"
            for iv in stage.leaf_iter_vars
            if id(iv) in self.loop
        }
        threads = {}
        for stage in self.te.stage_map.values():
            for key, (_, leaf) in stage.bound_threads.items():
                if id(leaf) in loop_var_of and (stage is st or key not in threads):
                    threads[key] = loop_var_of[id(leaf)]
        name = self.sch.get(self.block[id(st)]).name_hint
        return apply_store_predicate(func, st, name, loop_var_of, threads)

    def _loop_of(self, stage: Stage, iv: IterVar, what: str) -> Any:
        if not any(iv is x for x in stage.leaf_iter_vars):
            raise ScheduleError(
                f"{what}: IterVar '{iv.var.name}' of stage '{stage.name}' was "
                "split or fused after being used; use the IterVars split/fuse "
                "returned"
            )
        return self.loop.get(id(iv))

    def _attach(self, st: Stage) -> None:
        kind, parent, scope = st.attach.kind, st.attach.parent, st.attach.iv
        if kind == "root" and group_attachment(st) is not None:  # its group was placed
            kind, (parent, scope) = "at", group_attachment(st)
        if kind == "inline":
            if st.actions:
                raise ScheduleError(
                    f"stage '{st.name}' is inlined (compute_inline) but also has "
                    "loop transformations; an inlined stage has no loops"
                )
            self.sch.compute_inline(self.block[id(st)])
        elif kind == "at":
            scope = parent._legal_attach(scope)
            loop = self._loop_of(parent, scope, f"compute_at of stage '{st.name}'")
            if loop is None:
                raise ScheduleError(
                    f"compute_at of stage '{st.name}' at loop '{scope.var.name}' of "
                    f"stage '{parent.name}': that loop does not exist when '{st.name}' is "
                    f"placed ('{parent.name}' must consume '{st.name}', and a cache stage "
                    "made later may have replaced it); attach to a loop of a consumer"
                )
            self.sch.compute_at(self.block[id(st)], loop, preserve_unit_loops=True)
            self._map_loops(st, names=True)

    def _apply(self, st: Stage, action: tuple) -> None:
        sch = self.sch
        if action[0] == "split":
            _, parent, factor, nparts, outer, inner = action
            factors = [None, factor] if factor is not None else [nparts, None]
            lo, li = sch.split(self.loop[id(parent)], factors)
            for iv, lp in ((outer, lo), (inner, li)):
                sch._rename_loop(lp, iv.var.name)
                self.loop[id(iv)] = lp
        elif action[0] == "fuse":
            _, ivs, fused = action
            lp = sch.fuse(*[self.loop[id(iv)] for iv in ivs])
            sch._rename_loop(lp, fused.var.name)
            self.loop[id(fused)] = lp
        elif action[0] == "singleton":
            _, unit, first = action
            above = self.loop[id(first)] if first is not None else self.block[id(st)]
            lp = sch.add_unit_loop(above)
            sch._rename_loop(lp, unit.var.name)
            self.loop[id(unit)] = lp
        elif action[0] == "relayout_loops":
            from .layout import block_map

            _, imap, new_ivs = action
            block = self.block[id(st)]
            reduce_axes = list(st.op.reduce_axis)
            sch.transform_block_layout(block, block_map(imap, len(reduce_axes)))
            loops = sch.get_loops(block)
            mine = loops[len(loops) - len(new_ivs) - len(reduce_axes) :]
            for iv, lp in zip(list(new_ivs) + reduce_axes, mine):
                sch._rename_loop(lp, iv.var.name)
                self.loop[id(iv)] = lp
        elif action[0] == "reorder":
            sch.reorder(*[self.loop[id(iv)] for iv in action[1]])
        else:
            _, method, iv, extra = action
            if method == "bind" and iv.iter_type is IterType.CommReduce:
                raise TargetError(
                    f"stage '{st.name}': reduction loop '{iv.var.name}' is bound to "
                    f"'{extra[0]}', a cross-thread reduction (TVM's allreduce), which minitvm "
                    "does not lower: threads would race on the result. rfactor the reduction and "
                    "bind the factored stage's spatial loop to the threads instead (the final "
                    "sum then runs serially), or keep reduction loops serial"
                )
            getattr(sch, method)(self.loop[id(iv)], *extra)


def ScheduleOps(sch: Schedule, dom_map: Any = None, debug_keep_trivial_loop: bool = False):
    """The scheduled loop nest of `sch` as one statement (the body of its PrimFunc, whose
    arguments are the inputs and outputs); `dom_map` (InferBound's result) is not needed."""
    args: list = []
    for stage in sch.stages:
        for t in stage.op.input_tensors:
            if isinstance(t.op, PlaceholderOp) and t not in args:
                args.append(t)
    for op in sch.outputs:
        args += [t for t in op.outputs if t not in args]
    return sch.build_prim_func(args).body
