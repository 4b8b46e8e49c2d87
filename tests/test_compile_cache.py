"""The persistent compile cache (driver/compile_cache.py): a hit gives the same code without
lowering or LLVM; damaged, foreign or swapped entries are rebuilt, never loaded; concurrent
builders do not corrupt it; the off switch and the size bound work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.codegen import llvm as codegen_llvm
from minitvm.driver import compile_cache, kernel_cache
from minitvm.error import MiniTVMError


def _scale(c: float, n: int = 64):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * c + 1.0, name="B")
    return te.create_prim_func([A, B])


def _run(mod, name: str, c: float, n: int = 64) -> None:
    x = np.random.default_rng(0).standard_normal(n).astype("float32")
    out = tvm.nd.empty((n,), "float32")
    mod[name](tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), x * np.float32(c) + 1, rtol=1e-6)


@pytest.fixture(autouse=True)
def _fresh():
    kernel_cache.clear()  # the in-process cache would answer before the disk
    for k in compile_cache.STATS:
        compile_cache.STATS[k] = 0
    yield
    kernel_cache.clear()


@pytest.fixture
def llvm_calls(monkeypatch):
    """How often lowering and each LLVM stage ran."""
    calls = {"lower": 0, "optimize": 0, "emit": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(tvm.driver, "lower_primfunc", counted("lower", tvm.driver.lower_primfunc))
    monkeypatch.setattr(codegen_llvm, "_optimize", counted("optimize", codegen_llvm._optimize))
    monkeypatch.setattr(codegen_llvm, "_emit_object", counted("emit", codegen_llvm._emit_object))
    return calls


def _entries() -> list[str]:
    folder = os.path.join(os.environ["MINITVM_CACHE_DIR"], compile_cache._SUBDIR)
    return sorted(os.path.join(folder, n) for n in os.listdir(folder)) if os.path.isdir(folder) else []


def test_hit_returns_the_same_code_without_lowering_or_llvm(llvm_calls):
    first = tvm.build(_scale(2.0), name="f")
    assert compile_cache.STATS["writes"] == 1 and llvm_calls["emit"] == 1
    kernel_cache.clear()
    before = dict(llvm_calls)
    again = tvm.build(_scale(2.0), name="f")
    assert compile_cache.STATS["hits"] == 1
    assert llvm_calls == before  # nothing lowered, optimised or emitted
    assert again._result.object_code == first._result.object_code
    assert again._result.func_infos == first._result.func_infos
    _run(again, "f", 2.0)


def test_other_constant_name_or_target_options_miss(llvm_calls):
    tvm.build(_scale(2.0), name="f")
    kernel_cache.clear()
    changed = tvm.build(_scale(2.5), name="f")
    renamed = tvm.build(_scale(2.0), name="g")
    tvm.build(_scale(2.0), target="llvm -opt-level=1", name="f")
    assert compile_cache.STATS["hits"] == 0 and len(_entries()) == 4
    _run(changed, "f", 2.5)
    _run(renamed, "g", 2.0)


def test_negative_zero_constant_is_its_own_entry():
    tvm.build(_scale(0.0), name="f")
    kernel_cache.clear()
    neg = tvm.build(_scale(-0.0), name="f")
    assert compile_cache.STATS["hits"] == 0
    out = tvm.nd.empty((64,), "float32")
    neg["f"](tvm.nd.array(np.full(64, 1.0, "float32")), out)
    np.testing.assert_array_equal(out.numpy(), np.full(64, 1.0, "float32"))


def test_a_fresh_process_hits_the_entry_another_wrote():
    script = textwrap.dedent(
        """
        import numpy as np, minitvm as tvm
        from minitvm import te
        from minitvm.codegen import llvm
        from minitvm.driver import compile_cache
        calls = []
        original = llvm._emit_object
        llvm._emit_object = lambda *a: calls.append(1) or original(*a)
        A = te.placeholder((64,), name="A")
        B = te.compute((64,), lambda i: A[i] * 3.0, name="B")
        mod = tvm.build(te.create_prim_func([A, B]), name="k")
        x = np.arange(64, dtype="float32"); out = tvm.nd.empty((64,), "float32")
        mod["k"](tvm.nd.array(x), out)
        assert np.array_equal(out.numpy(), x * 3)
        print(compile_cache.STATS["hits"], len(calls))
        """
    )
    runs = [subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                           text=True, timeout=120) for _ in range(2)]  # fmt: skip
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["0", "1"]  # cold: LLVM emitted the object
    assert runs[1].stdout.split() == ["1", "0"]  # warm: a hit, LLVM not called


def _rewrite(path: str, edit) -> None:
    """Rewrite the entry's zip with edit(name, data) -> data applied to every member."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, edit(name, data))


