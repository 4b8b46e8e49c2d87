"""Analyses over TIR."""

from .block_access import get_block_access_region, get_block_read_write_region
from .buffer_lca import detect_buffer_access_lca
from .ssa import expr_deep_equal, verify_ssa
from .verify import verify_well_formed
from .verify_bounds import OOBChecker


def verify_gpu_code(func, constraints: dict) -> bool:
    """Whether `func`'s kernels stay within `constraints` (TVM's names: max_threads_per_block,
    max_shared_memory_per_block, max_local_memory_per_block, max_thread_x/y/z, max_vthread,
    max_vector_bytes, max_kernels)."""
    from .gpu_code import gpu_code_errors

    return not gpu_code_errors(func, constraints)


__all__ = [
    "OOBChecker",
    "detect_buffer_access_lca",
    "expr_deep_equal",
    "get_block_access_region",
    "get_block_read_write_region",
    "verify_gpu_code",
    "verify_ssa",
    "verify_well_formed",
]
