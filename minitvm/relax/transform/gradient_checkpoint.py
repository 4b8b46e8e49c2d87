"""Gradient checkpointing for `relax.transform.Gradient` (TVM's `R.grad.start_checkpoint` /
`R.grad.end_checkpoint`).

Both markers are the identity: the adjoint function drops them (their outputs alias their
inputs). A value is *recomputed* when its binding reads a start_checkpoint output or another
recomputed value; an end_checkpoint output reads as its input but spreads nothing to later
bindings; and a start_checkpoint input is kept even when it would be recomputed (the boundary of
two consecutive regions). When the backward pass reads a recomputed value, it reads a copy
(`<name>_cp`) emitted from the kept values just before that first read, once; the forward value
is then dead after the forward pass, so the memory planner can reuse its storage. The copies are
the same ops on the same inputs as the forward values, so the gradients are bit-identical to the
un-checkpointed ones.
"""

from __future__ import annotations

from ..expr import Call, Expr, Op, Var
from ..functor import argument_vars, substitute_vars
from ..op.grad_checkpoint import CHECKPOINT_OPS
from ..struct_info import TensorStructInfo

# ops whose argument at these positions gives only a shape: reading it needs no recomputation
_SHAPE_ONLY = {"relax.broadcast_like": (1,)}


def marker_of(value: Expr) -> str | None:
    """'start' / 'end' for a checkpoint marker call, else None."""
    if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name in CHECKPOINT_OPS:
        return "start" if value.op.name == CHECKPOINT_OPS[0] else "end"
    return None


class Regions:
    """Which bindings of the function being differentiated are recomputed (original Vars)."""

    def __init__(self) -> None:
        self._spreads: set[Var] = set()  # reading these puts a binding in a region
        self.recomputed: set[Var] = set()
        self.kept: set[Var] = set()  # start_checkpoint inputs

    def observe(self, var: Var, value: Expr) -> None:
        """Record binding `var = value` (called in binding order)."""
        kind = marker_of(value)
        if kind == "start":
            self._spreads.add(var)
            self.kept.update(v for v in argument_vars(value))
        elif kind is None and any(v in self._spreads for v in argument_vars(value)):
            self.recomputed.add(var)
            self._spreads.add(var)

    def any(self) -> bool:
        return bool(self.recomputed)


class Rematerializer:
    """Rewrites a backward-pass value so it reads copies of recomputed forward values, emitting
    each copy (and the copies it needs) through `bb` at its first use."""

    def __init__(self, bb, values: dict[Var, Expr]) -> None:
        self.bb = bb
        self.values = values  # recomputed (adjoint-function) Var -> its bound value
        self.copies: dict[Var, Var] = {}

    def rewrite(self, value: Expr) -> Expr:
        value = self._shape_reads(value)
        used = [v for v in argument_vars(value) if v in self.values]
        if not used:
            return value
        for v in used:
            self._copy(v)
        return substitute_vars(value, self.copies)

    def _shape_reads(self, value: Expr) -> Expr:
        # broadcast_like(c, v) reads only v's shape: with a static shape, read no Var at all
        positions = _SHAPE_ONLY.get(value.op.name) if _is_op_call(value) else None
        if not positions:
            return value
        from ..op import manipulate

        for k in positions:
            arg = value.args[k]
            sinfo = arg.struct_info
            if arg in self.values and isinstance(sinfo, TensorStructInfo) and _static(sinfo):
                return manipulate.broadcast_to(value.args[0], tuple(sinfo.shape))
        return value

    def _copy(self, var: Var) -> None:
        stack = [var]  # iterative post-order: long chains must not hit the recursion limit
        while stack:
            v = stack[-1]
            if v in self.copies:
                stack.pop()
                continue
            pending = [u for u in argument_vars(self.values[v]) if u in self.values]
            pending = [u for u in pending if u not in self.copies]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            value = self._shape_reads(substitute_vars(self.values[v], self.copies))
            if isinstance(value, Var):  # a match_cast: the copy needs v's named dims too
                self.copies[v] = self.bb.match_cast(value, v.struct_info, f"{v.name_hint}_cp")
            else:
                self.copies[v] = self.bb.emit(value, f"{v.name_hint}_cp")


def _is_op_call(value: Expr) -> bool:
    return isinstance(value, Call) and isinstance(value.op, Op)


def _static(sinfo: TensorStructInfo) -> bool:
    from ...topi.utils import const_int

    return sinfo.shape is not None and all(const_int(d) is not None for d in sinfo.shape)


__all__ = ["Regions", "Rematerializer", "marker_of"]
