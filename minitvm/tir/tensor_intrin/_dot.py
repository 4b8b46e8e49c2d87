"""Builders of dot-product intrinsics: `lanes` outputs, each the sum of `k` widened products."""

from __future__ import annotations

from ...script import tir as T
from ..function import PrimFunc


def dot_desc_impl(
    lanes: int, k: int, a_dtype: str, b_dtype: str, c_dtype: str, scope: str = "global"
) -> tuple[PrimFunc, PrimFunc]:
    """C[i] += cast(A[j]) * cast(B[i, j]) for i < lanes, j < k: description and loop nest."""

    @T.prim_func
    def desc(
        A: T.Buffer((k,), a_dtype, offset_factor=1, scope=scope),
        B: T.Buffer((lanes, k), b_dtype, offset_factor=1, scope=scope),
        C: T.Buffer((lanes,), c_dtype, offset_factor=1, scope=scope),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:lanes], A[0:k], B[0:lanes, 0:k])
            T.writes(C[0:lanes])
            for i in T.serial(0, lanes):
                for j in T.serial(0, k):
                    with T.block("update"):
                        vi, vj = T.axis.remap("SR", [i, j])
                        C[vi] = C[vi] + T.cast(A[vj], c_dtype) * T.cast(B[vi, vj], c_dtype)

    @T.prim_func
    def impl(
        A: T.Buffer((k,), a_dtype, offset_factor=1, scope=scope),
        B: T.Buffer((lanes, k), b_dtype, offset_factor=1, scope=scope),
        C: T.Buffer((lanes,), c_dtype, offset_factor=1, scope=scope),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:lanes], A[0:k], B[0:lanes, 0:k])
            T.writes(C[0:lanes])
            for i in T.serial(0, lanes):
                for j in T.unroll(k):
                    C[i] = C[i] + T.cast(A[j], c_dtype) * T.cast(B[i, j], c_dtype)

    return desc, impl


def dp4a_desc_impl(a_dtype: str, b_dtype: str, c_dtype: str) -> tuple[PrimFunc, PrimFunc]:
    """One output: C[0] += sum_j cast(A[j]) * cast(B[j]), j < 4 (GPU dp4a/sdot4 shape).

    The implementation calls `__dp4a`, a device function: matching works everywhere, a CPU
    build fails to resolve the symbol by name instead of computing something else.
    """

    @T.prim_func
    def desc(
        A: T.Buffer((4,), a_dtype, offset_factor=1, align=4, scope="shared"),
        B: T.Buffer((4,), b_dtype, offset_factor=1, align=4, scope="shared"),
        C: T.Buffer((1,), c_dtype, offset_factor=1, align=4, scope="local"),
    ) -> None:
        with T.block("root"):
            T.reads(C[0], A[0:4], B[0:4])
            T.writes(C[0])
            for i in range(4):
                with T.block("update"):
                    vi = T.axis.remap("R", [i])
                    C[0] = C[0] + T.cast(A[vi], c_dtype) * T.cast(B[vi], c_dtype)

    @T.prim_func
    def impl(
        A: T.Buffer((4,), a_dtype, offset_factor=1, align=4, scope="shared"),
        B: T.Buffer((4,), b_dtype, offset_factor=1, align=4, scope="shared"),
        C: T.Buffer((1,), c_dtype, offset_factor=1, align=4, scope="local"),
    ) -> None:
        with T.block("root"):
            T.reads(C[0], A[0:4], B[0:4])
            T.writes(C[0])
            C[0] = T.call_pure_extern(c_dtype, "__dp4a", A[0], B[0], C[0])

    return desc, impl
