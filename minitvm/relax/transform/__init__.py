"""Graph-level passes: each a pure function on IRModules behind a one-line Pass object.

mod = relax.transform.LegalizeOps()(mod)
mod = tvm.transform.Sequential([relax.transform.FoldConstant(),
                                relax.transform.DeadCodeElimination()])(mod)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...ir.transform import Pass
from .annotate_op_pattern import annotate_op_pattern
from .bind_params import bind_params, bind_params_function
from .canonicalize_bindings import canonicalize_bindings
from .convert_layout import alter_op_layout, convert_layout, convert_layout_with, table_policy
from .dead_code_elimination import dead_code_elimination, remove_unused_bindings
from .decompose import decompose_ops_for_inference
from .default_schedule import default_schedule
from .eliminate_common_subexpr import eliminate_common_subexpr
from .fold_batchnorm import fold_batchnorm_to_conv2d
from .fold_constant import fold_constant
from .fuse_ops import fuse_ops
from .fuse_tir import fuse_tir
from .legalize_ops import legalize_ops


def LegalizeOps() -> Pass:
    return Pass(legalize_ops, "LegalizeOps")


def BindParams(func_name: str, params: Mapping[Any, Any]) -> Pass:
    return Pass(lambda mod: bind_params(mod, func_name, params), "BindParams")


def FoldConstant() -> Pass:
    return Pass(fold_constant, "FoldConstant")


def DeadCodeElimination(entry_functions: Sequence[str] | None = None) -> Pass:
    return Pass(lambda mod: dead_code_elimination(mod, entry_functions), "DeadCodeElimination")


def CanonicalizeBindings() -> Pass:
    """Remove bindings that only rename a value (`y = x`, a cast that changes nothing, an item of
    a tuple literal); relax/transform/canonicalize_bindings.py."""
    return Pass(canonicalize_bindings, "CanonicalizeBindings")


def EliminateCommonSubexpr(call_only: bool = False) -> Pass:
    # only calls are merged either way: `call_only` (TVM's flag) cannot widen that
    return Pass(eliminate_common_subexpr, "EliminateCommonSubexpr")


def AnnotateTIROpPattern() -> Pass:
    return Pass(annotate_op_pattern, "AnnotateTIROpPattern")


def FuseOps(fuse_opt_level: int = -1) -> Pass:
    return Pass(lambda mod: fuse_ops(mod, fuse_opt_level), "FuseOps")


def FuseTIR() -> Pass:
    return Pass(fuse_tir, "FuseTIR")


def DefaultSchedule() -> Pass:
    return Pass(default_schedule, "DefaultSchedule")


ApplyDefaultSchedule = DefaultSchedule  # TVM's dlight spelling


__all__ = [
    "AnnotateTIROpPattern",
    "ApplyDefaultSchedule",
    "BindParams",
    "CanonicalizeBindings",
    "DeadCodeElimination",
    "DefaultSchedule",
    "EliminateCommonSubexpr",
    "FoldConstant",
    "FuseOps",
    "FuseTIR",
    "LegalizeOps",
    "annotate_op_pattern",
    "bind_params",
    "bind_params_function",
    "canonicalize_bindings",
    "dead_code_elimination",
    "default_schedule",
    "eliminate_common_subexpr",
    "fold_constant",
    "fuse_ops",
    "fuse_tir",
    "legalize_ops",
    "remove_unused_bindings",
]

from .static_plan_block_memory import static_plan_block_memory


def StaticPlanBlockMemory() -> Pass:
    """Share storage between intermediates by liveness (relax/transform/static_plan_block_memory.py)."""
    return Pass(static_plan_block_memory, "StaticPlanBlockMemory")


__all__ += ["StaticPlanBlockMemory", "static_plan_block_memory"]

from .gradient import gradient


def Gradient(func_name: str, require_grads: Any = None, target_index: int = 0) -> Pass:
    """Add `<func_name>_adjoint` returning (output, (grads...)) (relax/transform/gradient.py)."""
    return Pass(lambda mod: gradient(mod, func_name, require_grads, target_index), "Gradient")


__all__ += ["Gradient", "gradient"]


def FoldBatchnormToConv2D() -> Pass:
    """conv2d [+ bias] + batch_norm with constant parameters → conv2d + bias (fold_batchnorm.py)."""
    return Pass(fold_batchnorm_to_conv2d, "FoldBatchnormToConv2D")


def DecomposeOpsForInference(func_name: str | None = None) -> Pass:
    """batch_norm → elementwise ops with precomputed per-channel constants (decompose.py);
    `func_name` limits it to one function."""
    return Pass(lambda mod: decompose_ops_for_inference(mod, func_name), "DecomposeOpsForInference")


def DecomposeInferenceModeOps() -> Pass:
    """The build pipeline's DecomposeOpsForInference: leaves training-mode batch norms."""
    return Pass(
        lambda mod: decompose_ops_for_inference(mod, None, training_too=False),
        "DecomposeInferenceModeOps",
    )


