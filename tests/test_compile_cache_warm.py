"""The warm path of the compile cache: load_module reads and hashes each member once (verified
before any loader sees it, stored members read straight into their buffer), constants become
arrays over the verified bytes, kernels' argument checkers are generated on first call with the
same errors, and the key's parts (printed module, source digest) are computed as before."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.driver import compile_cache, kernel_cache
from minitvm.error import MiniTVMError, RuntimeError_
from minitvm.relax.printer import script_and_constants
from minitvm.relax.vm import build_cache
from minitvm.relax.vm.executable import _read_npy
from minitvm.runtime import module as rt_module

_RNG = np.random.default_rng(7)
W = _RNG.standard_normal((16, 8)).astype("float32")
B = _RNG.standard_normal((8,)).astype("float32")
X = _RNG.standard_normal((4, 16)).astype("float32")


def _module() -> tvm.IRModule:
    """relu(x @ W + B) with W and B constants."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, relax.const(W)))
            out = bb.emit_output(relax.op.nn.relu(relax.op.add(y, relax.const(B))))
        bb.emit_func_output(out)
    return bb.get()


def _expected() -> np.ndarray:
    return np.maximum(X @ W + B, 0)


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
def reads(monkeypatch):
    """Names of the members read from zips (each read hashes what it reads)."""
    seen: list[str] = []
    original = rt_module._read_hashing

    def counted(zf, entry, hash_it):
        seen.append(entry.filename)
        return original(zf, entry, hash_it)

    monkeypatch.setattr(rt_module, "_read_hashing", counted)
    return seen


@pytest.fixture
def exported(tmp_path) -> str:
    path = str(tmp_path / "ex.so")
    relax.build(_module(), "llvm").export_library(path)
    return path


def _add_one(tmp_path) -> tuple[tvm.runtime.Module, str]:
    A = te.placeholder((8,), name="A")
    B_ = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    mod = tvm.build(te.create_schedule(B_.op), [A, B_], "llvm", name="add_one")
    path = str(tmp_path / "add_one.so")
    mod.export_library(path)
    return mod, path


# --- one read per member ---------------------------------------------------------------------
def test_load_module_reads_each_member_of_an_executable_once(exported, reads):
    ex = rt_module.load_module(exported)
    members = [n for n in zipfile.ZipFile(exported).namelist() if n != "meta.json"]
    assert sorted(reads) == sorted(["meta.json"] + members)  # meta.json: its own digest
    np.testing.assert_allclose(_run(ex), _expected(), rtol=1e-5, atol=1e-5)


def test_a_warm_build_reads_each_member_of_its_entry_once(reads):
    relax.build(_module(), "llvm")
    reads.clear()
    ex = relax.build(_module(), "llvm")
    assert compile_cache.STATS["hits"] == 1
    assert len(reads) == len(set(reads)) and "cache_key.json" in reads
    np.testing.assert_allclose(_run(ex), _expected(), rtol=1e-5, atol=1e-5)


def test_a_loader_reading_a_member_twice_gets_it_verified_again(exported, reads):
    with zipfile.ZipFile(exported) as zf:
        meta = rt_module._read_meta(exported, zf)
        rt_module._check_checksums(exported, zf, meta)
        first = rt_module.read_member(exported, zf, "program.json")
        second = rt_module.read_member(exported, zf, "program.json")
        assert first == second == zf.read("program.json")
    assert reads.count("program.json") == 2  # handed over once, then read and hashed again


