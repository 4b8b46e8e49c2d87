"""HoistExpression (TVM's generalised HoistIfThenElse): loop-invariant conditions and let
bindings move above the loops that do not affect them.

Loops are handled innermost first. At each loop the first invariant candidate of its body (in
program order) is hoisted: a condition `c` (of an if statement, of `T.if_then_else`, or one
conjunct of either) turns `for ...: body` into `if c: for ...: body|c else: for ...: body|!c`,
where `body|c` is the body with every condition that `c` decides folded away and loops left
empty dropped; a let binding becomes a LetStmt around the loop. Then the new loops are
searched again. Conditions that read memory, and anything under a sequence of statements,
stay where they are (as in TVM). Which candidates count is set by the PassContext config
{"tir.HoistExpression": {"hoisted_conditionals": int, "hoisted_let_bindings": int}} with the
flags below (TVM's values); a thread launch (thread_extent attr) is a hoisting site too when
conditions using thread variables may be hoisted.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ...ir.structural import structural_equal
from ..expr import And, BufferLoad, Call, IntImm, IterVar, Let, Not, PrimExpr, Var
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit
from ..names import IF_THEN_ELSE, is_call
from ..stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)  # fmt: skip
from ._pass import prim_func_pass
from ._rename import substitute_fresh

CONFIG_KEY = "tir.HoistExpression"
THREAD_EXTENT = "thread_extent"


class HoistedConditionals(enum.Flag):
    """Which conditions may be hoisted (TVM's flags and values)."""

    Never = 0
    IfElseStmt = 1  # conditions of if statements
    IfElseExpr = 2  # conditions of T.if_then_else
    BooleanExpression = 4  # each conjunct of a condition on its own
    UsingBlockVar = 8  # conditions that use a thread variable; hoisting over thread launches
    All = 15


class HoistedLetBindings(enum.Flag):
    """Which let bindings may be hoisted (TVM's flags and values)."""

    Never = 0
    RequiredByConditional = 1  # a LetStmt whose variable an if condition of its body uses
    LetStmt = 2
    LetExpr = 4
    All = 7


@dataclass(frozen=True)
class _Options:
    conds: HoistedConditionals
    lets: HoistedLetBindings


@dataclass(frozen=True)
class _Candidate:
    """A hoistable condition (`node` None), or a let binding (`node` the LetStmt or Let)."""

    cond: PrimExpr | None = None
    node: Any = None


def _var_ids(e: Any) -> set[int]:
    out: set[int] = set()
    post_order_visit(e, lambda n: out.add(id(n)) if isinstance(n, Var) else None)
    return out


def _reads_state(e: PrimExpr) -> bool:
    found: list[bool] = []

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad) or (
            isinstance(n, Call) and (isinstance(n.op, str) or not n.op.pure)
        ):
            found.append(True)

    post_order_visit(e, visit)
    return bool(found)


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    return _conjuncts(e.a) + _conjuncts(e.b) if isinstance(e, And) else [e]


