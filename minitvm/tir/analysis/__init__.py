"""Analyses over TIR."""

from .allocated_bytes import calculate_allocated_bytes
from .block_access import get_block_access_region, get_block_read_write_region
from .buffer_lca import detect_buffer_access_lca
from .estimate_flops import estimate_tir_flops
from .purity import PurityError, assert_pure_function, is_pure_function
from .ssa import expr_deep_equal, verify_ssa
from .verify import verify_well_formed
from .verify_bounds import OOBChecker
from .verify_memory import verify_memory


def verify_gpu_code(func, constraints: dict) -> bool:
    """Whether `func`'s kernels stay within `constraints` (TVM's names: max_threads_per_block,
    max_shared_memory_per_block, max_local_memory_per_block, max_thread_x/y/z, max_vthread,
    max_vector_bytes, max_kernels)."""
    from .gpu_code import gpu_code_errors

    return not gpu_code_errors(func, constraints)


__all__ = [
    "OOBChecker",
    "PurityError",
    "assert_pure_function",
    "calculate_allocated_bytes",
    "detect_buffer_access_lca",
    "estimate_tir_flops",
    "expr_deep_equal",
    "get_block_access_region",
    "get_block_read_write_region",
    "is_pure_function",
    "verify_gpu_code",
    "verify_memory",
    "verify_ssa",
    "verify_well_formed",
]
