"""Postprocessors: rewrites and checks every sampled schedule passes before it is built.

>>> postprocs = ms.postproc.create_default("llvm")
"""

from __future__ import annotations

from typing import Any

from ..schedule_rule._block import as_target
from .postproc import Postproc, PyPostproc
from .rewrite import (
    DisallowDynamicLoop,
    RewriteParallelVectorizeUnroll,
    RewriteReductionBlock,
    VerifyCPUCode,
)


def create_default(target: Any = "llvm") -> list[Postproc]:
    """The CPU postprocs, in the order they run."""
    as_target(target)
    return [
        DisallowDynamicLoop(),
        RewriteReductionBlock(),
        RewriteParallelVectorizeUnroll(),
        VerifyCPUCode(),
    ]


__all__ = [
    "DisallowDynamicLoop",
    "Postproc",
    "PyPostproc",
    "RewriteParallelVectorizeUnroll",
    "RewriteReductionBlock",
    "VerifyCPUCode",
    "create_default",
]
