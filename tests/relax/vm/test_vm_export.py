"""Executable.export_library → one zip (object code, program.json, constants as .npy, no
pickle) → load in a fresh process → run."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import RuntimeError_
from minitvm.relax import op
from minitvm.relax.vm import Executable, VirtualMachine, build, load_executable


def _module():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 3), "float32"))
    bb = relax.BlockBuilder()
    w = np.arange(12, dtype="float32").reshape(3, 4) / 10
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(op.nn.relu(op.matmul(x, relax.const(w))))
            # a (4,) constant, not a 0-d one: a 0-d constant becomes an immediate of the
            # fused kernel (fuse_scalars.py) and these tests want two exported constants
            out = bb.emit_output(op.add(h, relax.const(np.full(4, 0.5, "float32"))))
        bb.emit_func_output(out)
    return bb.get(), w


_CHILD = """
import sys, numpy as np
import minitvm as tvm
import minitvm.relax  # registers the Executable loader
ex = tvm.runtime.load_module(sys.argv[1])
vm = minitvm.relax.VirtualMachine(ex, tvm.cpu())
x = np.load(sys.argv[2])
np.save(sys.argv[3], vm["main"](x).numpy())
print(type(ex).__name__, ex.memory_stats("main", n=x.shape[0])["allocated_bytes"])
"""


def test_export_then_load_in_a_fresh_process(tmp_path):
    mod, w = _module()
    ex = build(mod)
    path = tmp_path / "mlp.so"
    ex.export_library(str(path))
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        meta = json.loads(zf.read("meta.json"))
        assert not any(n.endswith((".pkl", ".pickle")) for n in names)
    assert {"meta.json", "object.o", "program.json", "constants/0.npy", "constants/1.npy"} <= names
    assert meta["kind"] == "relax.Executable"
    x = np.random.default_rng(0).standard_normal((5, 3)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split()[0] == "Executable"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), np.maximum(x @ w, 0) + 0.5, rtol=1e-5)


def test_load_executable_round_trip_in_process(tmp_path):
    mod, _ = _module()
    ex = build(mod)
    path = str(tmp_path / "m.zip")
    ex.export_library(path)
    loaded = load_executable(path)
    assert isinstance(loaded, Executable)
    assert loaded.as_text() == ex.as_text() and loaded.stats() == ex.stats()
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(
        VirtualMachine(loaded, tvm.cpu())["main"](x).numpy(),
        VirtualMachine(ex, tvm.cpu())["main"](x).numpy(),
    )


def test_loading_a_plain_module_as_executable_is_an_error(tmp_path):
    from minitvm import te

    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    path = str(tmp_path / "plain.zip")
    tvm.build(te.create_schedule(B.op), [A, B], "llvm", name="inc").export_library(path)
    assert isinstance(tvm.runtime.load_module(path), tvm.runtime.Module)
    with pytest.raises(RuntimeError_, match="holds a plain runtime Module, not a relax Executable"):
        load_executable(path)


def test_tampered_shape_code_is_rejected(tmp_path):
    mod, _ = _module()
    ex = build(mod)
    ex.program["functions"]["main"]["storages"] = ["__import__('os').getpid()"]
    with pytest.raises(RuntimeError_, match="is not plain integer arithmetic"):
        VirtualMachine(ex, tvm.cpu())


def _resign(src, dst, edit_program):
    """A copy whose program.json was edited and whose checksums were recomputed."""
    from minitvm.runtime.meta import meta_digest, sha256

    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    program = json.loads(members["program.json"])
    edit_program(program)
    members["program.json"] = json.dumps(program).encode()
    meta = json.loads(members["meta.json"])
    meta["checksums"]["program.json"] = sha256(members["program.json"])
    meta["checksums"]["meta.json"] = meta_digest(meta)
    members["meta.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return str(dst)


def test_edited_program_json_is_rejected_by_its_checksum(tmp_path):
    mod, _ = _module()
    src = tmp_path / "m.zip"
    build(mod).export_library(str(src))
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["program.json"] = members["program.json"].replace(b'"Ret"', b'"Ret" ')
    with zipfile.ZipFile(tmp_path / "e.zip", "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(RuntimeError_, match="program.json does not match its sha256"):
        load_executable(str(tmp_path / "e.zip"))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda p: p["functions"]["main"]["code"].append(["Exec", "x"]), "not a known VM opcode"),
        (lambda p: p["functions"]["main"].update(num_regs="9"), "num_regs is not a int"),
        (lambda p: p["functions"]["main"].update(hook=1), "does not have the fields"),
        (lambda p: p.update(version=7), "unknown VM program version"),
    ],
)
def test_resigned_malformed_programs_are_rejected(tmp_path, edit, match):
    mod, _ = _module()
    src = tmp_path / "m.zip"
    build(mod).export_library(str(src))
    with pytest.raises(RuntimeError_, match=match):
        load_executable(_resign(src, tmp_path / "bad.zip", edit))


def test_resigned_code_in_shape_expressions_never_runs(tmp_path):
    mod, _ = _module()
    src = tmp_path / "m.zip"
    build(mod).export_library(str(src))
    marker = tmp_path / "pwned"
    evil = f"__import__('os').system('touch {marker}')"
    path = _resign(src, tmp_path / "evil.zip", lambda p: p["functions"]["main"].update(
        storages=[evil]
    ))
    with pytest.raises(RuntimeError_, match="is not plain integer arithmetic"):
        VirtualMachine(load_executable(path), tvm.cpu())
    assert not marker.exists()