__all__ += [
    "DecomposeInferenceModeOps",
    "DecomposeOpsForInference",
    "FoldBatchnormToConv2D",
    "decompose_ops_for_inference",
    "fold_batchnorm_to_conv2d",
]


def ConvertLayout(desired_layouts: Mapping[str, Sequence[str]]) -> Pass:
    """Convs in the layouts asked for, e.g. {"relax.nn.conv2d": ["NHWC", "default"]}; values
    stay in them until an op needs the original (convert_layout.py)."""
    policy = table_policy(desired_layouts)  # a bad table is reported here, not at run time
    return Pass(lambda mod: convert_layout_with(mod, policy), "ConvertLayout")


def AlterOpLayout(target: Any = None) -> Pass:
    """Every conv2d in NCHW{c}c with packed OIHW{i}i{o}o weights, c from the target's vector
    lanes (default: the current target, else the host) (convert_layout.py)."""
    return Pass(lambda mod: alter_op_layout(mod, target), "AlterOpLayout")


__all__ += ["AlterOpLayout", "ConvertLayout", "alter_op_layout", "convert_layout"]
from .default_gpu_schedule import DefaultGPUSchedule, default_gpu_schedule
from .meta_schedule import ApplyCurrentDatabase, MetaScheduleApplyDatabase

__all__ += [
    "ApplyCurrentDatabase", "DefaultGPUSchedule", "MetaScheduleApplyDatabase", "default_gpu_schedule"
]  # fmt: skip

from .meta_schedule import MetaScheduleTuneTIR

__all__ += ["MetaScheduleTuneTIR"]

from .normalize import normalize, normalize_function


def Normalize() -> Pass:
    """Normal form: nested calls bound to variables, nested SeqExprs spliced (normalize.py)."""
    return Pass(normalize, "Normalize")


__all__ += ["Normalize", "normalize", "normalize_function"]

from .bind_symbolic_vars import BindSymbolicVars, bind_symbolic_vars

__all__ += ["BindSymbolicVars", "bind_symbolic_vars"]

from .attach_extern_modules import AttachExternModules, attach_extern_modules
from .attach_global_symbol import AttachGlobalSymbol, attach_global_symbol
from .fuse_ops_by_pattern import (
    FuseOpsByPattern,
    FusionPattern,
    MergeCompositeFunctions,
    PatternCheckContext,
    fuse_ops_by_pattern,
    merge_composite_functions,
)
from .run_codegen import RunCodegen, run_codegen
from .vm_lowering import (  # TVM's VM-lowering passes: the build does their work (vm_lowering.py)
    CallTIRRewrite,
    FuseTransposeMatmul,
    KillAfterLastUse,
    LowerAllocTensor,
    LowerRuntimeBuiltin,
    RemovePurityChecking,
    RewriteCUDAGraph,
    RewriteDataflowReshape,
    ToNonDataflow,
    VMShapeLower,
)

__all__ += [
    "AttachExternModules",
    "AttachGlobalSymbol",
    "CallTIRRewrite",
    "FuseOpsByPattern",
    "FuseTransposeMatmul",
    "FusionPattern",
    "KillAfterLastUse",
    "LowerAllocTensor",
    "LowerRuntimeBuiltin",
    "MergeCompositeFunctions",
    "PatternCheckContext",
    "RemovePurityChecking",
    "RewriteCUDAGraph",
    "RewriteDataflowReshape",
    "RunCodegen",
    "ToNonDataflow",
    "VMShapeLower",
    "attach_extern_modules",
    "attach_global_symbol",
    "fuse_ops_by_pattern",
    "merge_composite_functions",
    "run_codegen",
]  # fmt: skip

from .convert_dataflow import ConvertToDataflow, convert_to_dataflow
from .expand_tuple_arguments import ExpandTupleArguments, expand_tuple_arguments
from .matmul_rewrites import (
    AdjustMatmulOrder,
    ExpandMatmulOfSum,
    ReorderPermuteDimsAfterConcat,
    ReorderTakeAfterMatmul,
)
from .topological_sort import TopologicalSort, topological_sort

__all__ += [
    "AdjustMatmulOrder",
    "ConvertToDataflow",
    "ExpandMatmulOfSum",
    "ExpandTupleArguments",
    "ReorderPermuteDimsAfterConcat",
    "ReorderTakeAfterMatmul",
    "TopologicalSort",
    "convert_to_dataflow",
    "expand_tuple_arguments",
    "topological_sort",
]

from ...ir._public_names import keep_public_functions

# relax.transform.legalize_ops etc. stay functions when their submodule is imported again under
# an alias such as `tvm.relax.transform.legalize_ops` (see ir/_public_names.py).
keep_public_functions(__name__)
