"""The VM-lowering passes of TVM's build pipeline, for custom pipelines that list them.

TVM lowers a relax module to VM bytecode through a fixed sequence of passes (phase 5 of its
pipelines: ToNonDataflow, CallTIRRewrite, StaticPlanBlockMemory, VMShapeLower, ...). A
hand-written pipeline, such as the one in TVM's "Optimize Large Language Model" tutorial, lists
them by name. minitvm's build does these steps itself when it generates VM code
(relax/vm/codegen.py) after any user pipeline has run, so listed here they return the module
unchanged (the same object) and the build still lowers it. Each entry says which step of
minitvm's build stands in for it.
"""

from __future__ import annotations

from typing import Any

from ...ir.transform import Pass


def _unchanged(name: str) -> Pass:
    return Pass(lambda mod: mod, name)


def ToNonDataflow() -> Pass:
    """Unchanged: the VM codegen reads dataflow blocks as ordinary bindings."""
    return _unchanged("ToNonDataflow")


def RemovePurityChecking() -> Pass:
    """Unchanged: minitvm's VM does not check purity at run time."""
    return _unchanged("RemovePurityChecking")


def CallTIRRewrite() -> Pass:
    """Unchanged: the VM codegen allocates call_tir outputs and passes them to the kernel."""
    return _unchanged("CallTIRRewrite")


def RewriteDataflowReshape() -> Pass:
    """Unchanged: a reshape stays a kernel call (TVM's view saves a copy; values are equal)."""
    return _unchanged("RewriteDataflowReshape")


def LowerAllocTensor() -> Pass:
    """Unchanged: the VM codegen allocates each planned tensor."""
    return _unchanged("LowerAllocTensor")


def KillAfterLastUse() -> Pass:
    """Unchanged: a tensor's memory is released when the VM drops its last reference."""
    return _unchanged("KillAfterLastUse")


def LowerRuntimeBuiltin() -> Pass:
    """Unchanged: the VM codegen emits builtin calls directly."""
    return _unchanged("LowerRuntimeBuiltin")


def VMShapeLower(*, emit_err_ctx: bool = True) -> Pass:
    """Unchanged: the VM checks and computes symbolic shapes in its call wrappers (its errors
    always name the function and argument, so `emit_err_ctx` changes nothing)."""
    return _unchanged("VMShapeLower")


def RewriteCUDAGraph() -> Pass:
    """Unchanged: minitvm has no CUDA graphs (TVM rewrites only when they are enabled)."""
    return _unchanged("RewriteCUDAGraph")


def FuseTransposeMatmul(*args: Any) -> Pass:
    """Unchanged: an optimisation only; matmul(x, permute_dims(w)) computes the same result
    through LegalizeOps and FuseOps."""
    return _unchanged("FuseTransposeMatmul")


__all__ = [
    "CallTIRRewrite",
    "FuseTransposeMatmul",
    "KillAfterLastUse",
    "LowerAllocTensor",
    "LowerRuntimeBuiltin",
    "RemovePurityChecking",
    "RewriteCUDAGraph",
    "RewriteDataflowReshape",
    "ToNonDataflow",
    "VMShapeLower",
]