# --- verified before use ---------------------------------------------------------------------
def _replace_member_bytes(path: str, name: str, transform) -> None:
    """Rewrite `name` (stored) in place, same length, leaving meta.json's checksums as they are."""
    raw = bytearray(Path(path).read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
        data = zf.read(name)
    start = raw.find(data, info.header_offset)
    assert start > 0 and info.compress_type == zipfile.ZIP_STORED
    raw[start : start + len(data)] = transform(data)
    Path(path).write_bytes(bytes(raw))


def test_a_changed_constant_byte_is_refused_before_the_executable_loads(exported):
    name = "constants/0.npy"
    _replace_member_bytes(exported, name, lambda d: d[:-1] + bytes([d[-1] ^ 1]))
    with pytest.raises(RuntimeError_, match=f"{name} does not match its sha256"):
        rt_module.load_module(exported)


def test_a_damaged_cache_entry_is_rebuilt_and_still_correct():
    relax.build(_module(), "llvm")
    (entry,) = [
        os.path.join(root, f)
        for root, _, files in os.walk(compile_cache.cache_dir())
        for f in files
        if f.endswith(".mtvm")
        and "constants/0.npy" in zipfile.ZipFile(os.path.join(root, f)).namelist()
    ]
    _replace_member_bytes(entry, "constants/0.npy", lambda d: d[:-4] + b"\0\0\0\0")
    ex = relax.build(_module(), "llvm")
    assert compile_cache.STATS["rejected"] == 1 and compile_cache.STATS["hits"] == 0
    np.testing.assert_allclose(_run(ex), _expected(), rtol=1e-5, atol=1e-5)


def test_a_local_header_naming_another_member_is_refused(tmp_path):
    _, path = _add_one(tmp_path)
    raw = bytearray(Path(path).read_bytes())
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo("object.o").header_offset
    assert raw[offset : offset + 4] == b"PK\x03\x04"
    name_at = offset + 30
    assert raw[name_at : name_at + 8] == b"object.o"
    raw[name_at : name_at + 8] = b"object.x"
    Path(path).write_bytes(bytes(raw))
    with pytest.raises(RuntimeError_, match="object.o is damaged .*differ"):
        rt_module.load_module(path)


def test_a_local_header_without_its_signature_is_refused(tmp_path):
    _, path = _add_one(tmp_path)
    raw = bytearray(Path(path).read_bytes())
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo("object.o").header_offset
    raw[offset : offset + 4] = b"XX\x03\x04"
    Path(path).write_bytes(bytes(raw))
    with pytest.raises(RuntimeError_, match="object.o is damaged .*magic number"):
        rt_module.load_module(path)


def test_a_stored_member_holding_more_than_it_declares_is_refused(tmp_path):
    _, path = _add_one(tmp_path)
    raw = bytearray(Path(path).read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("object.o")
    central = raw.rfind(b"PK\x01\x02", 0, raw.find(b"object.o", raw.find(b"PK\x01\x02")))
    size_at = central + 24  # uncompressed size; the stored (compressed) size stays
    assert int.from_bytes(raw[size_at : size_at + 4], "little") == info.file_size
    raw[size_at : size_at + 4] = (info.file_size - 5).to_bytes(4, "little")
    Path(path).write_bytes(bytes(raw))
    with pytest.raises(
        RuntimeError_, match=f"object.o declares {info.file_size - 5} bytes but holds more"
    ):
        rt_module.load_module(path)


def test_members_of_an_in_memory_zip_are_read_and_verified_too(tmp_path):
    _, path = _add_one(tmp_path)
    data = Path(path).read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        meta = rt_module._read_meta(path, zf)
        rt_module._check_checksums(path, zf, meta)
        assert rt_module.read_member(path, zf, "object.o") == zf.read("object.o")
        zf.minitvm_checksums = {"object.o": "0" * 64}
        with pytest.raises(RuntimeError_, match="object.o does not match its sha256"):
            rt_module.read_member(path, zf, "object.o")


@pytest.mark.parametrize("chunk, prealloc", [(7, 5), (4096, 100), (1 << 20, 1 << 26)])
def test_members_larger_than_the_first_buffer_grow_it_and_load_intact(
    tmp_path, monkeypatch, chunk, prealloc
):
    monkeypatch.setattr(rt_module, "_READ_CHUNK", chunk)
    monkeypatch.setattr(rt_module, "_PREALLOC_BYTES", prealloc)
    _, path = _add_one(tmp_path)
    with zipfile.ZipFile(path) as zf:
        expected = {n: zf.read(n) for n in zf.namelist()}  # zipfile's own reader: the oracle
        meta = rt_module._read_meta(path, zf)
        rt_module._check_checksums(path, zf, meta)
        assert {n: rt_module.read_member(path, zf, n) for n in expected} == expected
    mod = rt_module.load_module(path)
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, a + 1)


# --- constants over their verified bytes -----------------------------------------------------
@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype="<f4").reshape(3, 4),
        np.arange(12, dtype=">i4").reshape(4, 3),
        np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        np.zeros((0, 3), "int8"),
        np.float32(2.5),
        np.array([True, False]),
    ],
    ids=["f32", "big-endian", "fortran", "empty", "scalar", "bool"],
)
def test_npy_constants_read_as_numpy_reads_them(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    expected = np.load(io.BytesIO(buf.getvalue()))
    got = _read_npy("here", "c.npy", np.frombuffer(bytearray(buf.getvalue()), np.uint8))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert got.flags.writeable


def test_an_npy_constant_with_extra_bytes_is_refused():
    buf = io.BytesIO()
    np.save(buf, np.ones(3, "float32"))
    data = np.frombuffer(bytearray(buf.getvalue() + b"\0"), np.uint8)
    with pytest.raises(RuntimeError_, match="constant c.npy is damaged .*declares 12 bytes"):
        _read_npy("here", "c.npy", data)


# --- argument checkers on first call ---------------------------------------------------------
def _error(func, *args) -> tuple[type, str]:
    with pytest.raises(MiniTVMError) as info:
        func(*args)
    return type(info.value), str(info.value)


@pytest.mark.parametrize(
    "bad",
    [
        lambda: (np.zeros(8, "float64"), np.zeros(8, "float32")),  # dtype
        lambda: (np.zeros(9, "float32"), np.zeros(8, "float32")),  # shape
        lambda: (np.zeros(8, "float32"),),  # count
        lambda: (np.zeros(16, "float32")[::2], np.zeros(8, "float32")),  # strides
    ],
    ids=["dtype", "shape", "count", "strided"],
)
def test_a_wrong_first_call_raises_what_a_later_wrong_call_raises(tmp_path, bad):
    built, path = _add_one(tmp_path)
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    built["add_one"](a, b)  # the checker exists now
    after_a_good_call = _error(built["add_one"], *bad())
    loaded = rt_module.load_module(path)
    assert _error(loaded["add_one"], *bad()) == after_a_good_call  # the first call
    assert _error(loaded["add_one"], *bad()) == after_a_good_call
    loaded["add_one"](a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_checker_source_is_the_same_before_and_after_the_first_call(tmp_path):
    built, path = _add_one(tmp_path)
    loaded = rt_module.load_module(path)
    before = loaded["add_one"].checker_source
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    loaded["add_one"](a, b)
    assert loaded["add_one"].checker_source == before == built["add_one"].checker_source


# --- the key ---------------------------------------------------------------------------------
def test_source_digest_is_the_sha256_of_every_source_file_in_order():
    root = os.path.dirname(os.path.abspath(tvm.__file__))
    h = hashlib.sha256()  # the definition, written out with os.path.relpath
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    compile_cache._source_digest = None  # another engineer's edit may have changed a file
    assert compile_cache.source_digest() == h.hexdigest()


def test_the_key_text_references_large_constants_and_inlines_small_ones():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((100,), "float32"))
    big_nan = np.full(100, np.nan, "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, relax.const(big_nan)))
            y = bb.emit(relax.op.add(y, relax.const(np.array([1.0, np.nan], "float32")[:1])))
            y = bb.emit(relax.op.add(y, relax.const(np.array([np.nan], "float32"))))
            out = bb.emit_output(relax.op.add(y, relax.const(np.arange(100, dtype="float32"))))
        bb.emit_func_output(out)
    mod = bb.get()
    text, constants = script_and_constants(mod)
    assert "R.const([1.0]" in text and "nan" not in text
    assert [c.data.numpy().size for c in constants] == [100, 1, 100]
    digests = build_cache.describe_module(mod)["constants"]
    for (dtype, shape, digest), c in zip(digests, constants, strict=True):
        a = c.data.numpy()
        assert (dtype, tuple(shape)) == (str(a.dtype), a.shape)
        assert digest == hashlib.sha256(a.astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()
    assert mod.script().count("metadata[") == 3  # the same references in the full script


def test_loading_compiles_no_checker_until_a_function_is_called(tmp_path, monkeypatch):
    from minitvm.runtime import packed_func

    _, path = _add_one(tmp_path)
    made = []
    original = packed_func._build_fast
    monkeypatch.setattr(packed_func, "_build_fast", lambda *a: made.append(1) or original(*a))
    loaded = rt_module.load_module(path)
    assert made == []
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    loaded["add_one"](a, b)
    loaded["add_one"](a, b)
    assert made == [1]
    np.testing.assert_array_equal(b, a + 1)
