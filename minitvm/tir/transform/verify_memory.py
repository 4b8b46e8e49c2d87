"""The VerifyMemory pass: every PrimFunc checked by analysis.verify_memory, with a BuildError
(a RuntimeError, as TVM raises) that lists the accesses and says how to fix them."""

from __future__ import annotations

from ...error import BuildError
from ...ir.module import IRModule
from ...ir.transform import Pass
from ..analysis.verify_memory import memory_errors
from ..function import PrimFunc


def verify_memory_module(mod: IRModule) -> IRModule:
    """The module unchanged, or BuildError when a function touches device memory from the host."""
    for gv, func in mod.functions_items():
        if not isinstance(func, PrimFunc):
            continue
        errors = memory_errors(func)
        if errors:
            listed = "\n".join(f"    {e}" for e in errors)
            raise BuildError(
                f"memory verification of '{gv.name_hint}' failed:\n{listed}\n"
                "  Did you forget to bind? Bind the loops that touch these buffers to "
                "blockIdx/threadIdx so they run on the device."
            )
    return mod


def VerifyMemory() -> Pass:
    """`tvm.tir.transform.VerifyMemory()(mod)`: see `verify_memory_module`."""
    return Pass(verify_memory_module, "VerifyMemory")
