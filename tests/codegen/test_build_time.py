"""Build time grows linearly with the program: long top-level sequences are outlined into parts
(LLVM's IndVarSimplify/LoopRotate are quadratic in the loops of one function: a 5 000-loop
function took minutes)."""

from __future__ import annotations

import time

import numpy as np
from codegen_harness import Loaded, aligned_copy, flat_buffer, prim_func

from minitvm import tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, SeqStmt, Var

N = 64


def _many_loops(count: int):
    """B[i] += A[i] * k // d for k < count, one top-level loop each (d a scalar param)."""
    ap, A, _ = flat_buffer("A", N, "int32")
    bp, B, _ = flat_buffer("B", N, "int32")
    d = Var("d")
    loops = []
    for k in range(count):
        i = Var(f"i{k}")
        value = BufferLoad(B, (i,)) + tir.Div(BufferLoad(A, (i,)) * k, d)
        loops.append(For(i, 0, N, ForKind.SERIAL, BufferStore(B, value, (i,))))
    return prim_func("many", [ap, bp, d], {ap: A, bp: B}, SeqStmt(tuple(loops)))


def _build_seconds(func) -> float:
    start = time.process_time()
    codegen_llvm.build([func])
    return time.process_time() - start


def test_many_top_level_loops_are_outlined_and_compute_the_same():
    count = 300
    result = codegen_llvm.build([_many_loops(count)])
    assert "many.part" in result.llvm_ir
    loaded = Loaded(result)
    a = aligned_copy(np.arange(N, dtype="int32"))
    b = aligned_copy(np.zeros(N, "int32"))
    assert loaded("many", a, b, 3) == 0
    expected = sum((a.astype(np.int64) * k) // 3 for k in range(count))
    np.testing.assert_array_equal(b, expected)
    code = loaded("many", a, b, 0)  # an error inside a part reaches the caller
    assert loaded.infos["many"]["errors"][code - 1].startswith("integer division by zero")


def test_build_time_is_linear_in_the_number_of_loops():
    small, large = _build_seconds(_many_loops(100)), _build_seconds(_many_loops(400))
    assert large < 8 * small, (small, large)  # 4x the loops; quadratic would be 16x


def test_huge_unrolled_loop_body_is_outlined_and_computes_the_same():
    """A loop around 600 straight-line stores (an unroll gone big): its body becomes a call,
    which keeps LoopLoadElimination (quadratic in a loop's accesses) off it: 4 096 stores took
    76 s of LLVM passes, 2 s now."""
    k = 600
    ap, A, _ = flat_buffer("A", 4 * k)
    bp, B, _ = flat_buffer("B", 4 * k)
    o = Var("o")
    body = SeqStmt(
        tuple(
            BufferStore(B, BufferLoad(A, (o * k + j,)) * 2.0 + 1.0, (o * k + j,))
            for j in range(k)
        )
    )
    func = prim_func("big", [ap, bp], {ap: A, bp: B}, For(o, 0, 4, ForKind.SERIAL, body))
    loaded = Loaded(codegen_llvm.build([func]))
    assert "big.part" in loaded.result.llvm_ir
    a = aligned_copy(np.random.default_rng(0).standard_normal(4 * k).astype("float32"))
    b = aligned_copy(np.zeros(4 * k, "float32"))
    assert loaded("big", a, b) == 0
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
