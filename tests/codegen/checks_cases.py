"""Kernels for tests/codegen/test_runtime_checks.py (imported in subprocesses as well)."""

from __future__ import annotations

import numpy as np
from codegen_harness import Loaded, aligned_copy, flat_buffer, prim_func

from minitvm import tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.ir.dtype import DataType
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, Ramp, Var

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
DIVISIONS = {
    "div": tir.Div,
    "mod": tir.Mod,
    "floordiv": tir.FloorDiv,
    "floormod": tir.FloorMod,
}
N = 32


def binary_kernel(name: str, dtype: str, op, lanes: int = 1, kind=ForKind.SERIAL):
    """C[i] = op(A[i], B[i]) over N elements, `lanes` at a time."""
    ap, A, _ = flat_buffer("A", N, dtype)
    bp, B, _ = flat_buffer("B", N, dtype)
    cp, C, _ = flat_buffer("C", N, dtype)
    i = Var("i")
    index = i if lanes == 1 else Ramp(i * lanes, 1, lanes)
    value = op(BufferLoad(A, (index,)), BufferLoad(B, (index,)))
    body = For(i, 0, N // lanes, kind, BufferStore(C, value, (index,)))
    return prim_func(name, [ap, bp, cp], {ap: A, bp: B, cp: C}, body)


def division_kernels(dtype: str) -> list:
    return [
        binary_kernel(f"{name}_x{lanes}", dtype, op, lanes)
        for name, op in DIVISIONS.items()
        for lanes in (1, 16)
    ]


def call(loaded: Loaded, name: str, *arrays) -> tuple[int, list]:
    """Raw return code of `name` on copies of `arrays`, and the copies."""
    args = [aligned_copy(a) for a in arrays]
    return loaded(name, *args), args


def error_of(loaded: Loaded, name: str, code: int) -> str:
    return loaded.infos[name]["errors"][code - 1] if code else ""


def gather_kernel(n_a: int = 100, lanes: int = 1, kind=ForKind.SERIAL):
    """B[i] = A[I[i]] for i < N (A has n_a elements)."""
    ap, A, _ = flat_buffer("A", n_a, "float32")
    ip, I, _ = flat_buffer("I", N, "int32")
    bp, B, _ = flat_buffer("B", N, "float32")
    i = Var("i")
    index = i if lanes == 1 else Ramp(i * lanes, 1, lanes)
    gathered = BufferLoad(A, (BufferLoad(I, (index,)),))
    body = For(i, 0, N // lanes, kind, BufferStore(B, gathered, (index,)))
    return prim_func("gather", [ap, ip, bp], {ap: A, ip: I, bp: B}, body)


def numpy_int_min(dtype: str) -> int:
    return int(np.iinfo(np.dtype(dtype)).min)


def build(*funcs, target: str = "llvm") -> Loaded:
    return Loaded(codegen_llvm.build(list(funcs), target))


def dtype_of(dtype: str) -> DataType:
    return DataType(dtype)
