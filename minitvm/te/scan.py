"""`te.scan`: a recurrence over the first axis, `state[t]` computed from `state[t - 1]`.

`te.scan(init, update, state_placeholder, inputs)` makes an operation whose output k holds the
rows of `init[k]` (rows `0 .. init_rows`) followed by the rows `update[k]` computes at each
later step, where `update` reads the previous rows through `state_placeholder[k]`.

In the PrimFunc the scan output is one buffer per state: the init stages write its first rows,
then one serial loop over the remaining steps (`<name>.idx`) holds the blocks of every stage
that depends on a state (the scan's body: `update` and the computes between it and the
states), each restricted to the current step. The body stages are ordinary stages of the
schedule: their first loop is the scan loop, so `s[update].split(update.op.axis[1], ...)` and
`compute_at` between body stages work on the loops inside it.
"""

from __future__ import annotations

from typing import Any

from ..error import TEError
from ..ir import structural_equal
from ..ir.node import FrozenDict, node
from ..tir.analysis.region import infer_access_regions
from ..tir.expr import IntImm, IterType, IterVar, Range, Var
from ..tir.functor import Mutator, substitute
from ..tir.stmt import Block, For, ForKind, seq
from .operation import ComputeOp, Operation, PlaceholderOp, _TemplatedOp, compute
from .tensor import Tensor


@node
class ScanOp(_TemplatedOp):
    """Output k: `init[k]`'s rows, then `update[k]` at every later step of `scan_axis`."""

    name: str
    tag: str
    attrs: FrozenDict
    scan_axis: IterVar
    init: tuple
    update: tuple
    state_placeholder: tuple
    inputs: tuple
    spatial_axis_: tuple = ()  # the non-scan axes of every output, output after output

    @property
    def _templates(self) -> tuple:
        return self.update

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(dict.fromkeys([*self.init, *self.update]))

    # ------------------------------------------------------------------ lowering (to_tir)
    def body_ops(self) -> list[Operation]:
        """The operations between the states (and the given `inputs`) and the updates: computed
        inside the scan loop, one step at a time, in dependency order (TVM's scan body)."""
        states = {id(t.op) for t in (*self.state_placeholder, *self.inputs)}
        depends: dict[int, bool] = {}
        order: list[Operation] = []

        def visit(op: Operation) -> bool:
            if id(op) in depends:
                return depends[id(op)]
            if id(op) in states:
                depends[id(op)] = True
                return True
            depends[id(op)] = False  # no cycles in a TE graph; marks the op as visited
            found = [visit(t.op) for t in op.input_tensors]
            depends[id(op)] = any(found)
            if depends[id(op)]:
                order.append(op)
            return depends[id(op)]

        reads_state = {id(t.op) for t in self.state_placeholder}
        for t in self.update:
            visit(t.op)
            if not _reaches(t.op, reads_state):
                raise TEError(
                    f"scan '{self.name}': update '{t.op.name}' does not read any state "
                    "placeholder; the update must compute step t from state[t - 1]"
                )
        return order

    def prepare_lowering(self, ctx: Any, allocs: list) -> set[int]:
        """One buffer per output, shared by its init, update and state; returns the ops the
        scan lowers itself."""
        for k, out in enumerate(self.outputs):
            buf = ctx.buffers.get(out)
            if buf is None:
                buf = ctx.declare(out)
                allocs.append(buf)
            ctx.buffers[self.state_placeholder[k]] = ctx.buffers[self.update[k]] = buf
            if isinstance(self.init[k].op, ComputeOp):  # a placeholder init is copied in
                ctx.buffers[self.init[k]] = buf
        claimed = {id(op) for op in self.body_ops()}
        claimed |= {id(t.op) for t in self.init if isinstance(t.op, ComputeOp)}
        return claimed

    def lower_into(self, ctx: Any, order: list) -> Any:
        """Init blocks, then the scan loop around the body stages' blocks (one step each)."""
        from .to_tir import _lower_compute

        stmts = []
        for k, t in enumerate(self.init):
            op = t.op
            if isinstance(op, PlaceholderOp):  # copy the given rows into the output
                copy = compute(t.shape, lambda *i, t=t: t(*i), name=f"{self.name}.init{k}").op
                ctx.buffers[copy.output(0)] = ctx.buffers[self.update[k]]
                stmts.append(_lower_compute(ctx, copy))
            elif op not in [s.op for s in self.init[:k]]:
                stmts.append(_lower_compute(ctx, op))
        lo = ctx.index(self.scan_axis.dom.min)
        extent = ctx.index(self.scan_axis.dom.extent)
        step = Var(self.scan_axis.var.name, lo.dtype)
        body = [_one_step(_lower_compute(ctx, op), step, op.name) for op in self.body_ops()]
        stmts.append(For(step, lo, extent, ForKind.SERIAL, seq(*body)))
        return seq(*stmts)


def _reaches(op: Operation, targets: set[int]) -> bool:
    """True when `op` reads one of the operations in `targets`, directly or not."""
    stack, seen = [op], set()
    while stack:
        o = stack.pop()
        for t in o.input_tensors:
            if id(t.op) in targets:
                return True
            if id(t.op) not in seen:
                seen.add(id(t.op))
                stack.append(t.op)
    return False