def _flip_object_byte(name: str, data: bytes) -> bytes:
    if name != "object.o":
        return data
    return data[:-40] + bytes([data[-40] ^ 0xFF]) + data[-39:]


def _foreign_version(name: str, data: bytes) -> bytes:
    if name == compile_cache.KEY_MEMBER:  # `_reseal` then makes the checksums consistent
        return data.replace(b'"minitvm":"', b'"minitvm":"0.0.0-')
    return data


def _reseal(path: str) -> None:
    """Recompute meta.json's checksums, as a forger (or another version) would."""
    from minitvm.runtime.meta import meta_digest, sha256

    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(members.pop("meta.json"))
    meta["checksums"] = {n: sha256(d) for n, d in members.items()}
    meta["checksums"]["meta.json"] = meta_digest(meta)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("meta.json", json.dumps(meta))
        for n, d in members.items():
            zf.writestr(n, d)


@pytest.mark.parametrize(
    "damage",
    ["flipped object byte", "truncated", "foreign version", "foreign format", "empty"],
)
def test_damaged_or_foreign_entries_are_rebuilt_not_loaded(damage, llvm_calls):
    tvm.build(_scale(2.0), name="f")
    (path,) = _entries()
    if damage == "flipped object byte":
        _rewrite(path, _flip_object_byte)
    elif damage == "truncated":
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    elif damage == "foreign version":
        _rewrite(path, _foreign_version)
        _reseal(path)
    elif damage == "foreign format":
        _rewrite(path, lambda n, d: d.replace(b'"format_version": 2', b'"format_version": 3'))
        _reseal(path)
    else:
        open(path, "wb").close()
    kernel_cache.clear()
    emitted = llvm_calls["emit"]
    mod = tvm.build(_scale(2.0), name="f")
    assert compile_cache.STATS["rejected"] == 1 and compile_cache.STATS["hits"] == 0
    assert llvm_calls["emit"] == emitted + 1  # rebuilt
    _run(mod, "f", 2.0)
    kernel_cache.clear()
    tvm.build(_scale(2.0), name="f")  # the rebuild replaced the entry: now a hit
    assert compile_cache.STATS["hits"] == 1


def test_an_entry_moved_under_another_key_is_not_used():
    # a well-formed entry of another kernel (right checksums, loads fine) at this key's path
    tvm.build(_scale(2.0), name="f")
    (two,) = _entries()
    tvm.build(_scale(5.0), name="f")
    (five,) = [p for p in _entries() if p != two]
    os.replace(two, five)
    kernel_cache.clear()
    mod = tvm.build(_scale(5.0), name="f")
    assert compile_cache.STATS["rejected"] == 1 and compile_cache.STATS["hits"] == 0
    _run(mod, "f", 5.0)


def test_a_symlinked_entry_is_not_followed(tmp_path):
    tvm.build(_scale(2.0), name="f")
    (path,) = _entries()
    target = tmp_path / "elsewhere.mtvm"
    os.replace(path, target)
    os.symlink(target, path)
    kernel_cache.clear()
    _run(tvm.build(_scale(2.0), name="f"), "f", 2.0)
    assert compile_cache.STATS["rejected"] == 1


def test_off_switch_writes_nothing(monkeypatch, tmp_path, llvm_calls):
    monkeypatch.setenv("MINITVM_CACHE_DIR", "")
    tvm.build(_scale(2.0), name="f")
    kernel_cache.clear()
    _run(tvm.build(_scale(2.0), name="f"), "f", 2.0)
    assert compile_cache.STATS == {k: 0 for k in compile_cache.STATS}
    assert llvm_calls["emit"] == 2
    assert compile_cache.info()["enabled"] is False


