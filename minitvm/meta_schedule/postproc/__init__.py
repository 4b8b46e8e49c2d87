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
    """The CPU postprocs, in the order they run. VerifyCPUCode is left out: the builder runs
    the same legality checks (tvm.build verifies every PrimFunc), and running them twice cost
    a third of candidate generation."""
    as_target(target)
    return [DisallowDynamicLoop(), RewriteReductionBlock(), RewriteParallelVectorizeUnroll()]


__all__ = [
    "DisallowDynamicLoop",
    "Postproc",
    "PyPostproc",
    "RewriteParallelVectorizeUnroll",
    "RewriteReductionBlock",
    "VerifyCPUCode",
    "create_default",
]
