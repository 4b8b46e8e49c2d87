"""CombineContextCall (TVM's pass): in a host function, each distinct
`tvm_thread_context(ctx)` call is evaluated once, into a `ctx_cache_` variable bound at the
top of its scope (the function, a thread launch, a coprocessor scope or a parallel loop:
places where another thread may run) and used everywhere below it."""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ...ir.structural import structural_equal
from ..expr import Call, PrimExpr, Var
from ..function import PrimFunc
from ..functor import Mutator
from ..names import is_call
from ..stmt import AttrStmt, For, ForKind, LetStmt, Stmt
from ._pass import prim_func_pass

THREAD_CONTEXT = "tir.tvm_thread_context"
_NEW_SCOPE_ATTRS = frozenset({"thread_extent", "coproc_uop_scope"})
_HOST_KINDS = frozenset({"llvm", "c"})


class _Combine(Mutator):
    """Context values are per scope, so nothing is memoised across scopes."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: list[tuple[PrimExpr, Var]] = []  # (context expression, its variable)

    def visit(self, n: Any) -> Any:
        self._memo.clear()
        return super().visit(n)

    def visit_Call(self, call: Call) -> PrimExpr:
        if not is_call(call, THREAD_CONTEXT):
            return self.generic_visit(call)
        if len(call.args) != 1 or not call.args[0].dtype.is_handle:
            raise BuildError(
                f"CombineContextCall: tvm_thread_context takes one handle argument, got {call}"
            )
        ctx = call.args[0]
        for known, var in self.cache:
            if structural_equal(known, ctx):
                return var
        var = Var("ctx_cache_", ctx.dtype)
        self.cache.append((ctx, var))
        return var

    def scoped(self, s: Stmt, visit_body: Any) -> Stmt:
        outer, self.cache = self.cache, []
        try:
            return bind(visit_body(s), self.cache)
        finally:
            self.cache = outer

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.attr_key in _NEW_SCOPE_ATTRS:
            return self.scoped(s, self.generic_visit)
        return self.generic_visit(s)

    def visit_For(self, loop: For) -> Stmt:
        if loop.kind == ForKind.PARALLEL:
            return self.scoped(loop, self.generic_visit)
        return self.generic_visit(loop)


def bind(body: Stmt, cache: list[tuple[PrimExpr, Var]]) -> Stmt:
    """Let-bind each cached context around `body`, the first one outermost."""
    for ctx, var in reversed(cache):
        body = LetStmt(var, ctx, body)
    return body


def _is_host_func(func: PrimFunc) -> bool:
    target = (func.attrs or {}).get("target")
    return target is not None and target.kind.name in _HOST_KINDS


def combine_context_call(func: PrimFunc) -> PrimFunc:
    """Hoist and share tvm_thread_context calls of a host function (see the module docstring);
    functions without a host target are left as they are."""
    if not _is_host_func(func):
        return func
    combine = _Combine()
    body = bind(combine.visit(func.body), combine.cache)
    return func if body is func.body else func.replace(body=body)


CombineContextCall = prim_func_pass(combine_context_call, "CombineContextCall")
