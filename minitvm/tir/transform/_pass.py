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
        out = mod.copy()
        for gv, func in mod.functions_items():
            if isinstance(func, PrimFunc):
                new = fn(func)
                if new is not func:
                    out[gv] = new
        return out

    def factory() -> Pass:
        return Pass(run, name)

    factory.__name__ = name
    factory.__doc__ = (
        f"The `{fn.__name__}` pass as a module pass: `tvm.tir.transform.{name}()(mod)`."
    )
    return factory
