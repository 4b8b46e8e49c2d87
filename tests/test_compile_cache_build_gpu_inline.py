"""The default GPU schedule inlines a kernel's intermediate stages in one walk of the function
(dlight/gpu/utils.py), choosing exactly the stages that inlining one by one took, so building
stays linear in the kernel's size; the result matches numpy in the TIR interpreter."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import te
from minitvm.dlight.gpu import utils
from minitvm.driver import lower_gpu
from minitvm.ir.structural import structural_equal
from minitvm.relax.transform.default_gpu_schedule import DefaultGPUSchedule
from minitvm.target import Target
from minitvm.testing.tir_interp import run_prim_func
from minitvm.tir.schedule import inline


def _chain(n: int, size: int = 64):
    """x -> x * 1.5 + i, n times, plus a stage read at two offsets (a stencil): every stage but
    the output is inlinable; the result is checked against numpy."""
    A = te.placeholder((size,), name="A")
    x = A
    for i in range(n):
        x = te.compute((size,), lambda j, x=x, i=i: x[j] * 1.5 + float(i), name=f"s{i}")
    out = te.compute((size - 1,), lambda j: x[j] + x[j + 1], name="out")
    return tvm.IRModule({"main": te.create_prim_func([A, out])})


def _reference(a: np.ndarray, n: int) -> np.ndarray:
    x = a
    for i in range(n):
        x = x * np.float32(1.5) + np.float32(i)
    return x[:-1] + x[1:]


def _one_by_one(sch):
    children = sch.get_child_blocks(sch.get_block("root"))
    utils._inline_one_by_one(sch, children, {id(sch.get(b)) for b in sch.get_output_blocks("root")})


def test_chain_is_inlined_in_one_walk_as_one_by_one_would(monkeypatch):
    walks = []
    many = inline.compute_inline_many
    monkeypatch.setattr(inline, "compute_inline_many",
                        lambda func, realizes: walks.append(len(realizes)) or many(func, realizes))  # fmt: skip
    n = 30
    target = Target("opencl")
    fast = DefaultGPUSchedule(target=target)(_chain(n))
    assert walks == [n]  # every stage in one walk
    monkeypatch.setattr(utils, "_inline_intermediates", _one_by_one)
    from minitvm.dlight.gpu import fallback

    monkeypatch.setattr(fallback, "_inline_intermediates", _one_by_one)
    walks.clear()
    slow = DefaultGPUSchedule(target=target)(_chain(n))
    assert len(walks) >= n and set(walks) == {1}  # one walk per stage
    assert structural_equal(fast["main"], slow["main"])
    func = fast["main"]
    assert "T.thread_binding" in func.script()
    lower_gpu([func], target)
    a = np.random.default_rng(0).standard_normal(64).astype("float32")
    out = np.zeros(63, "float32")
    run_prim_func(func, a, out)
    np.testing.assert_allclose(out, _reference(a, n), rtol=1e-5)