def test_size_bound_evicts_least_recently_used(monkeypatch):
    tvm.build(_scale(1.0), name="f")
    (one,) = _entries()
    size = os.path.getsize(one)
    monkeypatch.setenv("MINITVM_CACHE_SIZE", str(int(size * 2.5)))
    tvm.build(_scale(2.0), name="f")
    os.utime(one, (1, 1))  # make "one" the oldest, then use it: a hit refreshes it
    two = next(p for p in _entries() if p != one)
    os.utime(two, (2, 2))
    kernel_cache.clear()
    tvm.build(_scale(1.0), name="f")
    assert compile_cache.STATS["hits"] == 1
    tvm.build(_scale(3.0), name="f")  # third entry: over the bound, "two" goes
    assert len(_entries()) == 2 and one in _entries() and two not in _entries()
    assert compile_cache.STATS["evicted"] == 1


def test_bad_size_setting_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MINITVM_CACHE_SIZE", "lots")
    with pytest.raises(MiniTVMError, match="MINITVM_CACHE_SIZE='lots' is not a size"):
        compile_cache.evict(limit=None, objects="/nonexistent")


def test_a_directory_writable_by_others_is_not_used(monkeypatch, tmp_path):
    shared = tmp_path / "shared"
    (shared / compile_cache._SUBDIR).mkdir(parents=True)
    os.chmod(shared / compile_cache._SUBDIR, 0o777)
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(shared))
    monkeypatch.setattr(compile_cache, "_warned", set())
    with pytest.warns(RuntimeWarning, match="writable by others"):
        _run(tvm.build(_scale(2.0), name="f"), "f", 2.0)
    assert os.listdir(shared / compile_cache._SUBDIR) == []


_BUILDER = textwrap.dedent(
    """
    import numpy as np, minitvm as tvm
    from minitvm import te
    from minitvm.driver import kernel_cache
    for round in range(3):
        for c in (1.0, 2.0, 3.0):
            kernel_cache.clear()
            A = te.placeholder((256,), name="A")
            B = te.compute((256,), lambda i: A[i] * c, name="B")
            mod = tvm.build(te.create_prim_func([A, B]), name="k")
            x = np.arange(256, dtype="float32"); out = tvm.nd.empty((256,), "float32")
            mod["k"](tvm.nd.array(x), out)
            assert np.array_equal(out.numpy(), x * np.float32(c)), c
    print("ok")
    """
)


def _scale_256(c: float):
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] * c, name="B")
    return te.create_prim_func([A, B])


def test_concurrent_builders_do_not_corrupt_the_cache(monkeypatch):
    # the source digest as the children see it (a checkout being edited changes it)
    monkeypatch.setattr(compile_cache, "_source_digest", None)
    procs = [subprocess.Popen([sys.executable, "-c", _BUILDER], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and out.strip() == "ok", err
    names = [os.path.basename(p) for p in _entries()]
    assert len(names) == 3 and all(compile_cache._ENTRY.fullmatch(n) for n in names)
    for c in (1.0, 2.0, 3.0):  # every entry is whole: each loads as a hit here
        kernel_cache.clear()
        tvm.build(_scale_256(c), name="k")
    stats = compile_cache.STATS
    assert stats["hits"] == 3 and stats["rejected"] == 0, stats


def test_relax_build_profile_prints_stages_and_kernels(capsys):
    from minitvm import relax
    from minitvm.testing import zoo

    mod, params = zoo.get_model("mlp")
    mod = relax.transform.BindParams("main", params)(mod)
    ex = relax.build(mod, "llvm", profile=True)
    out = capsys.readouterr().out
    for stage in ("graph passes", "LegalizeOps", "default schedule", "TIR lowering",
                  "LLVM optimisation", "object emission", "compile cache miss", "kernels ("):
        assert stage in out, out
    assert ex.build_profile.stages["TIR lowering"] > 0
    kernel_cache.clear()
    warm_ex = relax.build(mod, "llvm", profile=True)
    warm = capsys.readouterr().out
    assert "compile cache hit" in warm and "TIR lowering" not in warm
    x = np.random.default_rng(1).standard_normal(zoo.input_shape("mlp")).astype("float32")
    cold_y = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    warm_y = relax.VirtualMachine(warm_ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_allclose(cold_y.sum(axis=-1), 1.0, rtol=1e-5)  # softmax rows
    np.testing.assert_array_equal(warm_y, cold_y)


def test_cli_cache_info_and_clear(capsys):
    from minitvm.cli import main

    tvm.build(_scale(2.0), name="f")
    assert main(["cache", "info"]) == 0
    assert "entries: 1" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert _entries() == []
