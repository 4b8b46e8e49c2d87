"""The classic TE schedule API (`te.create_schedule`) as an adapter onto `tir.Schedule`.

Stage methods only record what the user asked for (validated against the stage's current
IterVars). The function's arguments are known only at `tvm.lower` / `tvm.build` time, so
`build_prim_func(args, name)` makes `te.create_prim_func(args)` and replays the record on a
`tir.Schedule`: cache stages first, then stages from the outputs back to the inputs (a
consumer's loops are final before a producer is computed at one of them), each stage's
attachment before its own loop actions. Loops carry the user's names (`i.outer`, `i.j.fused`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..error import ScheduleError
from ..ir.recursion import deep_recursion, post_order
from ..tir.buffer import Buffer  # noqa: F401 (tvm.te.schedule.Buffer, as TVM's module has it)
from ..tir.expr import IterType, IterVar, Range, Var, as_expr
from ..tir.function import PrimFunc
from ..tir.functor import substitute
from .classic import AutoInlineBroadcast, AutoInlineElemWise, AutoInlineInjective  # noqa: F401
from .graph import (  # noqa: F401 (TVM names)
    CreateReadGraph,
    PostDFSOrder,
    ScanFixPointAnalysis,
    ScanGetBody,
)
from .group import add_scan_groups, check_same_group, create_group, sch_groups
from .operation import ComputeOp, PlaceholderOp
from .schedule_relations import Fuse, Singleton, Split, _Attach, _CacheOp, _iv, _op_of
from .tensor import Tensor


@dataclass
class Stage:
    """The schedule of one operation: `s[C]`. Methods record loop transformations."""

    op: Any
    _sch: Any
    leaf_iter_vars: list = field(default_factory=list)
    all_iter_vars: list = field(default_factory=list)
    attach: _Attach = field(default_factory=lambda: _Attach("root"))
    actions: list = field(default_factory=list)
    initial: list = field(default_factory=list)  # the IterVars the block's loops start as
    group: Any = None  # the te/group.py Group this stage belongs to
    store_predicate: Any = None  # set_store_predicate: the block stores only where it holds
    double_buffered: bool = False  # double_buffer(): a GPU hint, recorded only
    prefetches: list = field(default_factory=list)  # prefetch(): hints, recorded only
    env_thread_axes: list = field(default_factory=list)  # env_threads(): GPU only
    # id(thread axis var) -> (thread IterVar, the leaf IterVar bound to it)
    bound_threads: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.initial = list(self.op.axis) + list(self.op.reduce_axis)
        self.leaf_iter_vars = list(self.initial)
        self.all_iter_vars = list(self.initial)
        from .tensor_compute import setup_stage  # a tensor compute is tensorized from the start

        setup_stage(self)

    __hash__ = object.__hash__
    __eq__ = object.__eq__

    @property
    def name(self) -> str:
        return self.op.name

    def __repr__(self) -> str:
        return f"Stage({self.name})"

    @property
    def relations(self) -> list[Split | Fuse]:
        """The splits and fuses applied so far, in order (TVM's IterVar relations)."""
        out: list[Split | Fuse] = []
        for action in self.actions:
            if action[0] == "split":
                _, parent, factor, nparts, outer, inner = action
                out.append(Split(parent, outer, inner, factor, nparts))
            elif action[0] == "fuse":
                out.append(Fuse(action[1], action[2]))
            elif action[0] == "singleton":
                out.append(Singleton(action[1]))
        return out

    # ------------------------------------------------------------------ checks
    def _leaf(self, iv: Any, what: str) -> IterVar:
        if not isinstance(iv, IterVar):
            raise ScheduleError(
                f"{what} on stage '{self.name}': expected an IterVar (e.g. "
                f"s[{self.name}].op.axis[0]), got {type(iv).__name__}"
            )
        if any(iv is x for x in self.leaf_iter_vars):
            return iv
        if any(iv is x for x in self.all_iter_vars):
            raise ScheduleError(
                f"{what} on stage '{self.name}': IterVar '{iv.var.name}' was already split or "
                f"fused; use the IterVars that split/fuse returned. Current loops: "
                f"{[x.var.name for x in self.leaf_iter_vars]}"
            )
        owner = self._sch._owner(iv)
        if owner is not None:
            raise ScheduleError(
                f"{what} on stage '{self.name}': IterVar '{iv.var.name}' belongs to stage "
                f"'{owner.name}', not to '{self.name}'; use s[{self.name}].op.axis / "
                f"s[{self.name}].op.reduce_axis"
            )
        raise ScheduleError(
            f"{what} on stage '{self.name}': IterVar '{iv.var.name}' is not a "
            f"loop of this stage; its loops are {[x.var.name for x in self.leaf_iter_vars]}"
        )

    def _replace_leaves(self, old: list, new: list) -> None:
        pos = min(i for i, x in enumerate(self.leaf_iter_vars) if any(x is o for o in old))
        kept = [x for x in self.leaf_iter_vars if not any(x is o for o in old)]
        self.leaf_iter_vars = kept[:pos] + list(new) + kept[pos:]
        self.all_iter_vars += list(new)

    def _no_placeholder(self, what: str) -> None:
        if isinstance(self.op, PlaceholderOp):
            raise ScheduleError(
                f"{what}: '{self.name}' is a placeholder (an input); it has no loops to schedule"
            )

    # ------------------------------------------------------------------ loop transformations
    def split(
        self,
        parent: IterVar,
        factor: Any = None,
        nparts: Any = None,
        disable_predication: bool = False,
    ) -> tuple[IterVar, IterVar]:
        """Split `parent` into (outer, inner) by `factor` (inner extent) or `nparts` (outer).

        `disable_predication=True` (TVM's promise that the tail needs no guard) is accepted,
        and the guard is kept: it costs a comparison where the split is uneven, and dropping
        it unproven would read and write past the tensor's end.
        """
        self._no_placeholder("split")
        parent = self._leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(
                f"split on stage '{self.name}' of '{parent.var.name}': give "
                "exactly one of factor= and nparts="
            )
        amount = factor if factor is not None else nparts
        if isinstance(amount, int) and amount <= 0:
            raise ScheduleError(
                f"split on stage '{self.name}' of '{parent.var.name}': "
                f"{'factor' if factor is not None else 'nparts'} must be positive, "
                f"got {amount}"
            )
        outer = _iv(parent.var.name + ".outer", parent)
        inner = _iv(parent.var.name + ".inner", parent)
        self._replace_leaves([parent], [outer, inner])
        self.actions.append(("split", parent, factor, nparts, outer, inner))
        self._sch._note("split")
        return outer, inner

    def tile(self, x_parent: IterVar, y_parent: IterVar, x_factor: Any, y_factor: Any):
        """Split two loops and reorder into (x.outer, y.outer, x.inner, y.inner)."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse adjacent loops (outer first) into one named `a.b.fused`."""
        self._no_placeholder("fuse")
        if len(args) == 1 and isinstance(args[0], list | tuple):
            args = tuple(args[0])
        ivs = [self._leaf(iv, "fuse") for iv in args]
        if not ivs:
            return self._singleton()
        if len(ivs) == 1:
            return ivs[0]
        pos = [next(i for i, x in enumerate(self.leaf_iter_vars) if x is iv) for iv in ivs]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            raise ScheduleError(
                f"fuse on stage '{self.name}': loops {[iv.var.name for iv in ivs]} are not "
                f"adjacent and in order (outer first) among {[x.var.name for x in self.leaf_iter_vars]}; "
                "reorder them first"
            )
        fused = _iv(".".join(iv.var.name for iv in ivs) + ".fused", ivs[0])
        if any(iv.iter_type == IterType.CommReduce for iv in ivs):
            fused = IterVar(None, fused.var, IterType.CommReduce)
        self._replace_leaves(ivs, [fused])
        self.actions.append(("fuse", tuple(ivs), fused))
        self._sch._note("fuse")
        return fused

    def _singleton(self) -> IterVar:
        """fuse() of no loops: a unit loop, outermost among the stage's loops (as TVM)."""
        first = self.leaf_iter_vars[0] if self.leaf_iter_vars else None
        unit = IterVar(Range.from_min_extent(0, 1), Var("singleton", "int32"), IterType.DataPar)
        self.leaf_iter_vars = [unit, *self.leaf_iter_vars]
        self.all_iter_vars = [*self.all_iter_vars, unit]
        self.actions.append(("singleton", unit, first))
        return unit

    def reorder(self, *args: IterVar) -> None:
        self._no_placeholder("reorder")
        if len(args) == 1 and isinstance(args[0], list | tuple):
            args = tuple(args[0])
        ivs = [self._leaf(iv, "reorder") for iv in args]
        if len({id(iv) for iv in ivs}) != len(ivs):
            raise ScheduleError(f"reorder on stage '{self.name}': an IterVar is listed twice")
        slots = sorted(i for i, x in enumerate(self.leaf_iter_vars) if any(x is iv for iv in ivs))
        for slot, iv in zip(slots, ivs):
            self.leaf_iter_vars[slot] = iv
        self.actions.append(("reorder", tuple(ivs)))
        self._sch._note("reorder")

    def _kind(self, method: str, iv: IterVar, *extra: Any) -> None:
        self._no_placeholder(method)
        iv = self._leaf(iv, method)
        self.actions.append(("kind", method, iv, extra))
        self._sch._note("pragma" if method == "annotate" else method)

    def vectorize(self, var: IterVar) -> None:
        if isinstance(var, IterVar) and var.iter_type is IterType.CommReduce:
            raise ScheduleError(
                f"vectorize on stage '{self.name}': '{var.var.name}' is a reduction loop; its "
                "iterations all update the same element, so they cannot run as vector lanes. "
                "Vectorize a spatial loop (rfactor first to make one)"
            )
        self._kind("vectorize", var)

    @property
    def iter_var_attrs(self) -> dict:
        """TVM's per-loop attributes: `iter_type` (Vectorized, Unrolled, ...) and pragmas."""
        from .classic import iter_var_attrs

        return iter_var_attrs(self)

    def storage_align(self, axis: IterVar, factor: int, offset: int) -> None:
        """Pad this stage's buffer so that rows along `axis` start at `offset` mod `factor`."""
        self._no_placeholder("storage_align")
        iv = next((x for x in self.initial if x is axis), None)
        if iv is None:
            raise ScheduleError(
                f"storage_align on stage '{self.name}': pass one of s[{self.name}].op.axis (a "
                f"dimension of the stored tensor), not the loop '{axis.var.name}'"
            )
        self._sch._structural.append(
            ("storage_align", self, self.initial.index(iv), int(factor), int(offset))
        )

    def double_buffer(self) -> None:
        """Mark the stage's buffer for double buffering (a GPU copy overlap; no CPU effect)."""
        self._no_placeholder("double_buffer")
        self.double_buffered = True

    def prefetch(self, tensor: Any, var: IterVar, offset: Any) -> None:
        """Hint a prefetch of `tensor` `offset` iterations of `var` ahead (no CPU effect)."""
        self._no_placeholder("prefetch")
        self._leaf(var, "prefetch")
        self.prefetches.append((tensor, var, offset))

    def env_threads(self, threads: Any) -> None:
        """Launch `threads` (thread axes) around this stage (a GPU scan's threads)."""
        self._no_placeholder("env_threads")
        threads = list(threads) if isinstance(threads, list | tuple) else [threads]
        for t in threads:
            if not (isinstance(t, IterVar) and t.iter_type is IterType.ThreadIndex):
                raise ScheduleError(
                    f"env_threads on stage '{self.name}': expected te.thread_axis(...) values, "
                    f"got {t!r}"
                )
        self.env_thread_axes = threads

    def parallel(self, var: IterVar) -> None:
        self._kind("parallel", var)

    def unroll(self, var: IterVar) -> None:
        self._kind("unroll", var)

    def bind(self, ivar: IterVar, thread_ivar: IterVar) -> None:
        """Bind loop `ivar` to a thread axis (`te.thread_axis("threadIdx.x")`)."""
        tag = getattr(thread_ivar, "thread_tag", "") or str(thread_ivar)
        self._kind("bind", ivar, tag)
        if isinstance(thread_ivar, IterVar):
            self.bound_threads[id(thread_ivar.var)] = (thread_ivar, ivar)

    @property
    def attach_type(self) -> int:
        """TVM's AttachType number: 1 at root (kGroupRoot), 2 inlined, 4 at a loop (kScope)."""
        return {"root": 1, "inline": 2, "at": 4}[self.attach.kind]

    def _legal_attach(self, iv: IterVar) -> IterVar:
        """The loop a stage attached at `iv` ends up at after `iv` was split (its inner part)
        or fused (the fused loop), as TVM legalizes such an attachment."""
        while not any(iv is x for x in self.leaf_iter_vars):
            nxt = None
            for rel in self.relations:
                if isinstance(rel, Split) and rel.parent is iv:
                    nxt = rel.inner
                elif isinstance(rel, Fuse) and any(iv is x for x in rel.fused_from):
                    nxt = rel.fused
            if nxt is None:
                return iv
            iv = nxt
        return iv

    def _is_bound(self, iv: IterVar) -> bool:
        return any(a[0] == "kind" and a[1] == "bind" and a[2] is iv for a in self.actions)

    def set_store_predicate(self, predicate: Any) -> None:
        """Store this stage's values only where `predicate` (over its IterVars) holds."""
        self._no_placeholder("set_store_predicate")
        pred = as_expr(predicate)
        if not pred.dtype.is_bool:
            raise ScheduleError(
                f"set_store_predicate on stage '{self.name}': `{pred}` is not a condition "
                f"(dtype {pred.dtype}); pass a comparison such as tx.var.equal(0)"
            )
        self.store_predicate = pred

    def pragma(self, var: IterVar, pragma_type: str, pragma_value: Any = None) -> None:
        if pragma_type == "unroll":
            self._kind("unroll", var)
            return
        if pragma_type == "vectorize":
            self._kind("vectorize", var)
            return
        self._kind(
            "annotate", var, "pragma_" + pragma_type, 1 if pragma_value is None else pragma_value
        )

    # ------------------------------------------------------------------ attachment
    def compute_inline(self) -> None:
        self._no_placeholder("compute_inline")
        self.attach = _Attach("inline")
        self._sch._note("compute_inline")

    def compute_root(self) -> None:
        self._no_placeholder("compute_root")
        self.attach = _Attach("root")
        self._sch._note("compute_root")

    def compute_at(self, parent: Stage, scope: IterVar) -> None:
        self._no_placeholder("compute_at")
        if not isinstance(parent, Stage):
            raise ScheduleError(
                f"compute_at on stage '{self.name}': the first argument must be a stage, e.g. s[C]"
            )
        if parent is self:
            raise ScheduleError(
                f"compute_at on stage '{self.name}': a stage cannot be computed at its own loop"
            )
        check_same_group(self, parent, f"compute_at on stage '{self.name}'")
        if not any(scope is x for x in parent.all_iter_vars):
            owner = self._sch._owner(scope)
            where = f"belongs to stage '{owner.name}'" if owner else "is not a loop of any stage"
            raise ScheduleError(
                f"compute_at on stage '{self.name}': IterVar "
                f"'{getattr(getattr(scope, 'var', None), 'name', scope)}' {where}, not to "
                f"'{parent.name}'; pass a loop of s[{parent.name}]"
            )
        if not self._sch._reaches(parent, self):
            raise ScheduleError(
                f"compute_at on stage '{self.name}': stage '{parent.name}' does not consume "
                f"'{self.name}' (directly or through other stages), so no loop of "
                f"'{parent.name}' runs after '{self.name}' is needed; compute a producer at a "
                f"loop of one of its consumers, e.g. s[{parent.name}].compute_at(s[{self.name}], ...)"
                if self._sch._reaches(self, parent)
                else f"compute_at on stage '{self.name}': stage '{parent.name}' does not consume "
                f"'{self.name}'; compute a stage at a loop of a stage that reads it"
            )
        self.attach = _Attach("at", parent, scope)
        self._sch._note("compute_at")

    def transform_layout(self, mapping_function: Any) -> list | None:
        """Store this tensor in the layout `mapping_function(*indices)` returns (a list of
        index expressions, te.AXIS_SEPARATOR between physical axes); a compute stage's loops
        then run over the new layout and its new IterVars are returned."""
        from .layout import transform_layout

        return transform_layout(self, mapping_function)

    def set_scope(self, scope: str) -> None:
        """Keep this stage's (intermediate) tensor in storage `scope`, e.g. "local"."""
        self._no_placeholder("set_scope")
        self._sch._structural.append(("set_scope", self, scope))

    def tensorize(self, var: IterVar, tensor_intrin: Any) -> None:
        """Replace the loops from `var` inward by `tensor_intrin`'s kernel (te/tensor_intrin.py)."""
        self._no_placeholder("tensorize")
        iv = self._leaf(var, "tensorize")
        # an IterVar carries one intrinsic: tensorizing it again replaces the earlier one
        self.actions = [a for a in self.actions if not (a[0] == "tensorize" and a[1] is iv)]
        self.actions.append(("tensorize", iv, tensor_intrin))
        self._sch._note("tensorize")


class Schedule:
    """`te.create_schedule(ops)`: one Stage per compute operation feeding `ops`."""

    def __init__(self, ops: Any) -> None:
        from ..ir.transform import PassContext

        # PassContext(config={"te.keep_schedule_record": True}): a snapshot after each primitive
        self._keep_record = bool(PassContext.current().config.get("te.keep_schedule_record"))
        self._recording = False  # a tensor compute's own setup (at construction) is not noted
        self.schedule_record: list = []
        self.primitive_record: list[str] = []
        ops = list(ops) if isinstance(ops, list | tuple) else [ops]
        self.outputs = [_op_of(o) for o in ops]
        self.stage_map: dict[int, Stage] = {}
        self._deps: dict[int, list[Stage]] = {}
        self._structural: list[tuple] = []
        # (reader stage, tensor) -> the cache tensor that reader now reads instead
        self._cached_reads: dict[tuple[int, Tensor], Tensor] = {}
        self._cache_written: dict[int, Tensor] = {}  # stage id -> the tensor cache_write made
        # rfactor swaps a stage's operation: the old op (kept alive, so its id stays unique)
        # still finds the stage, and tensors of the old op stand for the new op's outputs
        self._alias: dict[int, tuple[Any, Stage]] = {}
        self._replaced: dict[Tensor, Tensor] = {}
        self._input_stages: dict[int, tuple[Any, Stage]] = {}  # placeholders' stages
        order = post_order(self.outputs, lambda op: [t.op for t in op.input_tensors])
        for op in order:
            if isinstance(op, ComputeOp):
                stage = Stage(op, self)
                self.stage_map[id(op)] = stage
        for op in order:
            if isinstance(op, ComputeOp):
                self._deps[id(self.stage_map[id(op)])] = [
                    self.stage_map[id(t.op)] for t in op.input_tensors if id(t.op) in self.stage_map
                ]
        add_scan_groups(self)
        self._recording = True
        self._note("vanilla")

    def _note(self, primitive: str) -> None:
        """Under te.keep_schedule_record: the primitive's name and a snapshot of the loops
        (stage name -> its leaf IterVar names) after it; minitvm keeps no Schedule copies."""
        if not (self._keep_record and self._recording):
            return
        snapshot = {st.name: tuple(iv.var.name for iv in st.leaf_iter_vars) for st in self.stages}
        self.schedule_record.append(snapshot)
        self.primitive_record.append(primitive)

    @property
    def groups(self) -> list:
        """The stage groups: scans' bodies and those create_group made (te/group.py)."""
        return list(sch_groups(self))

    def create_group(self, outputs: Any, inputs: Any, include_inputs: bool = False) -> Any:
        """Group the stages between `inputs` and `outputs`; `g.compute_at` places them all."""
        return create_group(self, outputs, inputs, include_inputs)

    @property
    def stages(self) -> list[Stage]:
        return list(self.stage_map.values())

    def __getitem__(self, x: Any) -> Stage:
        op = _op_of(x)
        stage = self.stage_map.get(id(op)) or self._alias.get(id(op), (None, None))[1]
        if stage is None and isinstance(op, PlaceholderOp):
            # an input's stage: it has no loops, only a layout (transform_layout)
            if id(op) not in self._input_stages:
                self._input_stages[id(op)] = (op, Stage(op, self))
            return self._input_stages[id(op)][1]
        if stage is None:
            raise ScheduleError(
                f"s[{op.name}]: '{op.name}' is not computed by this schedule's "
                "outputs; create the schedule from the final tensor(s)"
            )
        return stage

    def _reaches(self, consumer: Stage, producer: Stage) -> bool:
        """True when `consumer` reads `producer`'s output, directly or through other stages."""
        stack, seen = [consumer], set()
        while stack:
            st = stack.pop()
            for d in self._deps.get(id(st), []):
                if d is producer:
                    return True
                if id(d) not in seen:
                    seen.add(id(d))
                    stack.append(d)
        return False

    def _simplify(self, e: Any) -> Any:
        from ..arith import Analyzer

        return Analyzer().simplify(e)

    def _owner_of_var(self, var: Any) -> Stage | None:
        for stage in self.stage_map.values():
            if any(var is x.var for x in stage.all_iter_vars):
                return stage
        return None

    def _owner(self, iv: Any) -> Stage | None:
        for stage in self.stage_map.values():
            if any(iv is x for x in stage.all_iter_vars):
                return stage
        return None

    # ------------------------------------------------------------------ caches
    def cache_read(self, tensor: Tensor, scope: str, readers: Any) -> Tensor:
        """A copy of `tensor` in `scope`, read by `readers` instead of `tensor`."""
        readers = list(readers) if isinstance(readers, list | tuple) else [readers]
        reader_stages = [self[r] for r in readers]
        if not reader_stages:
            raise ScheduleError(f"cache_read of '{tensor.name}': give at least one reader")
        for st in reader_stages:
            moved = self._cache_written.get(id(st))
            if moved is not None:
                raise ScheduleError(
                    f"cache_read of '{tensor.name}' for stage '{st.name}': '{st.name}' was "
                    f"cache_write'd, so its computation (and its reads) moved to "
                    f"'{moved.op.name}' and '{st.name}' only copies the result back; pass the "
                    f"tensor cache_write returned ('{moved.op.name}') as the reader"
                )
            earlier = self._cached_reads.get((id(st), tensor))
            if earlier is not None:
                raise ScheduleError(
                    f"cache_read of '{tensor.name}' for stage '{st.name}': '{st.name}' already "
                    f"reads '{tensor.name}' through the cache '{earlier.op.name}' of an earlier "
                    "cache_read; drop this call (to cache that copy again, pass the tensor "
                    "the earlier cache_read returned)"
                )
            if not any(t == tensor for t in self._inputs_of(st)) and not any(
                d is self.stage_map.get(id(tensor.op)) for d in self._deps[id(st)]
            ):
                raise ScheduleError(
                    f"cache_read of '{tensor.name}': stage '{st.name}' does not "
                    f"read '{tensor.name}'"
                )
        axis = tuple(
            IterVar(None, Var(f"ax{d}", getattr(s, "dtype", "int32")), IterType.DataPar)
            for d, s in enumerate(tensor.shape)
        )
        op = _CacheOp(f"{tensor.name}.{scope}", tensor.shape, tensor.dtype, axis, (), tensor)
        stage = Stage(op, self)
        self.stage_map[id(op)] = stage
        src = self.stage_map.get(id(tensor.op))
        self._deps[id(stage)] = [src] if src is not None else []
        for st in reader_stages:
            self._deps[id(st)] = [d for d in self._deps[id(st)] if d is not src] + [stage]
        self._structural.append(("cache_read", tensor, scope, reader_stages, stage))
        for st in reader_stages:
            self._cached_reads[(id(st), tensor)] = op.output(0)
        return op.output(0)

    def _inputs_of(self, stage: Stage) -> list:
        """The tensors `stage` reads: a cache_write stage computes what its source did."""
        for cached in self._cache_written.values():
            if cached.op is stage.op:
                return list(stage.op.source.op.input_tensors)
        return list(stage.op.input_tensors)

    def _reads_of(self, consumer: Stage, producer: Stage) -> list[tuple]:
        """Index tuples (in `consumer`'s root IterVars) at which `consumer` reads `producer`."""
        from .bound import loads_of

        cop, pop = consumer.op, producer.op
        if isinstance(cop, _CacheOp) and not self._is_cache_write(cop):
            return [tuple(iv.var for iv in cop.axis)]  # a cache_read stage copies its source
        if isinstance(pop, _CacheOp) and self._is_cache_write(pop) and pop.source.op is cop:
            return [tuple(iv.var for iv in cop.axis)]  # the stage copies its cache back
        wanted = list(pop.outputs)
        src = pop
        while isinstance(src, _CacheOp) and not self._is_cache_write(src):
            # the reader's body still names the tensor first cached (through a chain of
            # cache_reads, e.g. shared then local)
            wanted, src = [src.source], src.source.op
        if isinstance(cop, _CacheOp):  # a cache_write stage computes its source's body
            src = cop.source.op
            vmap = {a.var: b.var for a, b in zip(src.axis, cop.axis)}
            return [tuple(substitute(e, vmap) for e in idx) for idx in loads_of(src.body, wanted)]
        return loads_of(cop.body, wanted)

    def _is_cache_write(self, op: Any) -> bool:
        return any(t.op is op for t in self._cache_written.values())

    def cache_write(self, tensor: Any, scope: str) -> Any:
        """Compute `tensor` into a new tensor in `scope`; `s[tensor]` becomes the copy back.

        A stage already split/reordered (or a list of all outputs of a multi-output compute)
        gets a cache in its loop layout, as in TVM (te/cache_relayout.py).
        """
        many = isinstance(tensor, list | tuple)
        tensors = list(tensor) if many else [tensor]
        stage = self[tensors[0]]
        if many or stage.actions or stage.attach.kind != "root" or stage.op.num_outputs > 1:
            from .cache_relayout import cache_write_relayout

            out = cache_write_relayout(self, tensors, scope)
            return out if many else out[tensor.value_index]
        op = stage.op
        axis = tuple(_iv(iv.var.name + ".c", iv) for iv in op.axis)
        cop = _CacheOp(
            f"{tensor.name}.{scope}",
            tensor.shape,
            tensor.dtype,
            axis,
            tuple(op.reduce_axis),
            tensor,
        )
        cache_stage = Stage(cop, self)
        self.stage_map[id(cop)] = cache_stage
        self._deps[id(cache_stage)] = self._deps[id(stage)]
        self._deps[id(stage)] = [cache_stage]
        stage.initial = list(op.axis)
        stage.leaf_iter_vars = list(op.axis)
        stage.all_iter_vars = list(op.axis)
        self._structural.append(("cache_write", tensor, scope, stage, cache_stage))
        self._cache_written[id(stage)] = cop.output(0)
        return cop.output(0)

    def normalize(self) -> Schedule:
        """TVM rebases loops to start at 0; here it changes nothing and returns the schedule.

        The loops lowering makes are the ones the record implies: a reduce axis declared
        as (2, 6) keeps its start (`for k in T.serial(2, 6)`), the same program as TVM's
        rebased `k + 2` form.
        """
        return self

    # ------------------------------------------------------------------ replay
    def build_prim_func(self, args: list, name: str = "main") -> PrimFunc:
        """`te.create_prim_func(args)` with this schedule applied (used by tvm.lower/build)."""
        args = [self._resolve(a) if isinstance(a, Tensor) else a for a in args]
        return _Replay(self, args).run().with_attr("global_symbol", name)

    def _resolve(self, tensor: Tensor) -> Tensor:
        """The tensor that stands for `tensor` now (rfactor replaces a stage's operation)."""
        while tensor in self._replaced:
            tensor = self._replaced[tensor]
        return tensor

    # ------------------------------------------------------------------ rfactor
    def rfactor(self, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Any:
        """Factor the reduction of `tensor` over its loop `axis` into a new stage.

        >>> ko, ki = s[B].split(B.op.reduce_axis[0], factor=16); BF = s.rfactor(B, ki)
        """
        from .rfactor import rfactor

        return rfactor(self, tensor, axis, factor_axis)

    def _check_not_cached(self, stage: Stage, what: str) -> None:
        """`what` swaps the stage's operation, which a cache stage made earlier still reads."""
        for prim, used in (
            ("cache_write", id(stage) in self._cache_written),
            ("cache_read", any(t.op is stage.op for (_, t) in self._cached_reads)),
        ):
            if used:
                raise ScheduleError(
                    f"{what} of '{stage.name}': it was already given to {prim}; call {what} "
                    f"first, then {prim} (on the tensor {what} returns or on '{stage.name}')"
                )

    def _replace_op(self, stage: Stage, new_op: Any, rf_op: Any) -> None:
        """Swap `stage`'s operation for `new_op`, reading the new stage of `rf_op` (rfactor)."""
        from .rfactor import replace_loads

        old = stage.op
        rf_stage = Stage(rf_op, self)
        mapping = {old.output(n): new_op.output(n) for n in range(old.num_outputs)}
        self._replaced.update(mapping)
        self._rekey(stage, new_op)
        stage.initial = list(new_op.axis) + list(new_op.reduce_axis)
        stage.leaf_iter_vars = list(stage.initial)
        stage.all_iter_vars = list(stage.initial)
        stage.actions = []
        # the factored stage runs right before the stage it feeds (stages list producers first)
        items = list(self.stage_map.items())
        at = next(i for i, (_, st) in enumerate(items) if st is stage)
        self.stage_map = dict(items[:at] + [(id(rf_op), rf_stage)] + items[at:])
        self._deps[id(rf_stage)] = self._deps[id(stage)]
        self._deps[id(stage)] = [rf_stage]
        for st in list(self.stage_map.values()):
            if st is not stage and st is not rf_stage:
                self._rekey(st, replace_loads(st.op, mapping))
        self.outputs = [new_op if o is old else o for o in self.outputs]

    def _rekey(self, stage: Stage, new_op: Any) -> None:
        old = stage.op
        if new_op is old:
            return
        self._alias[id(old)] = (old, stage)
        items = [(id(new_op), st) if st is stage else (k, st) for k, st in self.stage_map.items()]
        self.stage_map = dict(items)
        stage.op = new_op
        self.outputs = [new_op if o is old else o for o in self.outputs]

    def _consumers_first(self) -> list[Stage]:
        order = post_order(self.stage_map.values(), lambda st: self._deps.get(id(st), []))
        return list(reversed(order))


def InferBound(sch: Schedule) -> dict[IterVar, Range]:
    """The Range of every IterVar of every stage; a stage computed at a consumer's loop gets
    the region that consumer reads during one iteration of that loop (as in TVM)."""
    from .bound import infer_bound

    return infer_bound(sch)


def create_schedule(ops: Any) -> Schedule:
    """A schedule for the operations `ops` (a `.op`, a tensor or a list of them).

    >>> s = te.create_schedule(C.op); xo, xi = s[C].split(C.op.axis[0], factor=4)
    """
    with deep_recursion():  # finding the stages walks every compute expression
        return Schedule(ops)


__all__ = [
    "Fuse", "InferBound", "Schedule", "ScheduleOps", "Singleton", "Split", "Stage", "create_schedule",
]  # fmt: skip

# lowering replays the records on a tir.Schedule (schedule_replay.py, which imports this module)
from .schedule_replay import ScheduleOps, _Replay