class _Finder:
    """The first hoistable candidate in a site's body, in program order."""

    def __init__(self, opts: _Options, threads: set[int]) -> None:
        self.opts, self.threads = opts, threads

    def _invariant(self, e: PrimExpr, bound: set[int]) -> bool:
        if _reads_state(e):
            return False  # a load (or impure call) may see what the loop writes
        used = _var_ids(e)
        if used & bound:
            return False
        return bool(self.opts.conds & HoistedConditionals.UsingBlockVar) or not used & self.threads

    def _condition(self, cond: PrimExpr, bound: set[int]) -> _Candidate | None:
        split = self.opts.conds & HoistedConditionals.BooleanExpression
        for atom in _conjuncts(cond) if split else [cond]:
            if not isinstance(atom, IntImm) and self._invariant(atom, bound):
                return _Candidate(cond=atom)
        return None

    def expr(self, e: Any, bound: set[int]) -> _Candidate | None:
        if not isinstance(e, PrimExpr) or isinstance(e, Var | IntImm):
            return None
        if is_call(e, IF_THEN_ELSE) and self.opts.conds & HoistedConditionals.IfElseExpr:
            found = self._condition(e.args[0], bound)
            if found is not None:
                return found
        if isinstance(e, Let):
            if self.opts.lets & HoistedLetBindings.LetExpr and self._invariant(e.value, bound):
                return _Candidate(node=e)
            return self.expr(e.value, bound) or self.expr(e.body, bound | {id(e.var)})
        children = (
            e.args if isinstance(e, Call) else [getattr(e, f) for f in e.__dataclass_fields__]
        )
        for child in children:
            if isinstance(child, tuple):
                for c in child:
                    if (found := self.expr(c, bound)) is not None:
                        return found
            elif (found := self.expr(child, bound)) is not None:
                return found
        return None

    def _let_stmt_allowed(self, s: LetStmt) -> bool:
        if self.opts.lets & HoistedLetBindings.LetStmt:
            return True
        if not self.opts.lets & HoistedLetBindings.RequiredByConditional:
            return False
        used: list[bool] = []
        post_order_visit(
            s.body,
            lambda n: (
                used.append(id(s.var) in _var_ids(n.condition))
                if isinstance(n, IfThenElse)
                else None
            ),
        )
        return any(used)

    def stmt(self, s: Stmt, bound: set[int]) -> _Candidate | None:
        if isinstance(s, SeqStmt):
            return None  # as in TVM: nothing under a sequence is hoisted out of the loop
        if isinstance(s, IfThenElse):
            if self.opts.conds & HoistedConditionals.IfElseStmt:
                found = self._condition(s.condition, bound)
                if found is not None:
                    return found
            found = self.expr(s.condition, bound) or self.stmt(s.then_case, bound)
            return found or (self.stmt(s.else_case, bound) if s.else_case is not None else None)
        if isinstance(s, LetStmt):
            if self._let_stmt_allowed(s) and self._invariant(s.value, bound):
                return _Candidate(node=s)
            return self.expr(s.value, bound) or self.stmt(s.body, bound | {id(s.var)})
        if isinstance(s, For):
            return self.stmt(s.body, bound | {id(s.loop_var)})
        if isinstance(s, AttrStmt):
            inner = {id(s.node.var)} if isinstance(s.node, IterVar) else set()
            return self.expr(s.value, bound) or self.stmt(s.body, bound | inner)
        if isinstance(s, Allocate):
            return self.stmt(s.body, bound | {id(s.buffer_var)})
        if isinstance(s, DeclBuffer):
            return self.stmt(s.body, bound)
        if isinstance(s, BufferStore):
            for e in (s.value, *s.indices):
                if (found := self.expr(e, bound)) is not None:
                    return found
            return None
        if isinstance(s, Evaluate):
            return self.expr(s.value, bound)
        return None  # blocks, asserts, ...: not searched


class _Specialize(Mutator):
    """Fold the conditions an assumption decides; drop what is left empty."""

    def __init__(self, assumption: PrimExpr) -> None:
        super().__init__()
        from ...arith import Analyzer  # arith sits below tir.transform

        self.ana = Analyzer()
        self.assumption = assumption

    def run(self, s: Stmt) -> Stmt:
        with self.ana.constraint_scope(self.assumption):
            return self.visit(s)

    def decide(self, cond: PrimExpr) -> PrimExpr | bool:
        """The condition with known conjuncts dropped, or True/False when decided."""
        negated = self.assumption.a if isinstance(self.assumption, Not) else None
        if structural_equal(cond, self.assumption):
            return True
        if negated is not None and structural_equal(cond, negated):
            return False
        left = []
        for atom in _conjuncts(cond):
            if self.ana.can_prove(atom):
                continue
            if self.ana.can_prove(Not(atom)):
                return False
            left.append(atom)
        if not left:
            return True
        if len(left) == len(_conjuncts(cond)):
            return cond
        out = left[0]
        for atom in left[1:]:
            out = And(out, atom)
        return out

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.decide(s.condition)
        if cond is True:
            return self.visit(s.then_case)
        if cond is False:
            return self.visit(s.else_case) if s.else_case is not None else _no_op()
        then_case = self.visit(s.then_case)
        else_case = self.visit(s.else_case) if s.else_case is not None else None
        if else_case is not None and _is_no_op(else_case):
            else_case = None
        if _is_no_op(then_case) and else_case is None:
            return _no_op()
        return s.replace(condition=cond, then_case=then_case, else_case=else_case)

    def visit_Call(self, call: Call) -> PrimExpr:
        if is_call(call, IF_THEN_ELSE):
            cond = self.decide(call.args[0])
            if cond is True:
                return self.visit(call.args[1])
            if cond is False:
                return self.visit(call.args[2])
        return self.generic_visit(call)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        parts = [self.visit(p) for p in s.seq]
        return seq(*[p for p in parts if not _is_no_op(p)])

    def visit_For(self, loop: For) -> Stmt:
        body = self.visit(loop.body)
        return _no_op() if _is_no_op(body) else loop.replace(body=body)


