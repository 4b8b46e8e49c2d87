"""RunCodegen: hand each `Codegen=<backend>` function to its backend's code generator.

TVM calls `relax.ext.<backend>` (a global function) with the backend's functions and gets
runtime modules back. minitvm has one code generator and one runtime, so its backends are
*host emulations*: `relax.ext.<backend>(functions, options, mod)` returns, for each function, a
relax function of ordinary ops that computes the same thing, and the normal build compiles it
for the host (`inline_composites` is the usual way to write one). A `Codegen` function whose
backend has no generator is an error, as in TVM: it cannot be built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...error import MiniTVMError
from ...ir.module import GlobalVar, IRModule
from ...ir.transform import Pass
from ...runtime.registry import get_global_func
from .. import expr as rx
from ..functor import ExprVisitor
from .fuse_ops_by_pattern import _substitute


def inline_composites(func: rx.Function, mod: IRModule) -> rx.Function:
    """`func` with every call of a `Composite` function of `mod` replaced by that function's
    bindings, and its `Codegen`/`global_symbol` attrs dropped: a plain host function."""
    blocks = []
    for block in func.body.blocks:
        bindings: list[rx.Binding] = []
        for b in block.bindings:
            callee = _composite(mod, getattr(b, "value", None))
            if callee is None:
                bindings.append(b)
                continue
            bindings += _inlined(callee, b, isinstance(block, rx.DataflowBlock))
        blocks.append(block.replace(bindings=tuple(bindings)))
    attrs = {k: v for k, v in func.attrs.items() if k not in ("Codegen", "global_symbol")}
    body = func.body.replace(blocks=tuple(blocks))
    return rx.Function(func.params, body, func.ret_struct_info, attrs)


def _composite(mod: IRModule, value: Any) -> rx.Function | None:
    if not (isinstance(value, rx.Call) and isinstance(value.op, GlobalVar) and value.op in mod):
        return None
    callee = mod[value.op]
    return callee if isinstance(callee, rx.Function) and callee.attrs.get("Composite") else None


def _inlined(callee: rx.Function, site: rx.VarBinding, dataflow: bool) -> list[rx.VarBinding]:
    """The composite's bindings with its params bound to the call's arguments; the last binds
    the call site's var."""
    table: dict[rx.Expr, rx.Expr] = dict(zip(callee.params, site.value.args, strict=True))
    inner = [b for block in callee.body.blocks for b in block.bindings]
    out = []
    for n, b in enumerate(inner):
        last = n == len(inner) - 1
        var = (
            site.var
            if last
            else (rx.DataflowVar if dataflow else rx.Var)(b.var.name_hint, b.var.struct_info)
        )
        out.append(rx.VarBinding(var, _substitute(b.value, table)))
        table[b.var] = var
    if not inner or callee.body.body is not inner[-1].var:
        raise MiniTVMError(
            f"RunCodegen: composite function '{site.value.op.name_hint}' does not return its "
            "last binding; only functions made by FuseOpsByPattern can be inlined"
        )
    return out


class _Calls(ExprVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.called: set[str] = set()

    def visit_call(self, call: rx.Call) -> None:
        super().visit_call(call)
        if isinstance(call.op, GlobalVar):
            self.called.add(call.op.name_hint)


def run_codegen(
    mod: IRModule,
    target_options: Mapping[str, Any] | None = None,
    entry_functions: Sequence[str] | None = None,
) -> IRModule:
    """Replace each `Codegen` function by what its backend's `relax.ext.<backend>` returns, then
    drop composite functions nothing calls any more."""
    by_backend: dict[str, list[GlobalVar]] = {}
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function) and func.attrs.get("Codegen"):
            by_backend.setdefault(str(func.attrs["Codegen"]), []).append(gv)
    if not by_backend:
        return mod
    out = mod.copy()
    for backend, gvs in by_backend.items():
        codegen = get_global_func(f"relax.ext.{backend}", allow_missing=True)
        if codegen is None:
            raise MiniTVMError(
                f"RunCodegen: functions {[g.name_hint for g in gvs]} are marked Codegen="
                f"'{backend}', but no code generator 'relax.ext.{backend}' is registered; import "
                f"the backend's module (e.g. tvm.relax.backend.contrib.{backend}) first"
            )
        options = dict((target_options or {}).get(backend, {}))
        new = list(codegen([mod[g] for g in gvs], options, mod))
        if len(new) != len(gvs) or not all(isinstance(f, rx.Function) for f in new):
            raise MiniTVMError(
                f"RunCodegen: 'relax.ext.{backend}' must return one relax Function per input "
                f"function ({len(gvs)}), got {[type(f).__name__ for f in new]}"
            )
        for gv, func in zip(gvs, new, strict=True):
            out[gv] = func
    return _drop_unused_composites(out, entry_functions)


def _drop_unused_composites(mod: IRModule, entry_functions: Sequence[str] | None) -> IRModule:
    visitor = _Calls()
    for _, func in mod.functions_items():
        if isinstance(func, rx.Function):
            visitor.visit_expr(func)
    keep = set(entry_functions or ())
    out = mod.copy()
    for gv, func in mod.functions_items():
        is_composite = isinstance(func, rx.Function) and func.attrs.get("Composite")
        if is_composite and gv.name_hint not in visitor.called and gv.name_hint not in keep:
            out.remove(gv)
    return out


def RunCodegen(
    target_options: Mapping[str, Any] | None = None, entry_functions: Sequence[str] | None = None
) -> Pass:
    """Run each external backend's code generator (relax/transform/run_codegen.py)."""
    return Pass(lambda mod: run_codegen(mod, target_options, entry_functions), "RunCodegen")


__all__ = ["RunCodegen", "inline_composites", "run_codegen"]
