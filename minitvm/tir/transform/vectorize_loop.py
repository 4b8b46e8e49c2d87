"""Turn VECTORIZED loops into straight-line vector code (Ramp indices, Broadcast invariants).

A loop whose body cannot be expressed this way (a scalar accumulator, a gather, a nested loop,
a guarded load that might be out of bounds) keeps kind VECTORIZED: codegen then emits a scalar
loop with LLVM vectorize metadata, which is always correct.
"""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer
from ..expr import (
    Add,
    BinaryOpExpr,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    Let,
    Mul,
    Not,
    Op,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
    binary,
    cast,
)
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..names import IF_THEN_ELSE
from ..stmt import BufferStore, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt, seq
from ._analyzer import ScopedAnalyzer
from ._pass import prim_func_pass

MAX_LANES = 64  # longer loops are split into chunks of CHUNK_LANES when divisible
CHUNK_LANES = 16


class _NotVectorizable(Exception):
    """Raised inside the vectorizer to abandon one loop (it keeps its VECTORIZED kind)."""


def _lanes(e: PrimExpr) -> int:
    return e.dtype.lanes


def _broadcast(e: PrimExpr, lanes: int) -> PrimExpr:
    return e if _lanes(e) == lanes else Broadcast(e, lanes)


def _is_widening(src: Any, dst: Any) -> bool:
    """An integer cast to at least as many bits of the same signedness."""
    return (
        src.is_integer and dst.is_integer and src.is_int == dst.is_int and dst.bits >= src.bits
    )


