"""Turn a `PrimFunc -> PrimFunc` function into a TVM-style pass object applied per PrimFunc."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.module import IRModule
from ...ir.transform import Pass
from ..function import PrimFunc


def prim_func_pass(fn: Callable[[PrimFunc], PrimFunc], name: str) -> Callable[[], Pass]:
    """A factory `Name()` whose Pass runs `fn` on every PrimFunc of an IRModule (or on a PrimFunc)."""

    def run(mod: IRModule | PrimFunc) -> IRModule | PrimFunc:
        if isinstance(mod, PrimFunc):
            return fn(mod)
        return mod.map_functions(PrimFunc, fn)

    def factory() -> Pass:
        return Pass(run, name)

    factory.__name__ = name
    factory.__doc__ = (
        f"The `{fn.__name__}` pass as a module pass: `tvm.tir.transform.{name}()(mod)`."
    )
    return factory


class PrimFuncPass(Pass):
    """A pass over every PrimFunc of a module (what `tvm.tir.transform.prim_func_pass` makes)."""


def _run_per_prim_func(transform: Callable, mod: IRModule | PrimFunc) -> IRModule | PrimFunc:
    """transform(func, mod, ctx) on each PrimFunc; a None result drops the function (TVM's
    rule for a PrimFuncPass)."""
    from ...ir.transform import PassContext

    ctx = PassContext.current()
    if isinstance(mod, PrimFunc):
        return transform(mod, IRModule({"main": mod}), ctx)
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            new = transform(func, mod, ctx)
            if new is None:
                out.remove(gv)
            elif new is not func:
                out[gv] = new
    return out


def _make_public_decorator() -> Callable:
    from ...ir.transform import _make_pass_decorator

    decorator = _make_pass_decorator(PrimFuncPass, "transform_function", _run_per_prim_func)
    decorator.__name__ = "prim_func_pass"
    decorator.__doc__ = """TVM's decorator: a pass of a `fn(func, mod, ctx) -> func` (or a class
with `transform_function`) run on every PrimFunc: `@tvm.tir.transform.prim_func_pass(opt_level=0)`."""
    return decorator


# `tvm.tir.transform.prim_func_pass`; `prim_func_pass` above makes this package's own passes
public_prim_func_pass = _make_public_decorator()