def _one_step(nest: Any, step: Var, name: str) -> Any:
    """A stage's loop nest with its first loop (the time axis) replaced by the scan step; an
    update's block also lists its reads of earlier steps of the state it writes."""
    if not isinstance(nest, For):
        raise TEError(f"scan: stage '{name}' inside the scan has no time axis")
    return _StateReads().visit(substitute(nest.body, {nest.loop_var: step}))


class _StateReads(Mutator):
    def visit_Block(self, b: Block) -> Block:
        reads, _ = infer_access_regions(b)
        written = {id(w.buffer) for w in b.writes}
        extra = tuple(r for r in reads if id(r.buffer) in written)
        return b.replace(reads=b.reads + extra) if extra else b


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, list | tuple) else [x]


def _same_dim(a: Any, b: Any) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return structural_equal(a, b)


def _dims(shape: tuple) -> str:
    return "(" + ", ".join(str(getattr(d, "value", d)) for d in shape) + ")"


def _check(name: str, init: list, update: list, states: list) -> None:
    if not (len(init) == len(update) == len(states)) or not update:
        raise TEError(
            f"scan '{name}': got {len(init)} init, {len(update)} update and {len(states)} state "
            "tensors; give one of each per state"
        )
    for k, (i, u, s) in enumerate(zip(init, update, states)):
        for what, t in (("init", i), ("update", u), ("state_placeholder", s)):
            if not isinstance(t, Tensor):
                raise TEError(f"scan '{name}': {what} {k} is {t!r}, not a te tensor")
        if not isinstance(s.op, PlaceholderOp):
            raise TEError(
                f"scan '{name}': state {k} ('{s.name}') must be a te.placeholder, the tensor "
                "the update reads the previous step from"
            )
        if len(s.shape) != len(u.shape) or not all(map(_same_dim, s.shape, u.shape)):
            raise TEError(
                f"scan '{name}': state '{s.name}' has shape {_dims(s.shape)} but update "
                f"'{u.name}' has shape {_dims(u.shape)}; the state placeholder must have the "
                "update's shape"
            )
        if len(i.shape) != len(u.shape) or not all(map(_same_dim, i.shape[1:], u.shape[1:])):
            raise TEError(
                f"scan '{name}': init '{i.name}' has shape {_dims(i.shape)} but update "
                f"'{u.name}' has shape {_dims(u.shape)}; they must agree on every axis but "
                "the first (the scan axis)"
            )
        if not (i.dtype == u.dtype == s.dtype):
            raise TEError(
                f"scan '{name}': init '{i.name}' ({i.dtype}), update '{u.name}' ({u.dtype}) and "
                f"state '{s.name}' ({s.dtype}) must have one dtype"
            )
    rows = init[0].shape[0]
    for i, u in zip(init, update):
        if not (_same_dim(i.shape[0], rows) and _same_dim(u.shape[0], update[0].shape[0])):
            raise TEError(
                f"scan '{name}': every init must have {rows} rows and every update "
                f"{update[0].shape[0]} steps along the scan axis"
            )


def scan(
    init: Any,
    update: Any,
    state_placeholder: Any,
    inputs: Any = None,
    name: str = "scan",
    tag: str = "",
    attrs: dict | None = None,
) -> Tensor | list[Tensor]:
    """A recurrence: output = init's rows, then update[t] (reading state[t - 1]) for t after.

    Example (cumulative sum): `s_init = te.compute((1, n), lambda _, i: X[0, i])`,
    `s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])`,
    `res = te.scan(s_init, s_update, s_state, inputs=[X])`.
    """
    single = isinstance(update, Tensor)
    init, update, states = _as_list(init), _as_list(update), _as_list(state_placeholder)
    _check(name, init, update, states)
    rows, steps = init[0].shape[0], update[0].shape[0]
    dom = Range.by_begin_end(rows, steps)
    axis = IterVar(dom, Var(f"{name}.idx", steps.dtype), IterType.Ordered)
    spatial = tuple(
        IterVar(Range.from_min_extent(0, d), Var(f"{name}.out{k}.i{n}", d.dtype), IterType.DataPar)
        for k, u in enumerate(update)
        for n, d in enumerate(u.shape)
        if n > 0
    )
    op = ScanOp(name, tag, FrozenDict(attrs or {}), axis, tuple(init), tuple(update),
                tuple(states), tuple(_as_list(inputs) if inputs is not None else ()),
                spatial)  # fmt: skip
    for bop in op.body_ops():
        first = bop.axis[0] if isinstance(bop, ComputeOp) and bop.axis else None
        if first is None or not _same_dim(first.dom.extent, steps):
            raise TEError(
                f"scan '{name}': stage '{bop.name}' depends on a state, so it runs inside the "
                f"scan, one step at a time; its first axis must be the scan axis (extent "
                f"{getattr(steps, 'value', steps)})"
            )
    return op.output(0) if single else list(op.outputs)
