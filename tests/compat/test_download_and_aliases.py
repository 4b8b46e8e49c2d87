"""tvm.contrib.download (test data fetched once into a cache, nothing executed), tvm.ir.instrument,
IRModule.astext."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.contrib import download
from minitvm.error import MiniTVMError


def test_download_testdata_fetches_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TVM_TEST_DATA", str(tmp_path / "cache"))
    src = tmp_path / "src.bin"
    src.write_bytes(b"\x00\x01data")
    path = download.download_testdata(src.as_uri(), "f.bin", module=["a", "b"])
    assert path == str(tmp_path / "cache" / "a" / "b" / "f.bin")
    assert open(path, "rb").read() == b"\x00\x01data"
    src.write_bytes(b"changed")  # a second call keeps the cached file ...
    assert (
        open(download.download_testdata(src.as_uri(), "f.bin", module=["a", "b"]), "rb").read()
        == b"\x00\x01data"
    )
    # ... unless asked to overwrite
    download.download_testdata(src.as_uri(), "f.bin", module=["a", "b"], overwrite=True)
    assert open(path, "rb").read() == b"changed"


def test_failed_download_is_a_clear_error_and_leaves_no_partial_file(tmp_path):
    out = tmp_path / "out.bin"
    with pytest.raises(MiniTVMError, match="could not fetch .* after 2 tries"):
        download.download((tmp_path / "missing").as_uri(), str(out), retries=2)
    assert list(tmp_path.iterdir()) == []


def test_ir_instrument_is_tvm_instrument():
    from minitvm.ir.instrument import PassInstrument, pass_instrument  # a module, as in TVM

    assert pass_instrument is tvm.instrument.pass_instrument
    assert PassInstrument is tvm.instrument.PassInstrument


def test_irmodule_astext_prints_relay_with_and_without_metadata():
    from minitvm import relay

    x = relay.var("x", shape=(2, 2))
    f = relay.Function([x], relay.add(x, relay.const(np.ones((2, 2), "float32"))))
    mod = tvm.IRModule.from_expr(f)
    short, full = mod.astext(show_meta_data=False), mod.astext()
    assert "add(%x, meta[relay.Constant][0])" in short and "#[metadata]" not in short
    assert full.startswith(short) and "#[metadata]" in full
