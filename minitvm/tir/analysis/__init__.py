"""Analyses over TIR."""

from .verify import verify_well_formed


def verify_gpu_code(func, constraints: dict) -> bool:
    """Whether `func`'s kernels stay within `constraints` (TVM's names: max_threads_per_block,
    max_shared_memory_per_block, max_local_memory_per_block, max_thread_x/y/z, max_vthread,
    max_vector_bytes, max_kernels)."""
    from .gpu_code import gpu_code_errors

    return not gpu_code_errors(func, constraints)


__all__ = ["verify_gpu_code", "verify_well_formed"]