def _ramp_add(cls: type, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """Ramp ± invariant and Ramp ± Ramp stay Ramps (so indices stay contiguous/strided)."""

    def parts(x: PrimExpr) -> tuple[PrimExpr, PrimExpr] | None:
        if isinstance(x, Ramp):
            return x.base, x.stride
        if isinstance(x, Broadcast):
            return x.value, IntImm(x.value.dtype, 0)
        if _lanes(x) == 1:
            return x, IntImm(x.dtype, 0)
        return None

    pa, pb = parts(a), parts(b)
    if pa is None or pb is None or not a.dtype.element_of().is_integer:
        return None
    lanes = max(_lanes(a), _lanes(b))
    return Ramp(binary(cls, pa[0], pb[0]), binary(cls, pa[1], pb[1]), lanes)


def _ramp_mul(a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """Ramp * invariant stays a Ramp."""
    if isinstance(b, Ramp):
        a, b = b, a
    if not isinstance(a, Ramp):
        return None
    scale = b.value if isinstance(b, Broadcast) else b
    if _lanes(scale) != 1:
        return None
    return Ramp(binary(Mul, a.base, scale), binary(Mul, a.stride, scale), a.lanes)


class _Vectorizer(Mutator):
    """Rewrite one loop body with `var` → Ramp(min, 1, lanes)."""

    def __init__(self, var: Var, start: PrimExpr, lanes: int, in_bounds) -> None:
        super().__init__()
        self.lanes = lanes
        self.vmap: dict[int, PrimExpr] = {id(var): Ramp(start, 1, lanes)}
        self.keep: list[Any] = [var]
        self.in_bounds = in_bounds  # (scalar expr) -> bool: are all its loads provably in bounds

    # ---- expressions
    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vmap.get(id(v), v)

    def visit_BinaryOpExpr(self, e: BinaryOpExpr) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            return e
        cls = type(e)
        if cls in (Add, Sub):
            out = _ramp_add(cls, a, b)
        elif cls is Mul:
            out = _ramp_mul(a, b)
        else:
            out = None
        if out is not None:
            return out
        lanes = max(_lanes(a), _lanes(b))
        return cls(_broadcast(a, lanes), _broadcast(b, lanes))

    def visit_Not(self, e: Not) -> PrimExpr:
        a = self.visit(e.a)
        return e if a is e.a else Not(a)

    def visit_Cast(self, e: Cast) -> PrimExpr:
        v = self.visit(e.value)
        if v is e.value:
            return e
        dst = e.dtype.with_lanes(_lanes(v))
        if isinstance(v, Ramp) and _is_widening(v.dtype, dst):
            # each lane is a value of the narrow index expression, so widening lane by lane
            # equals widening base and stride: int64 offsets stay contiguous Ramps
            elem = dst.element_of()
            return Ramp(cast(elem, v.base), cast(elem, v.stride), v.lanes)
        return Cast(dst, v)

    def visit_Select(self, e: Select) -> PrimExpr:
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        lanes = max(_lanes(c), _lanes(t), _lanes(f))
        return Select(_broadcast(c, lanes), _broadcast(t, lanes), _broadcast(f, lanes))

    def visit_Call(self, e: Call) -> PrimExpr:
        args = [self.visit(a) for a in e.args]
        if all(a is b for a, b in zip(args, e.args)):
            return e
        op = e.op
        if not isinstance(op, Op) or not op.pure:  # extern calls stay scalar
            raise _NotVectorizable(f"call of {op} on a vector")
        if op.name == IF_THEN_ELSE:
            if not self.in_bounds(e.args[1]) or not self.in_bounds(e.args[2]):
                raise _NotVectorizable("if_then_else guards a load that may be out of bounds")
            return self.visit_Select(Select(*e.args))
        lanes = max(_lanes(a) for a in args)
        return Call(e.dtype.with_lanes(lanes), op, tuple(_broadcast(a, lanes) for a in args))

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        (index,) = self._flat_indices(e.buffer, e.indices)
        if index is e.indices[0]:
            return e
        if not isinstance(index, Ramp):
            raise _NotVectorizable("a load whose index is not affine in the loop var (a gather)")
        return BufferLoad(e.buffer, (index,), e.dtype.with_lanes(index.lanes))

    def _flat_indices(self, buf: Buffer, indices: tuple) -> tuple:
        if len(indices) != 1:
            raise _NotVectorizable(f"buffer '{buf.name}' is not flat yet")
        return (self.visit(indices[0]),)

    def visit_Let(self, e: Let) -> PrimExpr:
        raise _NotVectorizable("let expression")

    def visit_Ramp(self, e: Ramp) -> PrimExpr:
        raise _NotVectorizable("already vector code")

    visit_Broadcast = visit_Ramp

    # ---- statements
    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        (index,) = self._flat_indices(s.buffer, s.indices)
        if not isinstance(index, Ramp):
            raise _NotVectorizable(
                f"store to '{s.buffer.name}' does not move with the loop var (an accumulator)"
            )
        value = _broadcast(self.visit(s.value), index.lanes)
        return BufferStore(s.buffer, value, (index,))

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        return seq(*[self.visit(x) for x in s.seq])

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.visit(s.value)
        if _lanes(value) > 1:
            new = Var(s.var.name, value.dtype)
            self.vmap[id(s.var)] = new
            self.keep.append(s.var)
            return LetStmt(new, value, self.visit(s.body))
        return s.replace(value=value, body=self.visit(s.body))

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.visit(s.condition)
        if _lanes(cond) == 1:
            return s.replace(
                condition=cond,
                then_case=self.visit(s.then_case),
                else_case=None if s.else_case is None else self.visit(s.else_case),
            )
        out = [self._masked(x, cond, True) for x in _stores(s.then_case)]
        out += [self._masked(x, cond, False) for x in _stores(s.else_case)]
        return seq(*out)

    def _masked(self, store: BufferStore, cond: PrimExpr, when: bool) -> Stmt:
        """`if c: A[i] = v` → `A[i] = select(c, v, A[i])` when every load is in bounds."""
        old = BufferLoad(store.buffer, store.indices)
        if not self.in_bounds(old) or not self.in_bounds(store.value):
            raise _NotVectorizable("a guarded store whose loads may be out of bounds")
        new = self.visit_BufferStore(store)
        current = self.visit(old)
        value = Select(cond, new.value, current) if when else Select(cond, current, new.value)
        return new.replace(value=value)

    def generic_visit(self, n: Any) -> Any:
        if isinstance(n, Stmt):
            raise _NotVectorizable(f"{type(n).__name__} inside the loop")
        return super().generic_visit(n)


def _stores(s: Stmt | None) -> list[BufferStore]:
    if s is None:
        return []
    items = s.seq if isinstance(s, SeqStmt) else (s,)
    if not all(isinstance(x, BufferStore) for x in items):
        raise _NotVectorizable("a branch with a varying condition that is not plain stores")
    return list(items)


def _loads_in_bounds(analyzer: ScopedAnalyzer, expr: PrimExpr) -> bool:
    loads: list[BufferLoad] = []
    post_order_visit(expr, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
    return all(
        len(ld.indices) == 1
        and analyzer.can_prove(ld.indices[0] >= 0)
        and analyzer.can_prove(ld.indices[0] < ld.buffer.shape[0])
        for ld in loads
    )


class _VectorizeLoops(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.analyzer = ScopedAnalyzer()

    def visit_For(self, loop: For) -> Stmt:
        with self.analyzer.loop(loop):
            new = self.generic_visit(loop)
            if loop.kind != ForKind.VECTORIZED or not isinstance(loop.extent, IntImm):
                return new
            return self.vectorize(new)

    def vectorize(self, loop: For) -> Stmt:
        extent = loop.extent.value
        if extent == 0:
            return seq()
        if extent == 1:
            return substitute(loop.body, {loop.loop_var: loop.min})
        if extent > MAX_LANES:
            if extent % CHUNK_LANES:
                return loop
            return self.vectorize_chunks(loop, extent // CHUNK_LANES)
        in_bounds = lambda e: _loads_in_bounds(self.analyzer, e)
        try:
            return _Vectorizer(loop.loop_var, loop.min, extent, in_bounds).visit(loop.body)
        except _NotVectorizable:
            return loop

    def vectorize_chunks(self, loop: For, chunks: int) -> Stmt:
        outer = Var(loop.loop_var.name + "_c", loop.loop_var.dtype)
        start = binary(Add, loop.min, binary(Mul, outer, CHUNK_LANES))
        in_bounds = lambda e: _loads_in_bounds(self.analyzer, e)
        try:
            body = _Vectorizer(loop.loop_var, start, CHUNK_LANES, in_bounds).visit(loop.body)
        except _NotVectorizable:
            return loop
        return For(outer, 0, chunks, ForKind.SERIAL, body)


def vectorize_loop(func: PrimFunc) -> PrimFunc:
    """Vectorize every VECTORIZED loop of constant extent whose body allows it."""
    return func.replace(body=_VectorizeLoops().visit(func.body))


VectorizeLoop = prim_func_pass(vectorize_loop, "VectorizeLoop")
