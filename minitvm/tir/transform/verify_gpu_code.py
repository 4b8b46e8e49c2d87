"""The VerifyGPUCode pass: every device kernel of a module checked against its Target's
per-block limits, with a BuildError that says how to fix the schedule. The measurements are the
analysis in tir/analysis/gpu_code.py."""

from __future__ import annotations

from ...error import BuildError
from ..analysis.gpu_code import MEASURES, Usage, violations
from ..function import PrimFunc

# the fixes for the limits a Target sets: Target attribute -> (constraint, how to fix)
_TARGET_LIMITS = {
    "max_num_threads": (
        "max_threads_per_block",
        (
            "split the loops bound to threadIdx by smaller factors (bind fewer threads) or move "
            "work to a serial inner loop"
        ),
    ),
    "max_shared_memory_per_block": (
        "max_shared_memory_per_block",
        "cache smaller tiles in 'shared' (smaller split factors around the compute_at loop)",
    ),
}


def verify_gpu_code(kernel: PrimFunc, target) -> None:
    """Raise BuildError when `kernel` exceeds one of `target`'s per-block limits."""
    usage = Usage()
    usage.visit(kernel.body)
    name = kernel.attrs.get("global_symbol", "kernel")
    for attr, (constraint, fix) in _TARGET_LIMITS.items():
        cap = getattr(target, attr, None)
        if cap is None:
            continue
        for _, got, detail, _ in violations(usage, {constraint: cap}):
            raise BuildError(
                f"kernel '{name}' uses {got} {MEASURES[constraint].what} ({detail}), over the "
                f"limit {cap} of target '{target}' ({attr}); {fix}"
            )


def VerifyGPUCode(target):
    """A check pass over every device kernel of an IRModule; returns the module unchanged."""
    from ...ir.transform import Pass

    def run(mod):
        for _, func in mod.functions_items():
            if isinstance(func, PrimFunc) and func.attrs.get("calling_conv") == 2:
                verify_gpu_code(func, target)
        return mod

    return Pass(run, "VerifyGPUCode")
