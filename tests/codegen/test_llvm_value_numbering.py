"""Index arithmetic repeated within one basic block is emitted once (local value numbering);
values are never reused across blocks, where they might not dominate the use."""

from __future__ import annotations

import re

import numpy as np

import minitvm as tvm
from minitvm import te, tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.target import Target
from minitvm.tir.transform.pipeline import lower_primfunc


def _emitted(func) -> str:
    target = Target("llvm")
    cg = codegen_llvm.CodeGenLLVM(target.create_target_machine(), target.cpu, target.features)
    cg.add_function(lower_primfunc(func.with_attr("global_symbol", "f")))
    return str(cg.module)


def _unrolled_tile():
    """Four unrolled stores per row reading A at `i * 8 + 2 * j (+ 1)`: `i * 8` is shared."""
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 4), lambda i, j: A[i, 2 * j] + A[i, 2 * j + 1], name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[1])
    return s.build_prim_func([A, B], "f")


def test_repeated_index_arithmetic_in_one_block_is_emitted_once_and_correct():
    func = _unrolled_tile()
    text = _emitted(func)
    muls = re.findall(r"= mul (?:nsw )?i32 %\"i\", 8\n", text)
    assert len(muls) == 1, text  # eight loads of the four unrolled copies share it
    mod = tvm.build(func)
    a = np.random.default_rng(0).standard_normal((16, 8)).astype("float32")
    b = tvm.nd.array(np.zeros((16, 4), "float32"))
    mod(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a[:, 0::2] + a[:, 1::2])


def test_values_are_not_reused_across_blocks():
    # the same index under a branch and after it: the branch's value does not dominate the end
    n = 32
    A = te.placeholder((n,), name="A")
    B = te.compute(
        (n,),
        lambda i: tir.if_then_else(i % 3 == 0, A[(i * 7) % n], 0.0) + A[(i * 7) % n],
        name="B",
    )
    func = te.create_prim_func([A, B])
    mod = tvm.build(func)  # LLVM's verifier would reject a use its definition does not dominate
    a = np.arange(n, dtype="float32")
    b = tvm.nd.array(np.zeros(n, "float32"))
    mod(tvm.nd.array(a), b)
    idx = (np.arange(n) * 7) % n
    np.testing.assert_array_equal(b.numpy(), np.where(np.arange(n) % 3 == 0, a[idx], 0) + a[idx])
