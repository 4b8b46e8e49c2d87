"""Identical kernels of one build share code; a rebuild reuses lowering and object code; two
different kernels never share anything (driver/kernel_cache.py)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.driver import kernel_cache
from minitvm.error import MiniTVMError
from minitvm.ir import IRModule


def _scale(c: float, n: int = 16, a: str = "A", b: str = "B"):
    A = te.placeholder((n,), name=a)
    B = te.compute((n,), lambda i: A[i] * c, name=b)
    return te.create_prim_func([A, B]).with_attr("global_symbol", "")


def _run(mod, name: str, n: int = 16) -> np.ndarray:
    a = tvm.nd.array(np.arange(n, dtype="float32") + 1)
    b = tvm.nd.array(np.full(n, 7.0, "float32"))
    mod[name](a, b)
    return b.numpy()


@pytest.fixture(autouse=True)
def _fresh_cache():
    kernel_cache.clear()
    yield
    kernel_cache.clear()


def _aliases(mod) -> list[str]:
    return [line for line in mod.get_source("ll").splitlines() if " = alias " in line]


def test_identical_kernels_are_compiled_once_and_each_name_runs():
    mod = tvm.build(IRModule({"k1": _scale(2.0), "k2": _scale(2.0), "k3": _scale(3.0)}))
    assert _aliases(mod) == ['@minitvm.k2 = alias i32 (ptr, ptr), ptr @minitvm.k1']
    assert kernel_cache.STATS["lowered_misses"] == 2  # k2 was not even lowered
    x = np.arange(16, dtype="float32") + 1
    np.testing.assert_array_equal(_run(mod, "k1"), x * 2)
    np.testing.assert_array_equal(_run(mod, "k2"), x * 2)
    np.testing.assert_array_equal(_run(mod, "k3"), x * 3)


def test_kernels_differing_only_in_the_sign_of_zero_are_not_shared():
    # structural equality has 0.0 == -0.0; the sign of the product tells them apart
    mod = tvm.build(IRModule({"pos": _scale(0.0), "neg": _scale(-0.0)}))
    assert _aliases(mod) == []
    assert not np.signbit(_run(mod, "pos")).any()
    assert np.signbit(_run(mod, "neg")).all()


def test_twins_with_other_param_names_share_code_and_keep_their_names():
    # relax names kernel params after its variables; FuncInfo and messages use each one's own
    mod = tvm.build(IRModule({"k1": _scale(2.0), "k2": _scale(2.0, a="X")}))
    assert len(_aliases(mod)) == 1
    np.testing.assert_array_equal(_run(mod, "k2"), (np.arange(16, dtype="float32") + 1) * 2)
    with pytest.raises(tvm.error.ShapeError, match="argument 'X'"):
        mod["k2"](tvm.nd.array(np.zeros(3, "float32")), tvm.nd.array(np.zeros(16, "float32")))


def test_rebuild_hits_the_cache_and_a_changed_constant_misses():
    first = tvm.build(_scale(2.0), name="f")
    assert kernel_cache.STATS == {
        "lowered_hits": 0, "lowered_misses": 1, "object_hits": 0, "object_misses": 1
    }  # fmt: skip
    again = tvm.build(_scale(2.0), name="f")
    # the object is reused whole: the kernel is not even lowered again
    assert kernel_cache.STATS["lowered_hits"] == 0 and kernel_cache.STATS["object_hits"] == 1
    assert again._result is first._result  # the very same object code
    changed = tvm.build(_scale(2.5), name="f")
    assert kernel_cache.STATS["lowered_misses"] == 2 and kernel_cache.STATS["object_misses"] == 2
    x = np.arange(16, dtype="float32") + 1
    np.testing.assert_array_equal(_run(again, "f"), x * 2)
    np.testing.assert_array_equal(_run(changed, "f"), x * 2.5)


def test_renamed_kernel_reuses_the_lowering_but_gets_its_own_object():
    tvm.build(_scale(2.0), name="f")
    g = tvm.build(_scale(2.0), name="g")
    tvm.build(_scale(2.0, a="X"), name="f")  # the cached lowering carries the param names
    assert kernel_cache.STATS["lowered_misses"] == 2
    assert kernel_cache.STATS["lowered_hits"] == 1 and kernel_cache.STATS["object_misses"] == 3
    np.testing.assert_array_equal(_run(g, "g"), (np.arange(16, dtype="float32") + 1) * 2)
    with pytest.raises(MiniTVMError, match="no function 'f'"):
        g["f"]


def test_other_shape_misses():
    tvm.build(_scale(2.0, n=16), name="f")
    mod = tvm.build(_scale(2.0, n=17), name="f")
    assert kernel_cache.STATS["lowered_hits"] == 0
    np.testing.assert_array_equal(_run(mod, "f", n=17), (np.arange(17, dtype="float32") + 1) * 2)


def test_the_lowering_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(kernel_cache._LOWERED, "capacity", 2)
    for c in (1.0, 2.0, 3.0):
        tvm.build(_scale(c), name="f")
    assert len(kernel_cache._LOWERED.items) == 2
    tvm.build(_scale(1.0), name="f")  # the least recently used one was dropped
    assert kernel_cache.STATS["lowered_hits"] == 0


def test_exported_library_with_aliases_loads_and_runs(tmp_path):
    mod = tvm.build(IRModule({"k1": _scale(2.0), "k2": _scale(2.0)}))
    path = str(tmp_path / "lib.so")
    mod.export_library(path)
    loaded = tvm.runtime.load_module(path)
    x = np.arange(16, dtype="float32") + 1
    np.testing.assert_array_equal(_run(loaded, "k2"), x * 2)
    np.testing.assert_array_equal(_run(loaded, "k1"), x * 2)


def test_relax_model_with_repeated_layers_shares_kernels_and_computes_right():
    # two identical dense+relu layers and one of another width: 2 kernel bodies (FuseTIR
    # already shares the twin layers' PrimFunc, so no alias is needed)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((8, 8)).astype("float32") for _ in range(2)]
    w3 = rng.standard_normal((8, 5)).astype("float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for w in ws:
                h = bb.emit(relax.op.nn.relu(relax.op.matmul(h, relax.const(w))))
            out = bb.emit_output(relax.op.nn.relu(relax.op.matmul(h, relax.const(w3))))
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    data = rng.standard_normal((4, 8)).astype("float32")
    got = vm["main"](tvm.nd.array(data)).numpy()
    ref = data
    for w in (*ws, w3):
        ref = np.maximum(ref @ w, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    src = ex.mod.get_source("ll")
    defined = [ln for ln in src.splitlines() if ln.startswith("define") and "@minitvm.fused" in ln]
    assert len(defined) == 2, src
    assert _aliases(ex.mod) == [], src


def test_exported_relax_executable_with_shared_kernels_loads(tmp_path):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((3, 5), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.exp(x))
            z = bb.emit(relax.op.add(relax.op.exp(y), y))
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), "llvm")
    path = str(tmp_path / "ex.so")
    ex.export_library(path)
    vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    data = np.linspace(-1, 1, 15, dtype="float32").reshape(3, 5)
    got = vm["main"](tvm.nd.array(data)).numpy()
    np.testing.assert_allclose(got, np.exp(np.exp(data)) + np.exp(data), rtol=1e-6)


def test_builds_in_several_threads_share_the_cache_safely():
    from concurrent.futures import ThreadPoolExecutor

    def build(c: float) -> np.ndarray:
        return _run(tvm.build(_scale(c), name="f"), "f")

    values = [1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(build, values))
    x = np.arange(16, dtype="float32") + 1
    for c, got in zip(values, results):
        np.testing.assert_array_equal(got, x * c)
