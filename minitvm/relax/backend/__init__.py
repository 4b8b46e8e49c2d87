"""`relax.backend` (TVM 0.20+): the dispatch passes of TVM's default build pipeline.

TVM rewrites sampling (`multinomial_from_uniform`, top-p/top-k) and sort/scan ops (`sort`,
`argsort`, `topk`, `cumsum`) into target-specific kernels or library calls here. minitvm has no
sampling or sort op, and its `cumsum` is legalized like every other op, so on every target these
passes have nothing to rewrite: they return the module unchanged (the same object).
"""

from __future__ import annotations

from typing import Any

from ...ir.transform import Pass


def DispatchSampling() -> Pass:
    """Sampling ops to kernels; minitvm has none, so the module is returned unchanged."""
    return Pass(lambda mod: mod, "DispatchSampling")


def DispatchSortScan() -> Pass:
    """Sort/scan ops to kernels; minitvm legalizes cumsum itself, so the module is unchanged."""
    return Pass(lambda mod: mod, "DispatchSortScan")


def get_patterns_with_prefix(prefix: str) -> list[Any]:
    """Registered fusion patterns for external libraries (cuBLAS, cuDNN, ...): minitvm offloads
    to none, so there are none."""
    return []


__all__ = ["DispatchSampling", "DispatchSortScan", "get_patterns_with_prefix"]
