"""ExpandTupleArguments: a private function's tuple parameters become one parameter per (nested)
field, and every call passes the fields (TVM's semantics).

Exposed functions (a `global_symbol`) keep their signature. Inside the callee the old parameter
is rebuilt as a tuple of the new ones, and CanonicalizeBindings + DeadCodeElimination then read
`args[i]` as the field itself and drop what became unused, as TVM's pass does.
"""

from __future__ import annotations

from ...ir.module import GlobalVar, IRModule
from ...ir.transform import Pass
from .. import expr as rx
from .. import struct_info as si
from ..functor import ExprMutator
from .canonicalize_bindings import canonicalize_bindings
from .dead_code_elimination import dead_code_elimination


def _expand_params(func: rx.Function) -> rx.Function | None:
    """`func` with flat parameters, or None when it is exposed or has no tuple parameter."""
    if func.attrs.get("global_symbol") or not any(
        isinstance(p.struct_info, si.TupleStructInfo) for p in func.params
    ):
        return None
    params: list[rx.Var] = []
    rebuilt: list[rx.Binding] = []  # inner tuples first, so each binding reads defined vars

    def expand(param: rx.Var) -> None:
        sinfo = param.struct_info
        if not isinstance(sinfo, si.TupleStructInfo):
            params.append(param)
            return
        fields = [rx.Var(f"{param.name_hint}_{i}", f) for i, f in enumerate(sinfo.fields)]
        for f in fields:
            expand(f)
        rebuilt.append(rx.VarBinding(param, rx.Tuple(tuple(fields))))

    for p in func.params:
        expand(p)
    body = func.body
    blocks = (rx.BindingBlock(tuple(rebuilt)),)
    if isinstance(body, rx.SeqExpr):
        body = rx.SeqExpr(blocks + tuple(body.blocks), body.body)
    else:
        body = rx.SeqExpr(blocks, body)
    return func.replace(params=tuple(params), body=body)


def _flatten(arg: rx.Expr, out: list[rx.Expr]) -> None:
    sinfo = arg.struct_info
    if not isinstance(sinfo, si.TupleStructInfo):
        out.append(arg)
        return
    for i in range(len(sinfo.fields)):
        field = arg.fields[i] if isinstance(arg, rx.Tuple) else rx.TupleGetItem(arg, i)
        _flatten(field, out)


class _CallSites(ExprMutator):
    def __init__(self, expanded: set[str]) -> None:
        super().__init__()
        self.expanded = expanded

    def visit_call(self, call: rx.Call) -> rx.Expr:
        call = super().visit_call(call)
        if not (isinstance(call.op, GlobalVar) and call.op.name_hint in self.expanded):
            return call
        args: list[rx.Expr] = []
        for a in call.args:
            _flatten(a, args)
        return call.replace(args=tuple(args))


def expand_tuple_arguments(mod: IRModule) -> IRModule:
    """`mod` with the tuple parameters of its private relax functions flattened."""
    out = mod.copy()
    expanded: set[str] = set()
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function):
            new = _expand_params(func)
            if new is not None:
                out[gv] = new
                expanded.add(gv.name_hint)
    if not expanded:
        return mod
    for gv, func in out.functions_items():
        if isinstance(func, rx.Function):
            new = _CallSites(expanded).visit_function(func)
            if new is not func:
                out[gv] = new
    return dead_code_elimination(canonicalize_bindings(out))


def ExpandTupleArguments() -> Pass:
    """Flatten the tuple parameters of private functions (expand_tuple_arguments.py)."""
    return Pass(expand_tuple_arguments, "ExpandTupleArguments")
