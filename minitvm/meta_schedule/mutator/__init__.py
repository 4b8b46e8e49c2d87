"""Mutators: change one sampled decision (or annotation) of a trace, for evolutionary search.

>>> probs = ms.mutator.create_default("llvm")   # {MutateTileSize(): 0.9, ...}
"""

from __future__ import annotations

from typing import Any

from ..schedule_rule._block import as_target
from ..schedule_rule.gpu import is_gpu
from .mutators import (
    MutateComputeLocation,
    MutateParallel,
    MutateThreadBinding,
    MutateTileSize,
    MutateUnroll,
    Mutator,
    PyMutator,
)


def create_default(target: Any = "llvm") -> dict[Mutator, float]:
    """The target's mutators with TVM's probabilities (CPU or GPU)."""
    if is_gpu(as_target(target)):
        return {MutateTileSize(): 0.9, MutateUnroll(): 0.08, MutateThreadBinding(): 0.02}
    return {
        MutateTileSize(): 0.9,
        MutateComputeLocation(): 0.05,
        MutateUnroll(): 0.03,
        MutateParallel(max_jobs_per_core=16): 0.02,
    }


__all__ = [
    "MutateComputeLocation",
    "MutateParallel",
    "MutateThreadBinding",
    "MutateTileSize",
    "MutateUnroll",
    "Mutator",
    "PyMutator",
    "create_default",
]
