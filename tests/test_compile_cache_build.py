"""The whole-build cache of relax.build (relax/vm/build_cache.py): a hit returns an Executable
computing the same outputs without running any graph pass or schedule; any change of the
module, its constants, params, target or PassContext misses; damaged entries are rebuilt;
uncacheable builds and the off switch write nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.driver import compile_cache, kernel_cache
from minitvm.relax.vm import build_cache

_RNG = np.random.default_rng(0)
W = _RNG.standard_normal((8, 4)).astype("float32")
B = _RNG.standard_normal((4,)).astype("float32")
X = _RNG.standard_normal((2, 8)).astype("float32")


def _module(w: np.ndarray = W, bind: bool = True, shift: float = 1.5) -> tvm.IRModule:
    """relu(x @ w + b) * shift, with w and b constants (bind) or params named "w", "b"."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 8), "float32"))
    params = [x]
    if bind:
        wv, bv = relax.const(w), relax.const(B)
    else:
        wv = relax.Var("w", relax.TensorStructInfo((8, 4), "float32"))
        bv = relax.Var("b", relax.TensorStructInfo((4,), "float32"))
        params += [wv, bv]
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, wv))
            y = bb.emit(relax.op.nn.relu(relax.op.add(y, bv)))
            out = bb.emit_output(relax.op.multiply(y, relax.const(shift, "float32")))
        bb.emit_func_output(out)
    return bb.get()


def _expected(w: np.ndarray = W, shift: float = 1.5) -> np.ndarray:
    return np.maximum(X @ w + B, 0) * np.float32(shift)


def _run(ex) -> np.ndarray:
    return relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(X)).numpy()


@pytest.fixture(autouse=True)
def _fresh():
    kernel_cache.clear()
    for k in compile_cache.STATS:
        compile_cache.STATS[k] = 0
    yield
    kernel_cache.clear()


