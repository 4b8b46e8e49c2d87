"""CommonSubexprElimTIR: compute a repeated expression once, in a `cse_var_N` let binding.

At each statement, every pure computation (no loads, calls or lets; at least one operator)
that it evaluates at least twice and whose variables are all bound there is given a variable:
`let cse_var_N = e` wraps the statement and each occurrence of `e` in it becomes the variable.
The largest such computation goes first; then the counts are taken again, counting the values
of the variables just introduced (so `(x + y) + z` twice and `x + y` once more gives
`cse_var_2 = x + y; cse_var_1 = cse_var_2 + z`). Then the children are processed the same way.

What a statement evaluates: its own expressions, the value and body of a let, the bodies of
attribute/allocation scopes and sequences, the condition of an `if` and what both of its
branches evaluate, and only the bounds of a loop (a loop body may run zero times, so nothing
is moved out of it). Blocks are left alone. With `identify_equiv_terms`, integer computations
that simplify to the same canonical form count as one (`x * (y + z)` and `x * y + x * z`)
and the variable holds that form; float computations are only matched exactly, so results
stay bit-identical.
"""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal, structural_hash
from ..expr import (
    Broadcast,
    BufferLoad,
    Call,
    FloatImm,
    IntImm,
    Let,
    PrimExpr,
    Ramp,
    StringImm,
    Var,
)
from ..function import PrimFunc
from ..functor import map_outermost, post_order_visit, pre_order_visit
from ..stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    BlockRealize,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from ._pass import prim_func_pass

_LEAVES = (Var, IntImm, FloatImm, StringImm)
_NOT_ELIGIBLE = (BufferLoad, Call, Let, Ramp, Broadcast)


def _eligible(e: PrimExpr) -> bool:
    """A computation worth a variable: an operator over leaves, with no memory read, call
    (possibly impure) or binding inside."""
    if isinstance(e, _LEAVES) or not isinstance(e, PrimExpr):
        return False
    bad: list[Any] = []
    post_order_visit(e, lambda n: bad.append(n) if isinstance(n, _NOT_ELIGIBLE) else None)
    return not bad


def _size(e: PrimExpr) -> int:
    count = [0]
    post_order_visit(e, lambda n: count.__setitem__(0, count[0] + 1))
    return count[0]


def _vars(e: PrimExpr) -> set[int]:
    out: set[int] = set()
    post_order_visit(e, lambda n: out.add(id(n)) if isinstance(n, Var) else None)
    return out


class _Table:
    """Computations with their occurrence counts, grouped by (canonical) structural equality."""

    def __init__(self, cse: _CSE) -> None:
        self.cse = cse
        self.groups: dict[int, list[list[Any]]] = {}  # hash -> [[key, first expr, count]]

    def add(self, e: PrimExpr, count: int = 1) -> None:
        key = self.cse.key(e)
        bucket = self.groups.setdefault(structural_hash(key), [])
        for entry in bucket:
            if structural_equal(entry[0], key):
                entry[2] += count
                return
        bucket.append([key, e, count])

    def entries(self) -> list[list[Any]]:
        return [entry for bucket in self.groups.values() for entry in bucket]

    def both(self, other: _Table) -> _Table:
        """Computations of both tables, each with its smaller count (an if's two branches)."""
        out = _Table(self.cse)
        for key, e, count in self.entries():
            for key2, _, count2 in other.entries():
                if structural_equal(key, key2):
                    out.add(e, min(count, count2))
        return out

    def merge(self, other: _Table) -> None:
        for _, e, count in other.entries():
            self.add(e, count)


