"""Integer add/sub/mul get LLVM's `nsw` flag only where loop bounds and constants prove that
the result fits its type; arithmetic that may wrap keeps numpy's wrapping result."""

from __future__ import annotations

import re

import numpy as np

import minitvm as tvm
from minitvm import te, tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.target import Target
from minitvm.tir.transform.pipeline import lower_primfunc


def _emitted(func) -> str:
    """The LLVM IR codegen emits for `func`, before LLVM's optimisation."""
    target = Target("llvm")
    cg = codegen_llvm.CodeGenLLVM(target.create_target_machine(), target.cpu, target.features)
    cg.add_function(lower_primfunc(func.with_attr("global_symbol", "f")))
    return str(cg.module)


def _flagged(func) -> list[str]:
    return re.findall(r"= (?:add|sub|mul) nsw i32 [^\n]*", _emitted(func))


def test_index_arithmetic_of_bounded_loops_is_flagged_and_correct():
    A = te.placeholder((8, 32), name="A")
    B = te.compute((8, 16), lambda i, j: A[i, j * 2 + 1] - A[i, 31 - j], name="B")
    func = te.create_prim_func([A, B])
    assert len(_flagged(func)) >= 3, _emitted(func)  # i * 32 + j * 2 + 1 fits in int32
    mod = tvm.build(func)
    a = np.random.default_rng(0).standard_normal((8, 32)).astype("float32")
    b = tvm.nd.array(np.zeros((8, 16), "float32"))
    mod(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a[:, 1::2] - a[:, 31:15:-1])


def test_values_that_can_wrap_are_not_flagged_and_wrap_like_numpy():
    # i * 2**30 overflows int32 from i = 2 on: numpy wraps, so must we
    B = te.compute((8,), lambda i: i * tir.const(1 << 30, "int32") + 7, name="B")
    func = te.create_prim_func([B])
    assert not [f for f in _flagged(func) if "1073741824" in f], _emitted(func)
    assert re.search(r"= mul i32 [^\n]*1073741824", _emitted(func))
    mod = tvm.build(func)
    b = tvm.nd.array(np.zeros(8, "int32"))
    mod(b)
    expected = (np.arange(8, dtype=np.int32) * np.int32(1 << 30)) + np.int32(7)
    np.testing.assert_array_equal(b.numpy(), expected)


def test_data_dependent_values_are_not_flagged():
    # A[i] + 1 may be INT32_MAX + 1: nothing about it is known at build time
    A = te.placeholder((4,), name="A", dtype="int32")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    func = te.create_prim_func([A, B])
    assert not [f for f in _flagged(func) if '%"A' in f], _emitted(func)
    mod = tvm.build(func)
    a = np.array([0, 5, -1, np.iinfo(np.int32).max], "int32")
    b = tvm.nd.array(np.zeros(4, "int32"))
    mod(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a + np.int32(1))


def test_floor_div_and_mod_ranges_carry_through_to_the_index():
    A = te.placeholder((64,), name="A")
    B = te.compute((8, 8), lambda i, j: A[(i * 8 + j) // 4 * 4 + (i * 8 + j) % 4], name="B")
    mod = tvm.build(te.create_prim_func([A, B]))
    a = np.arange(64, dtype="float32")
    b = tvm.nd.array(np.zeros((8, 8), "float32"))
    mod(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a.reshape(8, 8))
