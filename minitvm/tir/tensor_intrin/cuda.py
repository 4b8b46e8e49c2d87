"""CUDA wmma_sync (16x16x16 tensor-core multiply-accumulate), registered for matching only.

The implementation calls the device function `__wmma_sync_16x16x16`; a CPU build cannot
resolve it and fails naming the symbol, so a tensorized GPU kernel never runs wrongly on a CPU.
"""

from __future__ import annotations

from ...script import tir as T
from ..function import PrimFunc
from ..tensor_intrin_base import TensorIntrin


def get_wmma_sync_intrin(
    m: int, n: int, k: int, in_dtype: str, out_dtype: str, b_transposed: bool
) -> tuple[PrimFunc, PrimFunc]:
    """C[i, j] += A[i, kk] * B[kk, j] (B[j, kk] when `b_transposed`), widened to `out_dtype`."""
    b_shape = (n, k) if b_transposed else (k, n)

    def product(A, B, vi, vj, vk):  # A[vi, vk] * B(vk, vj), both widened
        b = B[vj, vk] if b_transposed else B[vk, vj]
        return T.cast(A[vi, vk], out_dtype) * T.cast(b, out_dtype)

    @T.prim_func
    def desc(
        A: T.Buffer((m, k), in_dtype, align=64, offset_factor=k, scope="wmma.matrix_a"),
        B: T.Buffer(b_shape, in_dtype, align=64, offset_factor=b_shape[1], scope="wmma.matrix_b"),
        C: T.Buffer((m, n), out_dtype, align=64, offset_factor=n, scope="wmma.accumulator"),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:m, 0:n], A[0:m, 0:k], B[0 : b_shape[0], 0 : b_shape[1]])
            T.writes(C[0:m, 0:n])
            for i, j, kk in T.grid(m, n, k):
                with T.block(""):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, kk])
                    C[vi, vj] = C[vi, vj] + product(A, B, vi, vj, vk)

    @T.prim_func
    def impl(
        A: T.Buffer((m, k), in_dtype, align=64, offset_factor=k, scope="wmma.matrix_a"),
        B: T.Buffer(b_shape, in_dtype, align=64, offset_factor=b_shape[1], scope="wmma.matrix_b"),
        C: T.Buffer((m, n), out_dtype, align=64, offset_factor=n, scope="wmma.accumulator"),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:m, 0:n], A[0:m, 0:k], B[0 : b_shape[0], 0 : b_shape[1]])
            T.writes(C[0:m, 0:n])
            T.evaluate(T.call_extern("int32", "__wmma_sync_16x16x16", C.data, A.data, B.data))

    return desc, impl


WMMA_SYNC_16x16x16_f16f16f32_INTRIN = "wmma_sync_16x16x16_f16f16f32"
WMMA_SYNC_16x16x16_f16f16f32_TRANS_INTRIN = "wmma_sync_16x16x16_f16f16f32_trans"
WMMA_SYNC_16x16x16_f16f16f16_INTRIN = "wmma_sync_16x16x16_f16f16f16"
WMMA_SYNC_16x16x16_f16f16f16_TRANS_INTRIN = "wmma_sync_16x16x16_f16f16f16_trans"
WMMA_SYNC_16x16x16_s8s8s32_INTRIN = "wmma_sync_16x16x16_s8s8s32"
WMMA_SYNC_16x16x16_s8s8s32_TRANS_INTRIN = "wmma_sync_16x16x16_s8s8s32_trans"

for _name, _args in (
    (WMMA_SYNC_16x16x16_f16f16f32_INTRIN, ("float16", "float32", False)),
    (WMMA_SYNC_16x16x16_f16f16f32_TRANS_INTRIN, ("float16", "float32", True)),
    (WMMA_SYNC_16x16x16_f16f16f16_INTRIN, ("float16", "float16", False)),
    (WMMA_SYNC_16x16x16_f16f16f16_TRANS_INTRIN, ("float16", "float16", True)),
    (WMMA_SYNC_16x16x16_s8s8s32_INTRIN, ("int8", "int32", False)),
    (WMMA_SYNC_16x16x16_s8s8s32_TRANS_INTRIN, ("int8", "int32", True)),
):
    TensorIntrin.register(_name, *get_wmma_sync_intrin(16, 16, 16, *_args), override=True)