class _Unbind(Mutator):
    """Remove one let binding (by identity), keeping its body."""

    def __init__(self, node: Any) -> None:
        super().__init__()
        self.node = node

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        return self.visit(s.body) if s is self.node else self.generic_visit(s)

    def visit_Let(self, e: Let) -> PrimExpr:
        return self.visit(e.body) if e is self.node else self.generic_visit(e)


def _is_site(s: Stmt) -> bool:
    return isinstance(s, AttrStmt) and s.attr_key == THREAD_EXTENT and isinstance(s.node, IterVar)


def _no_op() -> Stmt:
    return Evaluate(IntImm("int32", 0))


def _is_no_op(s: Stmt) -> bool:
    if isinstance(s, Evaluate):
        return isinstance(s.value, IntImm)
    if isinstance(s, SeqStmt):
        return all(_is_no_op(p) for p in s.seq)
    if isinstance(s, For | LetStmt | AttrStmt):
        return _is_no_op(s.body)
    if isinstance(s, IfThenElse):
        return _is_no_op(s.then_case) and (s.else_case is None or _is_no_op(s.else_case))
    return False


class _Hoist(Mutator):
    def __init__(self, opts: _Options, threads: set[int]) -> None:
        super().__init__()
        self.opts = opts
        self.finder = _Finder(opts, threads)
        self.active: list[PrimExpr] = []  # conditions being hoisted, outermost first

    def visit_For(self, loop: For) -> Stmt:
        return self.hoist(loop.replace(body=self.visit(loop.body)))

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        s = s.replace(body=self.visit(s.body))
        if _is_site(s) and self.opts.conds & HoistedConditionals.UsingBlockVar:
            return self.hoist(s)
        return s

    def hoist(self, site: For | AttrStmt) -> Stmt:
        var = site.loop_var if isinstance(site, For) else site.node.var
        found = self.finder.stmt(site.body, {id(var)})
        if found is None:
            return site
        if found.node is not None:  # a let binding: bind it around the site
            inner = self.hoist(_Unbind(found.node).visit(site))
            return LetStmt(found.node.var, found.node.value, inner)
        if any(structural_equal(found.cond, c) for c in self.active):
            return site  # the condition did not fold away: hoisting it again would not end
        self.active.append(found.cond)
        try:
            return self._split(site, found.cond)
        finally:
            self.active.pop()

    def _split(self, site: For | AttrStmt, cond: PrimExpr) -> Stmt:
        then_case = _Specialize(cond).run(site)
        else_case = _Specialize(Not(cond)).run(site)
        then_case = _no_op() if _is_no_op(then_case) else self._again(then_case)
        if _is_no_op(else_case):
            else_case = None
        else:  # the loop now exists twice: the copy gets its own variables (SSA)
            else_case = self._again(substitute_fresh(else_case, {}))
        return IfThenElse(cond, then_case, else_case)

    def _again(self, s: Stmt) -> Stmt:
        return self.hoist(s) if isinstance(s, For) or _is_site(s) else s


def _options() -> _Options:
    from ...ir.transform import PassContext

    given = PassContext.current().config.get(CONFIG_KEY) or {}
    conds = given.get("hoisted_conditionals", HoistedConditionals.All)
    lets = given.get("hoisted_let_bindings", HoistedLetBindings.All)
    return _Options(HoistedConditionals(int(getattr(conds, "value", conds))),
                    HoistedLetBindings(int(getattr(lets, "value", lets))))  # fmt: skip


def _thread_vars(body: Stmt) -> set[int]:
    out: set[int] = set()

    def visit(n: Any) -> None:
        if isinstance(n, AttrStmt) and n.attr_key == THREAD_EXTENT and isinstance(n.node, IterVar):
            out.add(id(n.node.var))
        elif isinstance(n, For) and n.thread_binding is not None:
            out.add(id(n.loop_var))

    post_order_visit(body, visit)
    return out


def hoist_expression(func: PrimFunc) -> PrimFunc:
    """Hoist loop-invariant conditions and let bindings (see the module docstring)."""
    body = _Hoist(_options(), _thread_vars(func.body)).visit(func.body)
    return func if body is func.body else func.replace(body=body)


HoistExpression = prim_func_pass(hoist_expression, "HoistExpression")
