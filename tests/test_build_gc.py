"""A build pauses Python's cyclic garbage collector while it lowers and emits kernels, and leaves
it as it found it: on or off, after a good build and after a failing one. Its kernels still
compute what numpy computes, and the IR it emitted is freed."""

import gc

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import BuildError


def _add_schedule(n=64):
    a = te.placeholder((n,), name="A")
    b = te.placeholder((n,), name="B")
    c = te.compute((n,), lambda i: a[i] + b[i] * 2.0, name="C")
    s = te.create_schedule(c.op)
    (i,) = c.op.axis
    _, inner = s[c].split(i, factor=4)
    s[c].unroll(inner)
    return s, [a, b, c]


def _build_and_check(name):
    s, args = _add_schedule()
    seen = []
    gc.callbacks.append(lambda phase, info: seen.append(phase))
    try:
        f = tvm.build(s, args, "llvm", name=name)
    finally:
        gc.callbacks.pop()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(64).astype("float32") for _ in range(2))
    out = tvm.nd.array(np.zeros(64, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a + b * 2.0, rtol=1e-6)
    return seen


@pytest.fixture(autouse=True)
def _cache_off(monkeypatch):
    monkeypatch.setenv("MINITVM_CACHE_DIR", "")  # a cold build every time


def test_collector_is_back_on_after_a_build():
    assert gc.isenabled()
    _build_and_check("gc_on")
    assert gc.isenabled()


def test_collector_stays_off_when_the_caller_turned_it_off():
    gc.disable()
    try:
        seen = _build_and_check("gc_off")
        assert not gc.isenabled()
        assert seen == []  # nothing collected behind the caller's back
    finally:
        gc.enable()


def test_collector_is_back_on_after_a_failing_build(monkeypatch):
    from minitvm import driver

    def fail(func, **kwargs):
        raise BuildError(f"lowering '{func.name}' failed (on purpose)")

    monkeypatch.setattr(driver, "_lower_checked", fail)
    driver.kernel_cache.clear()  # an earlier test's identical kernel must not be reused
    s, args = _add_schedule()
    with pytest.raises(BuildError, match="on purpose"):
        tvm.build(s, args, "llvm", name="gc_fail")
    assert gc.isenabled()


def test_emitted_ir_is_freed_without_the_collector():
    from minitvm.codegen import llvm as codegen

    s, args = _add_schedule()
    func = tvm.lower(s, args, name="gc_free")["gc_free"]
    gc.collect()
    gc.disable()
    try:
        before = gc.get_count()[0]
        codegen.build([func], "llvm")
        # objects still tracked by the collector: llvmlite's IR with its parent links would
        # leave thousands behind; freed by reference counting, only a few stay
        left = gc.collect()
    finally:
        gc.enable()
    assert before >= 0 and left < 200, left
