"""Lowering passes: TensorIR blocks → flat loops for codegen. Each pass is a PrimFunc → PrimFunc
function plus a TVM-style pass object (`tvm.tir.transform.FlattenBuffer()(mod)`)."""

from typing import Any

from ._pass import PrimFuncPass
from ._pass import public_prim_func_pass as prim_func_pass
from .compact_buffer_allocation import CompactBufferAllocation, compact_buffer_allocation
from .convert_blocks_to_loops import ConvertBlocksToLoops, LowerOpaqueBlock, convert_blocks_to_loops
from .flatten_buffer import FlattenBuffer, flatten_buffer
from .loop_partition import LoopPartition, loop_partition
from .lower_device_storage import LowerDeviceStorageAccessInfo, lower_device_storage
from .lower_init_block import LowerInitBlock, lower_init_block
from .lower_thread_binding import ConvertForThreadBinding, LowerThreadBinding, lower_thread_binding
from .pipeline import GPU_PIPELINE, PIPELINE, lower_primfunc
from .plan_buffer_allocation import (
    PlanAndUpdateBufferAllocationLocation,
    plan_and_update_buffer_allocation_location,
)
from .remove_no_op import RemoveNoOp, remove_no_op
from .simplify import Simplify, simplify
from .split_host_device import SplitHostDevice, split_host_device
from .thread_sync import ThreadSync, thread_sync
from .unify_thread_binding import UnifyThreadBinding, unify_thread_binding
from .unroll_loop import UnrollLoop, unroll_loop
from .vectorize_loop import VectorizeLoop, vectorize_loop
from .verify_gpu_code import VerifyGPUCode, verify_gpu_code

__all__ = [
    "GPU_PIPELINE",
    "PIPELINE",
    "CompactBufferAllocation",
    "ConvertBlocksToLoops",
    "ConvertForThreadBinding",
    "FlattenBuffer",
    "LoopPartition",
    "LowerDeviceStorageAccessInfo",
    "LowerInitBlock",
    "LowerOpaqueBlock",
    "LowerThreadBinding",
    "PlanAndUpdateBufferAllocationLocation",
    "PrimFuncPass",
    "RemoveNoOp",
    "Simplify",
    "SplitHostDevice",
    "ThreadSync",
    "UnifyThreadBinding",
    "UnrollLoop",
    "VectorizeLoop",
    "VerifyGPUCode",
    "compact_buffer_allocation",
    "convert_blocks_to_loops",
    "flatten_buffer",
    "loop_partition",
    "lower_device_storage",
    "lower_init_block",
    "lower_primfunc",
    "lower_thread_binding",
    "plan_and_update_buffer_allocation_location",
    "prim_func_pass",
    "remove_no_op",
    "simplify",
    "split_host_device",
    "thread_sync",
    "unify_thread_binding",
    "unroll_loop",
    "vectorize_loop",
    "verify_gpu_code",
]


def DefaultGPUSchedule(*args: Any, **kwargs: Any) -> Any:
    """TVM 0.23's `tir.transform.DefaultGPUSchedule()`: threads for every unscheduled kernel of
    the module, for the current target (`with target: mod = DefaultGPUSchedule()(mod)`).

    The pass schedules with dlight, which sits above tir, so it is looked up by its TVM global
    function name; relax.transform, which defines it, registers it when loaded."""
    from ...error import BuildError
    from ...runtime.registry import get_global_func

    make = get_global_func(_DEFAULT_GPU_SCHEDULE, allow_missing=True)
    if make is None:
        raise BuildError(
            "tir.transform.DefaultGPUSchedule: the pass is registered by tvm.relax (relax.transform), "
            "which is not loaded; `from tvm import relax` first, or call "
            "tvm.s_tir.transform.DefaultGPUSchedule() (TVM 0.24's name) directly"
        )
    return make(*args, **kwargs)


_DEFAULT_GPU_SCHEDULE = "tir.transform.DefaultGPUSchedule"  # its global function name in TVM
__all__.append("DefaultGPUSchedule")

from ...ir._public_names import keep_public_functions

keep_public_functions(__name__)  # tir.transform.simplify etc. stay functions (see ir/_public_names.py)
