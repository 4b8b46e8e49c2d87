"""Lowering passes: TensorIR blocks → flat loops for codegen. Each pass is a PrimFunc → PrimFunc
function plus a TVM-style pass object (`tvm.tir.transform.FlattenBuffer()(mod)`)."""

from ._pass import prim_func_pass
from .compact_buffer_allocation import CompactBufferAllocation, compact_buffer_allocation
from .convert_blocks_to_loops import ConvertBlocksToLoops, LowerOpaqueBlock, convert_blocks_to_loops
from .flatten_buffer import FlattenBuffer, flatten_buffer
from .loop_partition import LoopPartition, loop_partition
from .lower_init_block import LowerInitBlock, lower_init_block
from .pipeline import PIPELINE, lower_primfunc
from .plan_buffer_allocation import (
    PlanAndUpdateBufferAllocationLocation,
    plan_and_update_buffer_allocation_location,
)
from .remove_no_op import RemoveNoOp, remove_no_op
from .simplify import Simplify, simplify
from .unroll_loop import UnrollLoop, unroll_loop
from .vectorize_loop import VectorizeLoop, vectorize_loop

__all__ = [
    "PIPELINE",
    "CompactBufferAllocation",
    "ConvertBlocksToLoops",
    "FlattenBuffer",
    "LoopPartition",
    "LowerInitBlock",
    "LowerOpaqueBlock",
    "PlanAndUpdateBufferAllocationLocation",
    "RemoveNoOp",
    "Simplify",
    "UnrollLoop",
    "VectorizeLoop",
    "compact_buffer_allocation",
    "convert_blocks_to_loops",
    "flatten_buffer",
    "loop_partition",
    "lower_init_block",
    "lower_primfunc",
    "plan_and_update_buffer_allocation_location",
    "prim_func_pass",
    "remove_no_op",
    "simplify",
    "unroll_loop",
    "vectorize_loop",
]
