"""Postprocessors: rewrites and checks every sampled schedule passes before it is built.

>>> postprocs = ms.postproc.create_default("llvm")
"""

from __future__ import annotations

from typing import Any

from ..schedule_rule._block import as_target
from ..schedule_rule.gpu import is_gpu
from .gpu import RewriteCooperativeFetch, RewriteUnboundBlock, VerifyGPUCode
from .postproc import Postproc, PyPostproc
from .rewrite import (
    DisallowDynamicLoop,
    RewriteParallelVectorizeUnroll,
    RewriteReductionBlock,
    VerifyCPUCode,
)


def create_default(target: Any = "llvm") -> list[Postproc]:
    """The target's postprocs, in the order they run. On a CPU VerifyCPUCode is left out: the
    builder runs the same legality checks (tvm.build verifies every PrimFunc), and running them
    twice cost a third of candidate generation. On a GPU VerifyGPUCode stays: it drops a
    candidate over the target's threads or shared memory per block before its build."""
    target = as_target(target)
    if is_gpu(target):
        return [
            DisallowDynamicLoop(),
            RewriteCooperativeFetch(),
            RewriteUnboundBlock(max_threadblocks=256),
            RewriteReductionBlock(tiled_only=True),
            RewriteParallelVectorizeUnroll(),
            VerifyGPUCode(),
        ]
    return [DisallowDynamicLoop(), RewriteReductionBlock(), RewriteParallelVectorizeUnroll()]


__all__ = [
    "DisallowDynamicLoop",
    "Postproc",
    "PyPostproc",
    "RewriteCooperativeFetch",
    "RewriteParallelVectorizeUnroll",
    "RewriteReductionBlock",
    "RewriteUnboundBlock",
    "VerifyCPUCode",
    "VerifyGPUCode",
    "create_default",
]
