"""Lowering passes: TensorIR blocks → flat loops for codegen. Each pass is a PrimFunc → PrimFunc
function plus a TVM-style pass object (`tvm.tir.transform.FlattenBuffer()(mod)`)."""

from typing import Any

from ._pass import PrimFuncPass
from ._pass import public_prim_func_pass as prim_func_pass
from .annotate_device_regions import AnnotateDeviceRegions, annotate_device_regions
from .apply import Apply
from .combine_context_call import CombineContextCall, combine_context_call
from .common_subexpr_elim import CommonSubexprElimTIR, common_subexpr_elim
from .compact_buffer_allocation import CompactBufferAllocation, compact_buffer_allocation
from .convert_blocks_to_loops import ConvertBlocksToLoops, LowerOpaqueBlock, convert_blocks_to_loops
from .convert_blocks_to_opaque import ConvertBlocksToOpaque, convert_blocks_to_opaque
from .convert_for_loops_serial import ConvertForLoopsToSerial, convert_for_loops_to_serial
from .convert_ssa import ConvertSSA, convert_ssa
from .decorate_device_scope import DecorateDeviceScope, decorate_device_scope
from .flatten_buffer import FlattenBuffer, flatten_buffer
from .force_narrow_index import ForceNarrowIndexToInt32, force_narrow_index_to_i32
from .hoist_expression import (
    HoistedConditionals,
    HoistedLetBindings,
    HoistExpression,
    hoist_expression,
)
from .hoist_if_then_else import HoistIfThenElse, hoist_if_then_else
from .instrument_profile import InstrumentProfileIntrinsics, instrument_profile_intrinsics
from .loop_partition import LoopPartition, loop_partition
from .lower_device_storage import LowerDeviceStorageAccessInfo, lower_device_storage
from .lower_init_block import LowerInitBlock, lower_init_block
from .lower_intrin import LowerIntrin, lower_intrin
from .lower_thread_binding import ConvertForThreadBinding, LowerThreadBinding, lower_thread_binding
from .narrow_datatype import NarrowDataType, narrow_datatype
from .pipeline import GPU_PIPELINE, PIPELINE, lower_primfunc
from .plan_buffer_allocation import (
    PlanAndUpdateBufferAllocationLocation,
    plan_and_update_buffer_allocation_location,
)
from .primfunc_utils import AnnotateEntryFunc, BindTarget, Filter, annotate_entry_func, bind_target
from .remove_hints import RemoveAssume, RemoveStoreUndef, remove_assume, remove_store_undef
from .remove_no_op import RemoveNoOp, remove_no_op
from .simplify import Simplify, simplify
from .split_host_device import SplitHostDevice, split_host_device
from .thread_sync import ThreadSync, thread_sync
from .unify_thread_binding import UnifyThreadBinding, unify_thread_binding
from .unroll_loop import UnrollLoop, unroll_loop
from .vectorize_loop import VectorizeLoop, vectorize_loop
from .verify_gpu_code import VerifyGPUCode, verify_gpu_code
from .verify_memory import VerifyMemory, verify_memory_module

__all__ = [
    "GPU_PIPELINE",
    "PIPELINE",
    "AnnotateDeviceRegions",
    "AnnotateEntryFunc",
    "Apply",
    "BindTarget",
    "CombineContextCall",
    "CommonSubexprElimTIR",
    "CompactBufferAllocation",
    "ConvertBlocksToLoops",
    "ConvertBlocksToOpaque",
    "ConvertForLoopsToSerial",
    "ConvertForThreadBinding",
    "ConvertSSA",
    "DecorateDeviceScope",
    "Filter",
    "FlattenBuffer",
    "ForceNarrowIndexToInt32",
    "HoistExpression",
    "HoistIfThenElse",
    "HoistedConditionals",
    "HoistedLetBindings",
    "InstrumentProfileIntrinsics",
    "LoopPartition",
    "LowerDeviceStorageAccessInfo",
    "LowerInitBlock",
    "LowerIntrin",
    "LowerOpaqueBlock",
    "LowerThreadBinding",
    "NarrowDataType",
    "PlanAndUpdateBufferAllocationLocation",
    "PrimFuncPass",
    "RemoveAssume",
    "RemoveNoOp",
    "RemoveStoreUndef",
    "Simplify",
    "SplitHostDevice",
    "ThreadSync",
    "UnifyThreadBinding",
    "UnrollLoop",
    "VectorizeLoop",
    "VerifyGPUCode",
    "VerifyMemory",
    "annotate_device_regions",
    "annotate_entry_func",
    "bind_target",
    "combine_context_call",
    "common_subexpr_elim",
    "compact_buffer_allocation",
    "convert_blocks_to_loops",
    "convert_blocks_to_opaque",
    "convert_for_loops_to_serial",
    "convert_ssa",
    "decorate_device_scope",
    "flatten_buffer",
    "force_narrow_index_to_i32",
    "hoist_expression",
    "hoist_if_then_else",
    "instrument_profile_intrinsics",
    "loop_partition",
    "lower_device_storage",
    "lower_init_block",
    "lower_intrin",
    "lower_primfunc",
    "lower_thread_binding",
    "narrow_datatype",
    "plan_and_update_buffer_allocation_location",
    "prim_func_pass",
    "remove_assume",
    "remove_no_op",
    "remove_store_undef",
    "simplify",
    "split_host_device",
    "thread_sync",
    "unify_thread_binding",
    "unroll_loop",
    "vectorize_loop",
    "verify_gpu_code",
    "verify_memory_module",
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

keep_public_functions(
    __name__
)  # tir.transform.simplify etc. stay functions (see ir/_public_names.py)
