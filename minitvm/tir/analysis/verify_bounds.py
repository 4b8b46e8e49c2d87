"""Reject buffer accesses that are provably out of bounds at some iteration that provably runs.

The rule (one place, with its error text): an index of a BufferLoad/BufferStore is checked
against its buffer's extent in that dimension. It is an error only with a witness: a corner
of the enclosing loop ranges (every loop the index uses at its first or last value; in a
constant nest of at most MAX_ENUMERATED_POINTS points, any point) where
the index is provably outside `[0, extent)`, every enclosing loop provably runs, and every
enclosing condition (`if`, `T.where`, `if_then_else`) provably holds. Anything short of
that (a data-dependent index, a guard that may exclude the corner, a symbolic extent that
may be 0) passes: gathers are checked at run time instead.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

from ...error import BuildError
from ..expr import (
    Add,
    And,
    BufferLoad,
    Call,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Range,
    Select,
    Sub,
    Var,
    binary,
)
from ..function import PrimFunc
from ..functor import Visitor, post_order_visit, substitute
from ..names import IF_THEN_ELSE, is_call
from ..stmt import BlockRealize, BufferStore, For, IfThenElse, LetStmt, While

MAX_WITNESS_VARS = 8  # corners tried: 2**vars; indices over more loops are not searched
MAX_ENUMERATED_POINTS = 4096  # a constant nest this small is searched point by point

_UNKNOWN = object()  # a guard whose truth cannot be known at build time (data, while loops)


class _Context:
    """The loops and conditions around the access being checked."""

    def __init__(self) -> None:
        self.loops: list[For] = []
        self.guards: list[Any] = []  # PrimExpr conditions, or _UNKNOWN
        self.subst: dict[int, PrimExpr] = {}  # block iter var -> its binding
        self.block = ""


class _BoundsChecker(Visitor):
    def __init__(self) -> None:
        from ...arith import Analyzer  # arith sits below tir in the pipeline

        self.ana = Analyzer()
        self.ctx = _Context()

    # ---- statements
    def visit_For(self, loop: For) -> None:
        lo, extent = self._bound(loop.min), self._bound(loop.extent)
        if isinstance(extent, IntImm) and extent.value <= 0:
            return  # the body never runs
        self.ana.bind(loop.loop_var, Range.from_min_extent(lo, extent), allow_override=True)
        self.visit(loop.min)
        self.visit(loop.extent)
        self.ctx.loops.append(loop.replace(min=lo, extent=extent))
        self.visit(loop.body)
        self.ctx.loops.pop()

    def visit_BlockRealize(self, realize: BlockRealize) -> None:
        block = realize.block
        values = [self._bound(v) for v in realize.iter_values]
        saved = self.ctx.subst, self.ctx.block
        self.ctx.subst = {**saved[0], **{id(iv.var): v for iv, v in zip(block.iter_vars, values)}}
        self.ctx.block = block.name_hint
        with self._guard(self._bound(realize.predicate)):
            if block.init is not None:
                self.visit(block.init)
            self.visit(block.body)
        self.ctx.subst, self.ctx.block = saved

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        cond = self._bound(s.condition)
        self.visit(s.condition)
        with self._guard(cond):
            self.visit(s.then_case)
        if s.else_case is not None:
            with self._guard(Not(cond)):
                self.visit(s.else_case)

    def visit_While(self, s: While) -> None:
        with self._guard(_UNKNOWN):
            self.generic_visit(s)

    def visit_LetStmt(self, s: LetStmt) -> None:
        self.visit(s.value)
        self.ctx.subst = {**self.ctx.subst, id(s.var): self._bound(s.value)}
        self.visit(s.body)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.visit(s.value)
        self.visit(s.indices)
        self._check(s.buffer, s.indices, "written")

    # ---- expressions
    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.visit(e.indices)
        self._check(e.buffer, e.indices, "read")

    def visit_Call(self, e: Call) -> None:
        if is_call(e, IF_THEN_ELSE):
            self._branches(*e.args)
        else:
            self.generic_visit(e)

    def visit_Select(self, e: Select) -> None:
        self._branches(e.condition, e.true_value, e.false_value)

    def _branches(self, cond: PrimExpr, t: PrimExpr, f: PrimExpr) -> None:
        self.visit(cond)
        c = self._bound(cond)
        with self._guard(c):
            self.visit(t)
        with self._guard(Not(c)):
            self.visit(f)

    def visit_And(self, e: And) -> None:
        self.visit(e.a)
        with self._guard(self._bound(e.a)):
            self.visit(e.b)

    def visit_Or(self, e: Or) -> None:
        self.visit(e.a)
        with self._guard(Not(self._bound(e.a))):
            self.visit(e.b)

    # ---- helpers
    def _bound(self, e: PrimExpr) -> PrimExpr:
        """`e` with block iter vars and let vars replaced by what they stand for."""
        subst = self.ctx.subst
        if not subst:
            return e
        return substitute(e, lambda v: subst.get(id(v)))

    def _guard(self, cond: Any):
        ctx = self.ctx

        class _Scope:
            def __enter__(self_) -> None:
                ctx.guards.append(cond)

            def __exit__(self_, *exc: Any) -> None:
                ctx.guards.pop()

        return _Scope()

    def _check(self, buf: Any, indices: tuple, what: str) -> None:
        for dim, (index, extent) in enumerate(zip(indices, buf.shape)):
            if index.dtype.lanes != 1:
                continue  # vector indices come from the vectorizer, which checks its own
            bound = self._bound(index)
            if self._provably_inside(bound, extent) or self._inside_where_guarded(bound, extent):
                continue
            witness = self._witness(bound, extent)
            if witness is not None:
                err = BuildError(self._message(buf, what, dim, index, bound, extent, witness))
                err.buffer_name = buf.name  # for OOBChecker's TVM-worded message
                raise err

    def _provably_inside(self, index: PrimExpr, extent: PrimExpr) -> bool:
        bound = self.ana.const_int_bound(index)
        ext = extent.value if isinstance(extent, IntImm) else None
        if bound.min_value >= 0 and ext is not None and bound.max_value < ext:
            return True
        return self.ana.can_prove(index >= 0) and self.ana.can_prove(index < extent)

    def _inside_where_guarded(self, index: PrimExpr, extent: PrimExpr) -> bool:
        """Inside `[0, extent)` wherever the known guards hold (a padded read
        `if_then_else(1 <= h, A[h - 1], 0)`): no point can then both run and fall outside, so
        the witness search (up to MAX_ENUMERATED_POINTS simplifications) is not needed."""
        guards = [g for g in self.ctx.guards if g is not _UNKNOWN and not _is_true(g)]
        if not guards:
            return False  # nothing beyond what _provably_inside already knew
        with self.ana.constraint_scope(functools.reduce(And, guards)):
            return self.ana.can_prove(index >= 0) and self.ana.can_prove(index < extent)

    def _witness(self, index: PrimExpr, extent: PrimExpr) -> tuple[dict, PrimExpr] | None:
        """(loop var -> value, index value) at a corner that provably runs out of bounds."""
        if _loads_data(index):
            return None  # a gather: checked at run time
        if any(g is _UNKNOWN for g in self.ctx.guards):
            return None
        used = _var_ids(index)
        for lp in reversed(self.ctx.loops):  # an inner loop's range may use outer loop vars
            if id(lp.loop_var) in used:
                used |= _var_ids((lp.min, lp.extent))
        loops = [lp for lp in self.ctx.loops if id(lp.loop_var) in used]
        if len(loops) > MAX_WITNESS_VARS:
            return None
        for corner in itertools.product((False, True), repeat=len(loops)):
            point = self._corner(loops, corner)
            value = self.ana.simplify(substitute(index, point))
            outside = self.ana.can_prove(value >= extent) or self.ana.can_prove(value < 0)
            if outside and self._runs_at(point):
                return point, value
        return self._enumerated_witness(index, extent)

    def _enumerated_witness(self, index: PrimExpr, extent: PrimExpr) -> tuple | None:
        """Try every point of a small constant loop nest (the loops of the index and of the
        guards): a guard can exclude every corner and still admit an out-of-bounds point
        (`if io * 8 + ii < 20: C[io * 8 * ii]` reaches C[48] at io = 2, ii = 3)."""
        if not isinstance(extent, IntImm):
            return None
        used = _var_ids(index).union(*(_var_ids(g) for g in self.ctx.guards))
        loops = [lp for lp in self.ctx.loops if id(lp.loop_var) in used]
        if not all(isinstance(x, IntImm) for lp in loops for x in (lp.min, lp.extent)):
            return None
        ranges = [range(lp.min.value, lp.min.value + lp.extent.value) for lp in loops]
        if math.prod(len(r) for r in ranges) > MAX_ENUMERATED_POINTS:
            return None
        for values in itertools.product(*ranges):
            point = {lp.loop_var: IntImm(lp.loop_var.dtype, v) for lp, v in zip(loops, values)}
            value = self.ana.simplify(substitute(index, point))
            inside = isinstance(value, IntImm) and 0 <= value.value < extent.value
            if isinstance(value, IntImm) and not inside and self._runs_at(point):
                return point, value
        return None

    def _corner(self, loops: list[For], at_end: tuple[bool, ...]) -> dict:
        """Each loop var at its first or last value; inner ranges may use outer loop vars."""
        point: dict[Any, PrimExpr] = {}
        for lp, end in zip(loops, at_end):  # outer first: bounds refer to outer vars only
            lo = substitute(lp.min, point)
            value = binary(Sub, binary(Add, lo, substitute(lp.extent, point)), 1) if end else lo
            point[lp.loop_var] = self.ana.simplify(value)
        return point

    def _runs_at(self, point: dict) -> bool:
        """Every enclosing loop is non-empty and every guard holds at `point`."""
        for lp in self.ctx.loops:
            if not self.ana.can_prove(substitute(lp.extent, point) >= 1):
                return False
        return all(self.ana.can_prove(substitute(g, point)) for g in self.ctx.guards)

    def _message(self, buf: Any, what: str, dim: int, index: PrimExpr, bound: PrimExpr,
                 extent: PrimExpr, witness: tuple[dict, PrimExpr]) -> str:
        point, value = witness
        where = f" in block '{self.ctx.block}'" if self.ctx.block else ""
        at = ", ".join(f"{v.name} = {x}" for v, x in point.items())
        shown = f"`{index}`" if index is bound else f"`{index}` (= `{bound}` in loop vars)"
        rng = self.ana.const_int_bound(bound)
        values = f"[{rng.min_value}, {rng.max_value}]" if _finite(rng) else "values"
        shape = tuple(s.value if isinstance(s, IntImm) else str(s) for s in buf.shape)
        return (
            f"buffer '{buf.name}' of shape {shape} is {what} out of bounds{where}: index "
            f"{shown} of dimension {dim} ranges over {values} but the extent is {extent} "
            f"(it is {value}{' at ' + at if at else ''}); fix the index or the loop range, or "
            "guard the access (T.where, if, tvm.tir.if_then_else)"
        )


def _is_true(cond: Any) -> bool:
    return isinstance(cond, IntImm) and cond.value == 1


def _finite(bound: Any) -> bool:
    return abs(bound.min_value) < 2**62 and abs(bound.max_value) < 2**62


def _var_ids(e: Any) -> set[int]:
    found: set[int] = set()
    post_order_visit(e, lambda n: found.add(id(n)) if isinstance(n, Var) else None)
    return found


def _loads_data(e: PrimExpr) -> bool:
    found: list[Any] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad | Call) else None)
    return bool(found)


def verify_bounds(func: PrimFunc) -> PrimFunc:
    """Raise BuildError for an access provably out of its buffer's bounds; return `func`."""
    _BoundsChecker().visit(func.body)
    return func


def _check_out_of_bounds(func: PrimFunc) -> PrimFunc:
    from ...error import ScheduleError

    try:
        return verify_bounds(func)
    except BuildError as err:
        name = getattr(err, "buffer_name", "?")
        raise ScheduleError(f"OOBChecker: out of bounds access to buffer {name}: {err}") from err


def OOBChecker():  # TVM's name
    """TVM's `tir.analysis.OOBChecker()`: a pass raising ScheduleError for an access that is
    provably out of its buffer's bounds (the rule of verify_bounds); the module is unchanged."""
    from ...ir.transform import Pass  # analyses sit below tir.transform's pass helpers

    def run(mod):
        if isinstance(mod, PrimFunc):
            return _check_out_of_bounds(mod)
        return mod.map_functions(PrimFunc, _check_out_of_bounds)

    return Pass(run, "OOBChecker")
