"""CUDA wmma_sync (16x16x16 tensor-core multiply-accumulate), registered for matching only.

The implementation calls the device function `__wmma_sync_16x16x16`; a CPU build cannot
resolve it and fails naming the symbol, so a tensorized GPU kernel never runs wrongly on a CPU.
"""

from __future__ import annotations

from ..buffer import decl_buffer
from ..expr import BufferLoad, Call, Cast
from ..function import PrimFunc
from ..stmt import BufferStore, Evaluate
from ..tensor_intrin_base import TensorIntrin
from ._build import intrin_func, loop_nest, whole


def get_wmma_sync_intrin(
    m: int, n: int, k: int, in_dtype: str, out_dtype: str, b_transposed: bool
) -> tuple[PrimFunc, PrimFunc]:
    """C[i, j] += A[i, kk] * B[kk, j] (B[j, kk] when `b_transposed`), widened to `out_dtype`."""
    b_shape = (n, k) if b_transposed else (k, n)

    def params():
        return [
            decl_buffer((m, k), in_dtype, "A", scope="wmma.matrix_a", offset_factor=k),
            decl_buffer(b_shape, in_dtype, "B", scope="wmma.matrix_b", offset_factor=b_shape[1]),
            decl_buffer((m, n), out_dtype, "C", scope="wmma.accumulator", offset_factor=n),
        ]

    A, B, C = params()

    def update(v: list) -> BufferStore:
        i, j, kk = v
        b = BufferLoad(B, (j, kk) if b_transposed else (kk, j))
        prod = Cast(out_dtype, BufferLoad(A, (i, kk))) * Cast(out_dtype, b)
        return BufferStore(C, BufferLoad(C, (i, j)) + prod, (i, j))

    body = loop_nest((m, n, k), "SSR", update, "ijk", block="")
    desc = intrin_func(
        "wmma_sync_desc", [A, B, C], [whole(C), whole(A), whole(B)], [whole(C)], body
    )
    A, B, C = params()
    call = Evaluate(Call("int32", "__wmma_sync_16x16x16", (C.data, A.data, B.data)))
    impl = intrin_func(
        "wmma_sync_impl", [A, B, C], [whole(C), whole(A), whole(B)], [whole(C)], call
    )
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
