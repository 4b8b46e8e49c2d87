"""TVM v0.19 TIR analyses: is_pure_function / assert_pure_function, calculate_allocated_bytes
and estimate_tir_flops, each against hand-counted answers on small functions."""

import numpy as np
import pytest

from minitvm import IRModule, tir
from minitvm.script import tir as T
from minitvm.target import Target
from minitvm.tir.analysis import (
    PurityError,
    assert_pure_function,
    calculate_allocated_bytes,
    estimate_tir_flops,
    is_pure_function,
)


@T.prim_func
def _copy(A: T.Buffer(16, "float32"), B: T.Buffer(16, "float32")):
    for i in range(16):
        B[i] = A[i]


@T.prim_func
def _sum(A: T.Buffer((16, 16), "float32")) -> T.float32:
    acc = T.decl_buffer([1], "float32")
    acc[0] = T.float32(0)
    for i, j in T.grid(16, 16):
        acc[0] = acc[0] + A[i, j]
    T.ret(acc[0])


@T.prim_func
def _cosine(x: T.float32) -> T.float32:
    T.ret(T.cos(x))


@T.prim_func
def _extern():
    T.evaluate(T.call_extern("int32", "side_effect"))


def test_purity_of_writes_and_calls():
    assert not is_pure_function(_copy)
    assert is_pure_function(_cosine)
    assert not is_pure_function(_extern)
    with pytest.raises(PurityError, match="stores to buffer 'B', which it did not allocate"):
        assert_pure_function(_copy)
    with pytest.raises(AssertionError, match="extern function 'side_effect'"):
        assert_pure_function(_extern)
    assert assert_pure_function(_cosine)


def test_purity_allows_writes_to_own_allocation():
    assert is_pure_function(_sum)  # T.decl_buffer allocates: its stores are internal
    a = tir.decl_buffer((4,), "float32", "a")
    data = tir.Var("scratch", "handle")
    scratch = tir.decl_buffer((4,), "float32", "scratch", data=data)
    body = tir.Allocate(
        data, "float32", [4], True, tir.BufferStore(scratch, tir.BufferLoad(a, [0]), [0])
    )
    assert is_pure_function(tir.PrimFunc([a], body))


def _alloc(name, shape, dtype, scope, body):
    data = tir.Var(name, "handle")
    ann = {"storage_scope": scope}
    return tir.Allocate(data, dtype, shape, True, body, annotations=ann)


def test_allocated_bytes_peak_per_scope():
    inner = _alloc("b", [8, 8], "float16", "shared", tir.Evaluate(0))
    outer = _alloc("a", [16], "float32", "shared", inner)
    sibling = _alloc("c", [100], "float32", "shared", tir.Evaluate(0))
    glob = _alloc("g", [3], "int8", "global", tir.Evaluate(0))
    func = tir.PrimFunc([], tir.SeqStmt([outer, sibling, glob]))
    want_nested = np.zeros(16, "float32").nbytes + np.zeros((8, 8), "float16").nbytes
    sizes = calculate_allocated_bytes(func)["main"]
    assert sizes == {"shared": max(want_nested, 400), "global": 3}
    by_name = calculate_allocated_bytes(IRModule({"f": func, "g": tir.PrimFunc([], inner)}))
    assert by_name["g"] == {"shared": 128}


@T.prim_func
def _flops_if(a: T.Buffer(16, "float32"), b: T.Buffer(16, "float32")):
    for i in range(16):
        if i % 2 == 0:
            a[i] = b[i]
        else:
            a[i] = b[i] * 2.0 + b[i - 1]


@T.prim_func
def _flops_triangle(a: T.Buffer(16, "float32")):
    for i in range(8):
        for j in range(i + 8):
            a[j] = 2.0 * a[i]


def test_estimate_flops_counts_costlier_branch_and_loop_bound():
    assert estimate_tir_flops(IRModule({"main": _flops_if})) == 16 * 2
    # the inner extent i + 8 is at most 15: counted as 8 * 15 iterations of one multiply
    assert estimate_tir_flops(IRModule({"main": _flops_triangle})) == 120
    assert estimate_tir_flops(_flops_triangle.body) == 120
    given = _flops_triangle.with_attr("estimated_flops", 7)
    assert estimate_tir_flops(IRModule({"a": given, "b": _flops_if})) == 7 + 32


def _store_kernel(target, bound):
    A = tir.decl_buffer((16,), "float32", "A")
    i = tir.Var("i", "int32")
    store = tir.BufferStore(A, tir.BufferLoad(A, [i]) + 1.0, [i])
    if bound:
        iv = tir.IterVar(tir.Range(0, 16), i, tir.IterVar.ThreadIndex, "threadIdx.x")
        body = tir.AttrStmt(iv, "thread_extent", 16, store)
    else:
        body = tir.For(i, 0, 16, tir.ForKind.SERIAL, store)
    return tir.PrimFunc([A], body).with_attr("target", Target(target))


def test_verify_memory_rejects_host_access_to_device_args():
    from minitvm.error import BuildError
    from minitvm.tir.analysis import verify_memory
    from minitvm.tir.transform import VerifyMemory

    assert not verify_memory(_store_kernel("cuda", bound=False))
    assert verify_memory(_store_kernel("cuda", bound=True))
    assert verify_memory(_store_kernel("llvm", bound=False))  # the host's own memory
    mod = IRModule({"main": _store_kernel("cuda", bound=True)})
    assert VerifyMemory()(mod) is mod
    with pytest.raises(BuildError, match="(?s)'A' is accessed directly by host code.*forget to bind"):
        VerifyMemory()(IRModule({"main": _store_kernel("cuda", bound=False)}))
    with pytest.raises(BuildError, match="no 'target' attribute"):
        verify_memory(_store_kernel("cuda", bound=True).without_attr("target"))
