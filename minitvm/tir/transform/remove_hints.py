"""Remove builtins that only carry information for analysis: `T.assume` and `T.undef()`.

RemoveAssume drops every `T.evaluate(T.assume(cond))`. RemoveStoreUndef drops every store
whose value depends on `T.undef()` (directly or through a `LetStmt` bound to it) and such let
bindings; a `T.undef()` left anywhere else (an index) is an error. Both end with RemoveNoOp,
so loops left empty disappear.
"""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ..expr import BufferLoad, Call, Op, Var
from ..function import PrimFunc
from ..functor import Mutator, Visitor
from ..stmt import BufferStore, Evaluate, LetStmt, Stmt
from ._pass import prim_func_pass
from .remove_no_op import _NO_OP, remove_no_op


def _is_call(e: Any, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "tir." + name


class _DropAssume(Mutator):
    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        return _NO_OP if _is_call(s.value, "assume") else s


def remove_assume(func: PrimFunc) -> PrimFunc:
    """Drop `T.evaluate(T.assume(...))` statements, then the no-ops left behind."""
    return remove_no_op(func.replace(body=_DropAssume().visit(func.body)))


class _HasUndef(Visitor):
    """Whether an expression's value depends on T.undef(); buffer indices are not looked at
    (an undef there is reported by the final check instead)."""

    def __init__(self, undef_vars: set[int]) -> None:
        self.undef_vars, self.found = undef_vars, False

    def visit_Call(self, call: Call) -> None:
        self.found |= _is_call(call, "undef")
        self.generic_visit(call)

    def visit_Var(self, v: Var) -> None:
        self.found |= id(v) in self.undef_vars

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        pass


class _DropUndef(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.undef_vars: set[int] = set()

    def _has_undef(self, e: Any) -> bool:
        check = _HasUndef(self.undef_vars)
        check.visit(e)
        return check.found

    def visit_LetStmt(self, let: LetStmt) -> Stmt:
        if self._has_undef(let.value):
            self.undef_vars.add(id(let.var))
            return self.visit(let.body)
        return self.generic_visit(let)

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        return _NO_OP if self._has_undef(store.value) else store


class _AnyUndef(Visitor):
    """Whether T.undef() or a variable bound to it occurs anywhere (indices included)."""

    def __init__(self, undef_vars: set[int]) -> None:
        self.undef_vars, self.found = undef_vars, False

    def visit_Call(self, call: Call) -> None:
        self.found |= _is_call(call, "undef")
        self.generic_visit(call)

    def visit_Var(self, v: Var) -> None:
        self.found |= id(v) in self.undef_vars


def remove_store_undef(func: PrimFunc) -> PrimFunc:
    """Drop stores (and let bindings) whose value uses `T.undef()`, then the no-ops left."""
    dropper = _DropUndef()
    body = dropper.visit(func.body)
    left = _AnyUndef(dropper.undef_vars)
    left.visit(body)
    if left.found:
        raise BuildError(
            "RemoveStoreUndef: T.undef() (or a variable bound to it) is used outside the value "
            "of a BufferStore, e.g. as a buffer index; T.undef() may only be stored"
        )
    return remove_no_op(func.replace(body=body))


RemoveAssume = prim_func_pass(remove_assume, "RemoveAssume")
RemoveStoreUndef = prim_func_pass(remove_store_undef, "RemoveStoreUndef")