@pytest.fixture
def pass_calls(monkeypatch):
    """How often LegalizeOps and the default schedule ran (the pipeline looks them up in
    relax.transform when it is built, so a wrapper there is what a build calls)."""
    calls = {"LegalizeOps": 0, "DefaultSchedule": 0}
    from minitvm.relax import transform

    for name in calls:
        original = getattr(transform, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(transform, name, counted)
    return calls


def _entries() -> list[str]:
    folder = os.path.join(os.environ["MINITVM_CACHE_DIR"], compile_cache._SUBDIR)
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def _whole_build_entry(mod, target="llvm") -> str:
    key = build_cache.build_key(mod, target)
    return os.path.join(os.environ["MINITVM_CACHE_DIR"], compile_cache._SUBDIR,
                        f"{key.digest}.mtvm")  # fmt: skip


def test_hit_skips_every_pass_and_computes_the_same(pass_calls):
    cold = relax.build(_module(), "llvm")
    assert pass_calls == {"LegalizeOps": 1, "DefaultSchedule": 1}
    assert os.path.isfile(_whole_build_entry(_module()))
    warm = relax.build(_module(), "llvm")  # a new, equal module object
    assert pass_calls == {"LegalizeOps": 1, "DefaultSchedule": 1}  # nothing ran again
    assert compile_cache.STATS["hits"] == 1
    np.testing.assert_allclose(_run(cold), _expected(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_run(warm), _run(cold))
    assert warm.program == cold.program
    assert [c.tobytes() for c in warm.constants] == [c.tobytes() for c in cold.constants]


@pytest.mark.parametrize(
    "change",
    ["constant", "scalar", "params", "target", "opt_level", "disabled_pass", "config"],
)
def test_any_change_misses(change, pass_calls):
    relax.build(_module(), "llvm")
    w2 = W.copy()
    w2[3, 1] = np.nextafter(w2[3, 1], np.float32(np.inf))  # one ulp
    target, ctx, mod, params, expected = "llvm", {}, _module(), None, _expected()
    if change == "constant":
        mod, expected = _module(w2), _expected(w2)
    elif change == "scalar":
        mod, expected = _module(shift=1.25), _expected(shift=1.25)
    elif change == "params":
        relax.build(_module(bind=False), "llvm", params={"w": W, "b": B})
        mod, params, expected = _module(bind=False), {"w": w2, "b": B}, _expected(w2)
    elif change == "target":
        target = "llvm -opt-level=2"
    elif change == "opt_level":
        ctx = {"opt_level": 1}
    elif change == "disabled_pass":
        ctx = {"disabled_pass": ["FoldConstant"]}
    else:
        ctx = {"config": {"relax.some_option": True}}
    before = dict(pass_calls)
    hits = compile_cache.STATS["hits"]
    with tvm.transform.PassContext(**ctx):
        ex = relax.build(mod, target, params=params)
    assert pass_calls["LegalizeOps"] == before["LegalizeOps"] + 1, "it should have missed"
    assert compile_cache.STATS["hits"] == hits
    np.testing.assert_allclose(_run(ex), expected, rtol=1e-5, atol=1e-6)
    with tvm.transform.PassContext(**ctx):  # and the changed build is now an entry of its own
        again = relax.build(mod, target, params=params)
    assert pass_calls["LegalizeOps"] == before["LegalizeOps"] + 1
    np.testing.assert_array_equal(_run(again), _run(ex))


def test_negative_zero_constant_is_another_build():
    zero, negative_zero = _module(shift=0.0), _module(shift=-0.0)
    assert build_cache.build_key(zero, "llvm").text != build_cache.build_key(negative_zero,
                                                                             "llvm").text


@pytest.mark.parametrize("damage", ["flip", "truncate", "swap"])
def test_damaged_entries_are_rebuilt_not_loaded(damage, pass_calls):
    relax.build(_module(), "llvm")
    path = _whole_build_entry(_module())
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:  # a whole, valid entry of another build under this build's name
        other = _module(shift=2.0)
        relax.build(other, "llvm")
        with open(_whole_build_entry(other), "rb") as f:
            data = f.read()
    with open(path, "wb") as f:
        f.write(data)
    runs = pass_calls["LegalizeOps"]
    ex = relax.build(_module(), "llvm")
    assert pass_calls["LegalizeOps"] == runs + 1  # rebuilt
    assert compile_cache.STATS["rejected"] >= 1
    np.testing.assert_allclose(_run(ex), _expected(), rtol=1e-5, atol=1e-6)
    relax.build(_module(), "llvm")  # the rebuilt entry replaced the damaged one
    assert pass_calls["LegalizeOps"] == runs + 1


def test_off_switch_and_instruments_cache_nothing(monkeypatch, pass_calls):
    class Counter:
        def __init__(self):
            self.passes = 0

        def run_after_pass(self, mod, info):
            self.passes += 1

    counter = Counter()
    for _ in range(2):
        with tvm.transform.PassContext(instruments=[counter]):
            relax.build(_module(), "llvm")
    assert pass_calls["LegalizeOps"] == 2 and counter.passes > 0
    assert build_cache.build_key(_module(), "llvm") is not None
    assert not os.path.exists(_whole_build_entry(_module()))
    monkeypatch.setenv("MINITVM_CACHE_DIR", "")
    for _ in range(2):
        ex = relax.build(_module(), "llvm")
    assert pass_calls["LegalizeOps"] == 4
    assert build_cache.build_key(_module(), "llvm") is None
    np.testing.assert_allclose(_run(ex), _expected(), rtol=1e-5, atol=1e-6)


def test_a_user_registered_op_turns_the_whole_build_cache_off(monkeypatch):
    """A user's op row is code the key cannot describe (another process may register a
    different compute under the same name), so no whole build is keyed while one exists."""
    from minitvm.relax.op import OP_TABLE, OpDef, OpPattern

    assert build_cache.build_key(_module(), "llvm") is not None

    def infer(call):  # defined here: its module is this test file, not minitvm
        return call.args[0].struct_info

    def compute(x):
        return x

    monkeypatch.setitem(
        OP_TABLE, "relax.user_identity",
        OpDef("relax.user_identity", infer, compute, None, OpPattern.ELEMWISE),
    )  # fmt: skip
    assert build_cache.build_key(_module(), "llvm") is None


def test_profile_reports_the_whole_build_hit(capsys):
    relax.build(_module(), "llvm")
    ex = relax.build(_module(), "llvm", profile=True)
    out = capsys.readouterr().out
    assert "compile cache hit" in out and "(whole build)" in out
    assert "LegalizeOps" not in out and "TIR lowering" not in out
    np.testing.assert_allclose(_run(ex), _expected(), rtol=1e-5, atol=1e-6)


def test_a_fresh_process_hits_the_entry_this_one_wrote(tmp_path):
    relax.build(_module(), "llvm")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import numpy as np
        from minitvm import relax
        from minitvm.driver import compile_cache
        from test_compile_cache_build import _module, _run, _expected
        relax.transform.LegalizeOps = None  # a miss would fail loudly
        ex = relax.build(_module(), "llvm")
        assert compile_cache.STATS["hits"] == 1, compile_cache.STATS
        np.testing.assert_allclose(_run(ex), _expected(), rtol=1e-5, atol=1e-6)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(os.environ), timeout=300, check=False)  # fmt: skip
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]
