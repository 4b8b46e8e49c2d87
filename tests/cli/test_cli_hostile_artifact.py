"""An artifact is data: a tar whose members are duplicated or are links is refused, and no path
written inside it is opened (`bench --compare ort` takes the source model from --source)."""

import io
import json
import tarfile

import pytest
from cli_testing import cli  # tests/cli is on sys.path (pytest's rootdir-relative import)


def _members(path):
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def _write_tar(path, entries):
    """entries: (name, bytes) for files, (name, None, target) for symlinks."""
    with tarfile.open(path, "w") as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry[0])
            if entry[1] is None:
                info.type, info.linkname = tarfile.SYMTYPE, entry[2]
                tar.addfile(info)
            else:
                info.size = len(entry[1])
                tar.addfile(info, io.BytesIO(entry[1]))


def _one_error_line(proc, *fragments):
    assert proc.returncode in (1, 2), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("error:"), proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr


def test_a_second_metadata_member_is_refused_not_used(hand_artifact, tmp_path):
    members = _members(hand_artifact)
    meta = json.loads(members["metadata.json"])
    evil = dict(meta, entry="something_else")
    path = tmp_path / "two_meta.tar"
    _write_tar(path, [("executable.zip", members["executable.zip"]),
                      ("metadata.json", members["metadata.json"]),
                      ("metadata.json", json.dumps(evil).encode())])  # fmt: skip
    _one_error_line(cli("show", path), "appears twice")


def test_a_symlink_member_is_refused_with_a_clear_reason(hand_artifact, tmp_path):
    members = _members(hand_artifact)
    path = tmp_path / "link.tar"
    _write_tar(path, [("executable.zip", None, "/etc/passwd"),
                      ("metadata.json", members["metadata.json"])])  # fmt: skip
    _one_error_line(cli("run", path, "--random"), "executable.zip is a link")


def test_bench_never_opens_the_source_path_written_in_the_artifact(hand_artifact, tmp_path):
    pytest.importorskip("onnxruntime", reason="--compare ort checks onnxruntime first")
    members = _members(hand_artifact)
    meta = json.loads(members["metadata.json"])
    meta["source"]["path"] = "/proc/self/pagemap"  # reading it would never end
    path = tmp_path / "pagemap.tar"
    _write_tar(path, [("executable.zip", members["executable.zip"]),
                      ("metadata.json", json.dumps(meta).encode())])  # fmt: skip
    proc = cli("bench", path, "--repeat", "1", "--compare", "ort", timeout=120)
    _one_error_line(proc, "needs --source MODEL.onnx", "/proc/self/pagemap")


def test_bench_source_must_be_the_model_the_artifact_was_compiled_from(hand_artifact, tmp_path):
    pytest.importorskip("onnxruntime", reason="--compare ort checks onnxruntime first")
    other = tmp_path / "other.onnx"
    other.write_bytes(b"not the model")
    proc = cli("bench", hand_artifact, "--repeat", "1", "--compare", "ort", "--source", other)
    _one_error_line(proc, "is not the model", "sha256 differs")
    proc = cli("bench", hand_artifact, "--repeat", "1", "--source", other)
    _one_error_line(proc, "--source is the model for --compare ort")


def test_a_closed_standard_output_is_an_error_line_not_a_traceback(hand_artifact):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "minitvm", "run", str(hand_artifact), "--random"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        preexec_fn=lambda: __import__("os").close(1),
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "standard output is closed" in proc.stderr


def test_tuning_records_that_are_a_fifo_are_refused_not_waited_on(tmp_path):
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs (POSIX)")
    from test_cli_hostile_onnx import _model_bytes  # a small valid model (needs onnx)

    model = tmp_path / "m.onnx"
    model.write_bytes(_model_bytes(tmp_path))
    fifo = tmp_path / "records.json"
    os.mkfifo(fifo)
    proc = cli("compile", model, "--tuning-records", fifo, "-o", tmp_path / "m.tar", timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "is not a regular file" in proc.stderr