class _CSE:
    def __init__(self, identify_equiv_terms: bool) -> None:
        from ...arith import Analyzer

        self.equiv = identify_equiv_terms
        self.ana = Analyzer()
        self.counter = 0
        self._canon: dict[int, tuple[PrimExpr, PrimExpr]] = {}

    def key(self, e: PrimExpr) -> PrimExpr:
        """What two occurrences must share to be one computation."""
        if not (self.equiv and e.dtype.is_int):
            return e
        hit = self._canon.get(id(e))
        if hit is None or hit[0] is not e:
            hit = (e, self.ana.simplify(e))
            self._canon[id(e)] = hit
        return hit[1]

    # --- what a statement evaluates -----------------------------------------------------
    def _exprs(self, table: _Table, e: Any) -> None:
        def note(n: Any) -> None:
            if isinstance(n, PrimExpr) and _eligible(n):
                table.add(n)

        pre_order_visit(e, lambda n: note(n) if isinstance(n, PrimExpr) else None)

    def table(self, s: Stmt) -> _Table:
        out = _Table(self)
        stack = [s]
        while stack:
            s = stack.pop()
            if isinstance(s, SeqStmt):
                stack += list(s.seq)
            elif isinstance(s, LetStmt):
                self._exprs(out, s.value)
                stack.append(s.body)
            elif isinstance(s, IfThenElse):
                self._exprs(out, s.condition)
                if s.else_case is not None:
                    out.merge(self.table(s.then_case).both(self.table(s.else_case)))
            elif isinstance(s, For):
                self._exprs(out, (s.min, s.extent))
            elif isinstance(s, While):
                self._exprs(out, s.condition)
            elif isinstance(s, BufferStore):
                self._exprs(out, (s.value, *s.indices))
            elif isinstance(s, Evaluate):
                self._exprs(out, s.value)
            elif isinstance(s, AssertStmt | AttrStmt):
                self._exprs(out, s.condition if isinstance(s, AssertStmt) else s.value)
                stack.append(s.body)
            elif isinstance(s, Allocate | AllocateConst | DeclBuffer):
                stack.append(s.body)
        return out

    # --- rewriting ----------------------------------------------------------------------
    def replace(self, node: Any, key: PrimExpr, var: Var) -> Any:
        def match(n: Any) -> bool:
            if not isinstance(n, PrimExpr) or isinstance(n, _LEAVES) or n.dtype != var.dtype:
                return False
            return structural_equal(self.key(n), key) and _eligible(n)

        return map_outermost(node, match, lambda n: var)

    def introduce(self, s: Stmt, context: set[int]) -> tuple[Stmt, list[tuple[Var, PrimExpr]]]:
        """`s` with its repeated computations replaced, and the (var, value) pairs introduced."""
        lets: list[tuple[Var, PrimExpr]] = []
        while True:
            table = self.table(s)
            for _, value in lets:
                self._exprs(table, value)
            best = None
            for order, (key, e, count) in enumerate(table.entries()):
                if count < 2 or not _vars(e) <= context:
                    continue
                rank = (_size(e), -order)
                if best is None or rank > best[0]:
                    best = (rank, key, e)
            if best is None:
                return s, lets
            _, key, e = best
            self.counter += 1
            var = Var(f"cse_var_{self.counter}", e.dtype)
            value = key if self.equiv and e.dtype.is_int else e
            s = self.replace(s, key, var)
            lets = [(v, self.replace(x, key, var)) for v, x in lets]
            lets.append((var, value))
            context = context | {id(var)}

    def stmt(self, s: Stmt, context: set[int]) -> Stmt:
        s, lets = self.introduce(s, context)
        context = context | {id(v) for v, _ in lets}
        s = self.children(s, context)
        for var, value in lets:  # the first introduced is innermost: later ones feed it
            s = LetStmt(var, value, s)
        return s

    def children(self, s: Stmt, context: set[int]) -> Stmt:
        if isinstance(s, SeqStmt):
            return s.replace(seq=tuple(self.stmt(x, context) for x in s.seq))
        if isinstance(s, LetStmt):
            return s.replace(body=self.stmt(s.body, context | {id(s.var)}))
        if isinstance(s, For):
            return s.replace(body=self.stmt(s.body, context | {id(s.loop_var)}))
        if isinstance(s, IfThenElse):
            other = None if s.else_case is None else self.stmt(s.else_case, context)
            return s.replace(then_case=self.stmt(s.then_case, context), else_case=other)
        if isinstance(s, While | AssertStmt | AttrStmt | Allocate | AllocateConst | DeclBuffer):
            return s.replace(body=self.stmt(s.body, context))
        return s  # leaves, and blocks (left alone)


def common_subexpr_elim(func: PrimFunc, identify_equiv_terms: bool = False) -> PrimFunc:
    """`func` with repeated pure computations bound once to `cse_var_N` variables."""
    if _has_blocks(func.body):
        return func
    context = {id(p) for p in func.params}
    for buf in func.buffer_map.values():
        post_order_visit(buf, lambda n: context.add(id(n)) if isinstance(n, Var) else None)
    return func.replace(body=_CSE(identify_equiv_terms).stmt(func.body, context))


def _has_blocks(body: Stmt) -> bool:
    found: list[Any] = []
    post_order_visit(body, lambda n: found.append(n) if isinstance(n, BlockRealize) else None)
    return bool(found)


def CommonSubexprElimTIR(enable_cse_tir: bool = True, identify_equiv_terms: bool = False) -> Any:
    """TVM's pass object: `tvm.tir.transform.CommonSubexprElimTIR(identify_equiv_terms=True)`."""

    def run(func: PrimFunc) -> PrimFunc:
        if not enable_cse_tir:
            return func
        return common_subexpr_elim(func, identify_equiv_terms)

    return prim_func_pass(run, "CommonSubexprElimTIR")()
