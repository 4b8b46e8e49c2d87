"""Shared workloads: the fp32 GEMM of the benchmarks and the demo, with its two schedules.

The schedule functions take `get_block(sch, name)` so the same code drives minitvm's
`tir.Schedule` (`sch.get_block`) and TVM 0.27's (`sch.get_sblock`) in benchmarks/gemm.py.
"""

from __future__ import annotations

from typing import Any

MR, NR, KU = 8, 32, 4  # register tile rows, vector columns, k unroll


def gemm_te(te: Any, n: int, packed: bool) -> tuple:
    """C = A @ B over n x n float32; `packed` adds a layout stage Bp[j//NR, k, j%NR] = B[k, j]."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    if not packed:
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return A, B, C
    Bp = te.compute((n // NR, n, NR), lambda jo, kk, ji: B[kk, jo * NR + ji], name="Bp")
    C = te.compute(
        (n, n), lambda i, j: te.sum(A[i, k] * Bp[j // NR, k, j % NR], axis=k), name="C"
    )
    return A, B, C


def schedule_classic(sch: Any, get_block: Any) -> None:
    """The dlsys notes' schedule: tile 32x32, split k by 4, reorder, vectorize j, parallel i."""
    c = get_block(sch, "C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 32])
    jo, ji = sch.split(j, [None, 32])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(io, jo, ko, ii, ki, ji)
    sch.vectorize(ji)
    sch.parallel(io)


def schedule_blocked(sch: Any, get_block: Any) -> None:
    """Register-blocked GEMM on the packed workload: an MR x NR accumulator tile through
    cache_write("local"), k unrolled by KU, NR lanes vectorized; column panels outermost and in
    parallel, so each packed B panel stays in L2 while the row blocks of A stream past it."""
    c = get_block(sch, "C")
    cw = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, MR])
    jo, ji = sch.split(j, [None, NR])
    ko, ki = sch.split(k, [None, KU])
    sch.reorder(jo, io, ko, ki, ii, ji)
    sch.reverse_compute_at(cw, io)
    sch.parallel(jo)
    sch.unroll(ki)
    sch.unroll(ii)
    sch.vectorize(ji)
    sch.decompose_reduction(c, ko)
    jo2, _, ji2 = sch.get_loops(get_block(sch, "Bp"))
    sch.parallel(jo2)
    sch.vectorize(ji2)
    sch.vectorize(sch.get_loops(cw)[-1])
