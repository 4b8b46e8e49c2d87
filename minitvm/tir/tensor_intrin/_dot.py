"""Builders of dot-product intrinsics: `lanes` outputs, each the sum of `k` widened products."""

from __future__ import annotations

from ..expr import BufferLoad, Call, Cast, IntImm
from ..function import PrimFunc
from ..stmt import BufferRegion, BufferStore, ForKind
from ._build import buffers, intrin_func, loop_nest, whole


def dot_desc_impl(
    lanes: int, k: int, a_dtype: str, b_dtype: str, c_dtype: str, scope: str = "global"
) -> tuple[PrimFunc, PrimFunc]:
    """C[i] += cast(A[j]) * cast(B[i, j]) for i < lanes, j < k: description and loop nest.

    The description is a block over (i: spatial, j: reduce); the implementation the same
    arithmetic as plain loops (j unrolled) over the matched sub-buffers.
    """

    def make(name: str, as_block: bool) -> PrimFunc:
        specs = (("A", (k,), a_dtype), ("B", (lanes, k), b_dtype), ("C", (lanes,), c_dtype))
        A, B, C = buffers(specs, scope=scope, offset_factor=1)

        def update(v: list) -> BufferStore:
            i, j = v
            prod = Cast(c_dtype, BufferLoad(A, (j,))) * Cast(c_dtype, BufferLoad(B, (i, j)))
            return BufferStore(C, BufferLoad(C, (i,)) + prod, (i,))

        kinds = None if as_block else [ForKind.SERIAL, ForKind.UNROLLED]
        body = loop_nest(
            (lanes, k), "SR", update, "ij", block="update" if as_block else None, for_kinds=kinds
        )
        return intrin_func(name, [A, B, C], [whole(C), whole(A), whole(B)], [whole(C)], body)

    return make("desc", True), make("impl", False)


def dp4a_desc_impl(a_dtype: str, b_dtype: str, c_dtype: str) -> tuple[PrimFunc, PrimFunc]:
    """One output: C[0] += sum_j cast(A[j]) * cast(B[j]), j < 4 (GPU dp4a/sdot4 shape).

    The implementation calls `__dp4a`, a device function: matching works everywhere, a CPU
    build fails to resolve the symbol by name instead of computing something else.
    """

    def params():
        specs = (("A", (4,), a_dtype, "shared"), ("B", (4,), b_dtype, "shared"),
                 ("C", (1,), c_dtype, "local"))  # fmt: skip
        return buffers(specs, offset_factor=1, data_alignment=4)

    A, B, C = params()
    zero = IntImm("int32", 0)
    c0 = BufferRegion(C, ((0, 1),))

    def update(v: list) -> BufferStore:
        (j,) = v
        prod = Cast(c_dtype, BufferLoad(A, (j,))) * Cast(c_dtype, BufferLoad(B, (j,)))
        return BufferStore(C, BufferLoad(C, (zero,)) + prod, (zero,))

    body = loop_nest((4,), "R", update, "i", block="update")
    desc = intrin_func("dp4a_desc", [A, B, C], [c0, whole(A), whole(B)], [c0], body)

    A, B, C = params()
    c0 = BufferRegion(C, ((0, 1),))
    loads = [BufferLoad(X, (zero,)) for X in (A, B, C)]
    call = BufferStore(C, Call(c_dtype, "__dp4a", tuple(loads)), (zero,))
    impl = intrin_func("dp4a_impl", [A, B, C], [c0, whole(A), whole(B)], [c0], call)
    return desc, impl
