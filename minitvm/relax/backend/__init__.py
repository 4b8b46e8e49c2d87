"""`relax.backend` (TVM 0.20+): the dispatch passes of TVM's default build pipeline.

TVM rewrites sampling (`multinomial_from_uniform`, top-p/top-k) and sort/scan ops (`sort`,
`argsort`, `topk`, `cumsum`) into target-specific kernels or library calls here. minitvm has no
sampling or sort op, and its `cumsum` is legalized like every other op, so on every target these
passes have nothing to rewrite: they return the module unchanged (the same object).

The pattern registry (pattern_registry.py) and `contrib/` serve external backends (BYOC).
"""

from __future__ import annotations

from ...ir.transform import Pass
from .pattern_registry import get_pattern, get_patterns_with_prefix, register_patterns


def DispatchSampling() -> Pass:
    """Sampling ops to kernels; minitvm has none, so the module is returned unchanged."""
    return Pass(lambda mod: mod, "DispatchSampling")


def DispatchSortScan() -> Pass:
    """Sort/scan ops to kernels; minitvm legalizes cumsum itself, so the module is unchanged."""
    return Pass(lambda mod: mod, "DispatchSortScan")


__all__ = [
    "DispatchSampling",
    "DispatchSortScan",
    "get_pattern",
    "get_patterns_with_prefix",
    "register_patterns",
]
