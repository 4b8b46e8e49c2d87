"""load_module opens only regular files of bounded size, without blocking, and reads only zips
of plain, uniquely and safely named members whose declared sizes and checksums hold. Cases that
used to hang run in a subprocess with a timeout."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import ArgumentError, MiniTVMError, RuntimeError_
from minitvm.runtime import load_module
from minitvm.runtime import module as rt_module
from minitvm.runtime.meta import meta_digest, sha256


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    path = tmp_path_factory.mktemp("export") / "inc.so"
    tvm.build(te.create_schedule(B.op), [A, B], "llvm", name="inc").export_library(str(path))
    return str(path)


def _members(path: str) -> dict:
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def _resigned(members: dict) -> dict:
    """Checksums recomputed, as export_library computes them."""
    meta = json.loads(members["meta.json"])
    meta["checksums"] = {n: sha256(d) for n, d in members.items() if n != "meta.json"}
    meta["checksums"]["meta.json"] = meta_digest(meta)
    return dict(members, **{"meta.json": json.dumps(meta).encode()})


def _load_in_child(path: str) -> str:
    code = f"""
        import minitvm as tvm
        from minitvm.error import MiniTVMError
        try:
            tvm.runtime.load_module({path!r})
        except MiniTVMError as err:
            print("REFUSED", err)
    """
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return child.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.so"
    os.mkfifo(fifo)
    out = _load_in_child(str(fifo))  # used to block in open() forever
    assert "REFUSED" in out and "not a regular file (a FIFO)" in out


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_is_refused_before_it_is_read():
    out = _load_in_child("/dev/zero")  # used to read until memory ran out
    assert "REFUSED" in out and "a character device" in out


def test_a_directory_and_a_missing_file_are_clean_errors(tmp_path):
    with pytest.raises(RuntimeError_, match="not a regular file \\(a directory\\)"):
        load_module(str(tmp_path))
    with pytest.raises(RuntimeError_, match="cannot open the file"):
        load_module(str(tmp_path / "missing.so"))


def test_a_file_above_the_size_limit_is_refused(exported, monkeypatch):
    monkeypatch.setattr(rt_module, "MAX_FILE_BYTES", 1000)
    with pytest.raises(RuntimeError_, match="more than the limit of 1000 bytes"):
        load_module(exported)


def test_bytes_instead_of_a_path_is_an_argument_error(exported):
    data = Path(exported).read_bytes()
    with pytest.raises(ArgumentError, match="expected a file name .* got bytes"):
        load_module(data)
    with pytest.raises(ArgumentError, match="got int"):
        load_module(3)


def test_a_symlink_member_is_refused(exported, tmp_path):
    path = tmp_path / "link.so"
    members = _resigned(_members(exported))
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            if name == "module.ll":
                info.create_system = 3
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                data = b"/etc/passwd"
            zf.writestr(info, data)
    with pytest.raises(RuntimeError_, match="member 'module.ll' is a symbolic link"):
        load_module(str(path))


def test_a_second_meta_json_is_refused(exported, tmp_path):
    path = tmp_path / "dup.so"
    members = _resigned(_members(exported))
    meta = json.loads(members["meta.json"])
    meta["entry_name"] = "other"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("meta.json", json.dumps(meta))
    with pytest.raises(RuntimeError_, match="two members named 'meta.json'"):
        load_module(str(path))


@pytest.mark.parametrize("name", ["../evil.npy", "/abs.npy", "constants/../../x", "a\\b", ""])
def test_member_names_that_are_paths_are_refused(exported, tmp_path, name):
    path = tmp_path / "names.so"
    members = _resigned({**_members(exported), name or "x": b"data"})
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in members.items():
            zf.writestr(zipfile.ZipInfo(name if member == "x" else member), data)
    with pytest.raises(RuntimeError_, match="is not a plain relative name"):
        load_module(str(path))


def test_a_member_whose_declared_size_lies_is_refused(exported, tmp_path):
    path = tmp_path / "lie.so"
    members = _resigned(_members(exported))
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data, compress_type=zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    # grow module.ll's declared size in the central directory (the data stays as it is)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("module.ll")
    central = raw.rfind(b"PK\x01\x02", 0, raw.find(b"module.ll", raw.find(b"PK\x01\x02")))
    size_at = central + 24  # uncompressed size in the central directory entry
    assert int.from_bytes(raw[size_at : size_at + 4], "little") == info.file_size
    raw[size_at : size_at + 4] = (info.file_size + 7).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(
        RuntimeError_,
        match=f"module.ll declares {info.file_size + 7} bytes but holds {info.file_size}",
    ):
        load_module(str(path))


def test_members_are_rechecked_when_a_loader_reads_them(exported, tmp_path):
    zf = zipfile.ZipFile(exported)
    zf.minitvm_checksums = {"module.ll": "0" * 64}
    with zf, pytest.raises(RuntimeError_, match="module.ll does not match its sha256"):
        rt_module.read_member(exported, zf, "module.ll")


def test_a_valid_export_still_loads_and_runs(exported):
    mod = load_module(exported)
    a, b = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_export_of_a_relay_build_for_opencl_round_trips(tmp_path):
    from minitvm import relay
    from minitvm.runtime.device_module import DeviceModule

    x = relay.var("x", shape=(4,), dtype="float32")
    lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x))), "opencl")
    path = str(tmp_path / "ocl.so")
    lib.export_library(path)  # was: 'str' object has no attribute 'required_features'
    loaded = load_module(path)
    assert isinstance(loaded.executable.mod, DeviceModule)
    assert loaded.executable.mod.get_source() == lib.executable.mod.get_source()


def test_load_module_errors_are_minitvm_errors(tmp_path):
    bad = tmp_path / "junk.so"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(MiniTVMError, match="not a zip archive"):
        load_module(str(bad))
