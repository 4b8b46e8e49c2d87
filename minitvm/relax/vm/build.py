"""`relax.build`: run the default pipeline, compile every PrimFunc into one native module and
every relax function into a VM program."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from ...error import BuildError
from ...ir.module import IRModule
from ...tir.function import PrimFunc
from ..expr import Call, ExternFunc, Function, Op
from ..functor import ExprMutator, ExprVisitor
from ..struct_info import PrimStructInfo, TupleStructInfo
from . import build_cache
from .codegen import vm_codegen
from .executable import Executable


def build(
    mod: IRModule | Function,
    target: Any = "llvm",
    params: Mapping[str, Any] | None = None,
    exec_mode: str = "bytecode",
    profile: bool = False,
) -> Executable:
    """Compile a module of relax functions and PrimFuncs; returns an Executable. `profile=True`
    prints the seconds of each stage and of the slowest kernels (driver/build_profile.py).

    `exec_mode` is TVM's "bytecode" or "compiled"; both give the same Executable here: the VM
    turns the register program into one Python closure per instruction when it loads it, which
    is what TVM's "compiled" mode does with C, so there is no separate compiled form.

    >>> ex = relax.build(mod, target="llvm"); vm = relax.VirtualMachine(ex, tvm.cpu())
    """
    from ...driver.build_profile import current, profiling

    if profile:
        with profiling() as prof:
            ex = _build(mod, target, params, exec_mode, prof)
        print(prof.report())  # asked for by profile=True
        ex.build_profile = prof
        return ex
    return _build(mod, target, params, exec_mode, current())  # a caller's profiling()


def _build(mod: Any, target: Any, params: Any, exec_mode: str, prof: Any) -> Executable:
    from ..transform import bind_params

    if exec_mode not in ("bytecode", "compiled"):
        raise BuildError(
            f"relax.build: exec_mode {exec_mode!r} is not one of TVM's modes; use 'bytecode' "
            "or 'compiled' (they build the same Executable)"
        )
    if isinstance(mod, Function):
        mod = IRModule({"main": mod})
    if not isinstance(mod, IRModule):
        raise BuildError(
            f"relax.build: expected an IRModule or a relax Function, got {type(mod).__name__}"
        )
    if params:
        mod = bind_params(mod, "main", params)
    key, ex = _cached(mod, target, prof)
    if ex is not None:
        return ex
    ex = _compile_module(mod, target, prof)
    if key is not None:
        with _timed(prof, "compile cache"):
            build_cache.store(key, ex)
    return ex


def _cached(mod: IRModule, target: Any, prof: Any) -> tuple[Any, Executable | None]:
    """The whole-build cache's key for this build and the Executable stored under it (None on
    a miss); the key is None when the build cannot be cached (build_cache.py)."""
    with _timed(prof, "compile cache"):
        key = build_cache.build_key(mod, target)
        ex = build_cache.load(key) if key is not None else None
    if prof is not None and key is not None:
        state = "hit: no graph passes, no schedule, no LLVM" if ex is not None else "miss"
        prof.notes.append(f"compile cache {state} (whole build)")
    return key, ex


def _timed(prof: Any, stage: str) -> Any:
    return prof.timed(stage) if prof is not None else contextlib.nullcontext()


def _compile_module(mod: IRModule, target: Any, prof: Any) -> Executable:
    """The graph passes, the default schedule, `tvm.build` of the kernels and VM codegen."""
    from ... import driver
    from ..pipeline import run_default_pipeline

    mod = resolve_prim_calls_by_name(mod)
    if prof is None:
        mod = run_default_pipeline(mod, target)
    else:
        mod = _timed_pipeline(mod, target, prof)
    check_call_tir_arity(mod)
    prims = IRModule()
    prim_names: dict[str, str] = {}
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            # the module's name is the symbol (te.create_prim_func names every function "main")
            prims[gv.name_hint] = func.with_attr("global_symbol", gv.name_hint)
            prim_names[gv.name_hint] = gv.name_hint
    native = driver.build(prims, target=target) if prim_names else None
    start = time.perf_counter()
    program, constants = vm_codegen(mod, prim_names)
    if prof is not None:
        prof.add("VM codegen", time.perf_counter() - start)
    return Executable(native, program, constants)


def _timed_pipeline(mod: IRModule, target: Any, prof: Any) -> IRModule:
    """run_default_pipeline with each outermost pass timed into `prof` (a pass instrument added
    to the current PassContext for the run)."""
    from ...driver.build_profile import PassTimer
    from ...ir.transform import PassContext
    from ..pipeline import run_default_pipeline

    ctx = PassContext.current()
    before = ctx.instruments
    ctx.instruments = (*before, PassTimer(prof))
    try:
        return run_default_pipeline(mod, target)
    finally:
        ctx.instruments = before


class _ByName(ExprMutator):
    def __init__(self, prims: dict) -> None:
        super().__init__()
        self.prims = prims

    def visit_call(self, call: Call):
        call = super().visit_call(call)
        if (
            isinstance(call.op, Op)
            and call.op.name == "relax.call_dps_packed"
            and isinstance(call.args[0], ExternFunc)
            and call.args[0].global_symbol in self.prims
        ):
            from ..op import call_tir

            gv = self.prims[call.args[0].global_symbol]
            return call_tir(gv, call.args[1], call.sinfo_args[0])
        return call


def resolve_prim_calls_by_name(mod: IRModule) -> IRModule:
    """`call_dps_packed("linear0", ...)` of a PrimFunc of the module (the MLC course calls them
    so) becomes `call_tir(linear0, ...)`, so that passes see the callee."""
    prims = {}
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            prims[gv.name_hint] = gv
    if not prims:
        return mod
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, Function):
            new = _ByName(prims).visit_function(func)
            if new is not func:
                out[gv] = new
    return out


class _Arity(ExprVisitor):
    def __init__(self, mod: IRModule, caller: str) -> None:
        super().__init__()
        self.mod, self.caller = mod, caller

    def visit_call(self, call: Call) -> None:
        super().visit_call(call)
        if getattr(call.op, "name", None) != "relax.call_tir":
            return
        gv = call.args[0]
        prim = self.mod[gv] if gv.name_hint in self.mod else None
        if not isinstance(prim, PrimFunc):
            return
        # TVM passes the args tuple, the outputs and the tir_vars positionally: an R.Prim in
        # the args tuple goes to a scalar param at its own position
        fields = call.args[1].fields if hasattr(call.args[1], "fields") else (call.args[1],)
        sinfo = call.sinfo_args[0]
        outputs = len(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else 1
        tir_vars = len(call.args[2].values) if len(call.args) > 2 else 0
        passed = [_kind(f) for f in fields] + ["buffer"] * outputs + ["scalar"] * tir_vars
        taken = ["buffer" if p in prim.buffer_map else "scalar" for p in prim.params]
        if passed == taken:
            return
        scalars = [p.name for p in prim.params if p not in prim.buffer_map]
        raise BuildError(
            f"relax function '{self.caller}': call_tir of '{gv.name_hint}' passes "
            f"({', '.join(passed)}) for {len(fields)} input(s), {outputs} output(s) and "
            f"{tir_vars} tir_vars, but '{gv.name_hint}' takes ({', '.join(taken)}): "
            f"{len(taken) - len(scalars)} buffer(s) and {len(scalars)} scalar param(s) "
            f"({', '.join(scalars) or 'none'}); pass a tensor per buffer param and an R.Prim "
            "input or tir_vars entry per scalar param, in the PrimFunc's order"
        )


def _kind(arg: Any) -> str:
    """What a call_tir input fills in the PrimFunc: a buffer, or a scalar (an R.Prim value)."""
    return "scalar" if isinstance(getattr(arg, "struct_info", None), PrimStructInfo) else "buffer"


def check_call_tir_arity(mod: IRModule) -> None:
    """Every call_tir passes one tensor per buffer param and one tir_var per scalar param."""
    for gv, func in mod.functions_items():
        if isinstance(func, Function):
            _Arity(mod, gv.name_hint).visit_expr(func)
