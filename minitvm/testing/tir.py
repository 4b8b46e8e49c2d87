"""`tvm.testing.tir`: tensor-core GEMM schedules that TVM's GPU tensorize tests build.

Both tile the block "C" of a matmul PrimFunc into 16x16xk_inner fragments, stage A and B through
shared memory and warp registers, and tensorize loads, the multiply-accumulate, the fill and the
store with the given intrinsics. They need GPU primitives (thread binding, warp storage,
tensorize with GPU intrinsics); minitvm has no GPU backend, so the results can be inspected but
not built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class _Gemm:
    """The parameters both schedules share."""

    k_inner: int
    in_dtype: str
    b_transposed: bool
    i_factors: tuple
    j_factors: tuple
    k_factors: tuple
    index_maps: tuple  # (A, B, C)
    intrins: tuple  # (load A, load B, multiply-accumulate, fill, store)
    shared_scope: str
    warp_size: int
    align_shared: bool  # pad shared rows to avoid bank conflicts (CUDA's ldmatrix path)


def _tile_fragment(sch: Any, block: Any, height: int, width: int) -> Any:
    """Split the last two loops of `block` into (outer, outer, height, width); the height loop."""
    i, j = sch.get_loops(block)[-2:]
    i_outer, i_inner = sch.split(i, factors=[None, height])
    j_outer, j_inner = sch.split(j, factors=[None, width])
    sch.reorder(i_outer, j_outer, i_inner, j_inner)
    return i_inner


def _stage_in_shared(sch: Any, g: _Gemm, block: Any, index: int, at: Any, num_ty: int) -> None:
    """Copy input `index` of `block` to shared memory at loop `at`, spread over the threads."""
    copy = sch.cache_read(block, index, g.shared_scope)
    sch.compute_at(copy, at)
    lanes = 16 if g.in_dtype == "int8" else 8
    fused = sch.fuse(*sch.get_loops(copy)[-2:])
    _, ty, tx, vec = sch.split(fused, factors=[None, num_ty, g.warp_size, lanes])
    sch.bind(tx, "threadIdx.x")
    sch.bind(ty, "threadIdx.y")
    sch.vectorize(vec)
    if g.align_shared:
        sch.storage_align(copy, 0, axis=-2, factor=32, offset=8 if g.in_dtype == "float16" else 16)


def _schedule_of(workload: Any) -> Any:
    from ..ir.module import IRModule
    from ..tir.schedule import Schedule

    return Schedule(IRModule({"main": workload}))


def _tensor_core_schedule(sch: Any, g: _Gemm) -> Any:
    """Apply the tensor-core GEMM schedule to `sch` (a Schedule of the matmul) and return it."""
    block_inner = sch.get_block("C")
    i, j, k = sch.get_loops(block_inner)
    i, i_frag = sch.split(i, factors=[None, 16])
    j, j_frag = sch.split(j, factors=[None, 16])
    k, k_frag = sch.split(k, factors=[None, g.k_inner])
    sch.reorder(i, j, k, i_frag, j_frag, k_frag)
    block_outer = sch.blockize(i_frag)

    i0, i1, i2, i3, i4 = sch.split(i, factors=list(g.i_factors))
    j0, j1, j2, j3, j4 = sch.split(j, factors=list(g.j_factors))
    k0, k1, k2 = sch.split(k, list(g.k_factors))
    sch.reorder(i0, j0, i1, j1, j2, i2, k0, k1, i3, j3, k2, i4, j4)
    sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    sch.bind(sch.fuse(i1, j1), "blockIdx.y")
    warp_loop = sch.fuse(j2, i2)
    sch.bind(warp_loop, "threadIdx.y")

    num_ty = g.i_factors[2] * g.j_factors[2]
    for index in (0, 1):
        _stage_in_shared(sch, g, block_outer, index, k0, num_ty)
    a_warp = sch.cache_read(block_outer, 0, "warp")
    b_warp = sch.cache_read(block_outer, 1, "warp")
    sch.compute_at(a_warp, k1)
    sch.compute_at(b_warp, k1)
    c_warp = sch.cache_write(block_outer, 0, "warp")
    sch.reverse_compute_at(c_warp, warp_loop)
    _tile_fragment(sch, c_warp, 16, 16)

    sch.decompose_reduction(block_outer, sch.get_loops(block_outer)[3])
    block_init = sch.get_block("C_init")
    loop_a = _tile_fragment(sch, a_warp, 16, g.k_inner)
    b_shape = (16, g.k_inner) if g.b_transposed else (g.k_inner, 16)
    loop_b = _tile_fragment(sch, b_warp, *b_shape)

    map_a, map_b, map_c = g.index_maps
    sch.transform_layout(a_warp, ("write", 0), map_a)
    sch.transform_layout(b_warp, ("write", 0), map_b)
    sch.transform_layout(c_warp, ("read", 0), map_c)

    load_a, load_b, mma, fill, store = g.intrins
    sch.tensorize(loop_a, load_a)
    sch.tensorize(loop_b, load_b)
    sch.tensorize(sch.get_loops(block_inner)[-3], mma)
    sch.tensorize(sch.get_loops(block_init)[-2], fill)
    sch.tensorize(sch.get_loops(c_warp)[-2], store)
    return sch


def mma_schedule(
    workload: Any, k_inner: int, in_dtype: str, b_transposed: bool,
    i_factors: Any, j_factors: Any, k_factors: Any,
    index_map_A: Any, index_map_B: Any, index_map_C: Any,
    ldmatrix_a_intrin: str, ldmatrix_b_intrin: str, mma_intrin: str,
    mma_fill_intrin: str, mma_store_intrin: str, shared_scope: str = "shared",
) -> Any:  # fmt: skip
    """A Schedule tensorizing the GEMM `workload` with CUDA MMA (ldmatrix/mma.sync) intrinsics."""
    gemm = _Gemm(
        k_inner, in_dtype, b_transposed, tuple(i_factors), tuple(j_factors), tuple(k_factors),
        (index_map_A, index_map_B, index_map_C),
        (ldmatrix_a_intrin, ldmatrix_b_intrin, mma_intrin, mma_fill_intrin, mma_store_intrin),
        shared_scope, warp_size=32, align_shared=True,
    )  # fmt: skip
    return _tensor_core_schedule(_schedule_of(workload), gemm)


def mfma_schedule(
    workload: Any, k_inner: int, in_dtype: str, b_transposed: bool,
    i_factors: Any, j_factors: Any, k_factors: Any,
    index_map_A: Any, index_map_B: Any, index_map_C: Any,
    ldmatrix_a_intrin: str, ldmatrix_b_intrin: str, mfma_intrin: str,
    mfma_fill_intrin: str, mfma_store_intrin: str, shared_scope: str = "shared",
) -> Any:  # fmt: skip
    """A Schedule tensorizing the GEMM `workload` with AMD MFMA (matrix core) intrinsics."""
    gemm = _Gemm(
        k_inner, in_dtype, b_transposed, tuple(i_factors), tuple(j_factors), tuple(k_factors),
        (index_map_A, index_map_B, index_map_C),
        (ldmatrix_a_intrin, ldmatrix_b_intrin, mfma_intrin, mfma_fill_intrin, mfma_store_intrin),
        shared_scope, warp_size=64, align_shared=False,
    )  # fmt: skip
    return _tensor_core_schedule(_schedule_of(workload), gemm)


__all__ = ["mfma_schedule", "mma_schedule"]
