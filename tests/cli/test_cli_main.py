"""minitvm.cli in process: the verb table, --help examples, option parsing, input checks and
the artifact's integrity checks, each error with its exit code and message."""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile

import numpy as np
import pytest
from cli_testing import reference

from minitvm import cli
from minitvm.cli import artifact
from minitvm.cli._common import UsageError, model_inputs, parse_input_shapes, parse_inputs
from minitvm.error import MiniTVMError

NEW_VERBS = ["compile", "run", "bench", "show"]


@pytest.mark.parametrize("verb", ["demo", "train", *NEW_VERBS])
def test_help_of_each_verb_shows_an_example(verb, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([verb, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example" in out and f"minitvm {verb}" in out


def test_top_level_help_lists_every_verb(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    for verb in cli.VERBS:
        assert verb in out


def test_unknown_verb_is_a_usage_error(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'; the commands are" in capsys.readouterr().err


def test_a_broken_verb_module_leaves_the_others_working(monkeypatch, capsys):
    monkeypatch.setitem(cli.VERBS, "broken", ("no_such_verb_module", "a verb that fails"))
    assert cli.main(["broken", "--help"]) == 1
    err = capsys.readouterr().err
    assert "the 'broken' command is unavailable" in err and "no_such_verb_module" in err
    with pytest.raises(SystemExit) as exc:  # the full help still builds, marking it
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "a verb that fails (unavailable" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["show", "--help"])
    assert exc.value.code == 0


def test_console_script_entry_point_is_cli_main():
    import minitvm.__main__ as entry

    assert entry.main is cli.main


def test_old_import_path_of_the_training_library_still_works():
    from minitvm import train as tr
    from minitvm.cli import training

    assert tr is training and callable(tr.train)


# ---------------------------------------------------------------- option parsing
def test_input_shapes_forms():
    assert parse_input_shapes(["data:1,3,224,224"]) == {"data": (1, 3, 224, 224)}
    assert parse_input_shapes(["a:[2,3] input:0:4", "m:1"]) == {
        "a": (2, 3),
        "input:0": (4,),
        "m": (1,),
    }
    assert parse_input_shapes(None) == {}


@pytest.mark.parametrize(
    "item, message",
    [
        ("data", r"--input-shapes 'data': use NAME:D1,D2"),
        ("data:", r"--input-shapes 'data:': use NAME:D1,D2"),
        ("data:1,x,3", r"--input-shapes 'data:1,x,3': use NAME:D1,D2"),
        ("data:1,0", r"dims positive integers"),
        (":1,2", r"--input-shapes ':1,2'"),
    ],
)
def test_bad_input_shapes_syntax_says_how_to_write_it(item, message):
    with pytest.raises(UsageError, match=message):
        parse_input_shapes([item])


def test_input_shapes_given_twice_is_refused():
    with pytest.raises(UsageError, match="input 'a' is given twice"):
        parse_input_shapes(["a:1 a:2"])


def test_inputs_from_npy_and_npz(tmp_path):
    x, y = np.ones((2, 3), "float32"), np.zeros(4, "int64")
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "all.npz", y=y)
    got = parse_inputs([f"x={tmp_path / 'x.npy'}", str(tmp_path / "all.npz")], ["x", "y"])
    assert got.keys() == {"x", "y"}
    np.testing.assert_array_equal(got["x"], x)
    np.testing.assert_array_equal(got["y"], y)


def test_input_files_are_never_unpickled(tmp_path):
    path = tmp_path / "obj.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(UsageError, match=r"--input '.*obj.npy' holds Python objects \(pickled\)"):
        parse_inputs([f"x={path}"], ["x"])


@pytest.mark.parametrize(
    "item, message",
    [
        ("x", r"--input 'x': use NAME=FILE.npy \(inputs: x\) or FILE.npz"),
        ("=a.npy", r"--input '=a.npy': use NAME=FILE.npy"),
        ("x=missing.npy", r"--input file 'missing.npy' does not exist"),
    ],
)
def test_bad_input_items(item, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=message):
        parse_inputs([item], ["x"])


def test_an_input_file_that_is_not_numpy_is_named(tmp_path):
    path = tmp_path / "junk.npy"
    path.write_bytes(b"not an array at all")
    with pytest.raises(
        UsageError,
        match=r"--input '.*junk.npy' is not a .npy/.npz file; write arrays with numpy.save",
    ):
        parse_inputs([f"x={path}"], ["x"])


INPUTS = [
    {"name": "x", "source_name": "x.in", "shape": ["n", 8], "dtype": "float32"},
    {"name": "ids", "source_name": "ids", "shape": ["n"], "dtype": "int64"},
]


def test_model_inputs_by_either_name_in_order():
    x, ids = np.ones((3, 8), "float32"), np.arange(3)
    args = model_inputs(INPUTS, {"ids": ids, "x.in": x}, random=False)
    assert [a.shape for a in args] == [(3, 8), (3,)]


@pytest.mark.parametrize(
    "given, message",
    [
        ({"y": np.ones(1)}, r"--input: the model has no input 'y'; its inputs are 'x', 'ids'"),
        ({"ids": np.arange(3)}, r"input 'x' \(n, 8\) float32 is not given; pass --input x="),
        (
            {"x": np.ones((3, 7), "float32"), "ids": np.arange(3)},
            r"--input x: input 'x' must have shape \(n, 8\), got \(3, 7\)",
        ),
        (
            {"x": np.ones((3, 8)), "ids": np.arange(3)},
            r"input 'x' must be float32, got float64; save it with numpy as a.astype",
        ),
        (
            {"x": np.ones((3, 8), "float32"), "ids": np.arange(4)},
            r"--input ids: dim 'n' is 4 here but 3 in an earlier input",
        ),
    ],
)
def test_wrong_inputs_are_named(given, message):
    with pytest.raises(UsageError, match=message):
        model_inputs(INPUTS, given, random=False)


def test_random_inputs_need_fixed_dims():
    with pytest.raises(UsageError, match=r"input 'x' has the symbolic shape \(n, 8\); --random"):
        model_inputs(INPUTS, {}, random=True)
    fixed = [{"name": "t", "source_name": "t", "shape": [2, 5], "dtype": "int32"}]
    (a,) = model_inputs(fixed, {}, random=True, seed=3)
    assert a.shape == (2, 5) and a.dtype == np.int32


# ---------------------------------------------------------------- the artifact
def test_artifact_round_trip_runs_the_same(hand_artifact):
    from minitvm import relax, runtime

    art = artifact.load(hand_artifact)
    assert art.inputs[0]["source_name"] == "x.in" and art.meta["format"] == artifact.FORMAT
    x = np.random.default_rng(0).standard_normal((2, 8)).astype("float32")
    out = relax.VirtualMachine(art.exe, runtime.cpu())["main"](x).numpy()
    np.testing.assert_allclose(out, reference(x), rtol=1e-5, atol=1e-5)
    with tarfile.open(hand_artifact) as tar:
        assert sorted(tar.getnames()) == ["executable.zip", "metadata.json"]


def _rewrite(src: str, dst, edit) -> None:
    """Copy the artifact tar, passing each member's (name, bytes) through `edit`."""
    with tarfile.open(src) as tin, tarfile.open(dst, "w") as tout:
        for m in tin.getmembers():
            for name, data in edit(m.name, tin.extractfile(m).read()):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tout.addfile(info, io.BytesIO(data))


def _edit_meta(**changes):
    def edit(name, data):
        if name == "metadata.json":
            data = json.dumps({**json.loads(data), **changes}).encode()
        yield name, data

    return edit


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda n, d: [(n, d), ("extra.txt", b"x")], r"members \['executable.zip', 'extra.txt'"),
        (lambda n, d: [] if n == "executable.zip" else [(n, d)], r"members \['metadata.json'\]"),
        (_edit_meta(format="other"), r"metadata.json is not of format 'minitvm-artifact'"),
        (_edit_meta(version=99), r"version 99, this minitvm reads 1"),
        (_edit_meta(inputs="x"), r"'inputs' is missing or not a list"),
        (_edit_meta(inputs=[{"name": "x"}]), r"malformed input"),
        (
            lambda n, d: [(n, d + b"\0" if n == "executable.zip" else d)],
            r"executable.zip does not match the sha256 in metadata.json",
        ),
        (
            lambda n, d: [(n, b"{not json" if n == "metadata.json" else d)],
            r"is not a minitvm artifact or is damaged",
        ),
    ],
)
def test_a_damaged_artifact_is_refused_with_its_name(hand_artifact, tmp_path, edit, message):
    bad = tmp_path / "bad.tar"
    _rewrite(hand_artifact, bad, edit)
    with pytest.raises(MiniTVMError, match=message) as exc:
        artifact.load(str(bad))
    assert "bad.tar" in str(exc.value) and "compile it again" in str(exc.value)


def test_a_file_that_is_not_a_tar_is_refused(tmp_path):
    path = tmp_path / "model.tar"
    path.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(MiniTVMError, match=r"'.*model.tar' is not a minitvm artifact"):
        artifact.load(str(path))


def test_a_missing_artifact_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"artifact '.*nope.tar' does not exist; check the path"):
        artifact.load(str(tmp_path / "nope.tar"))


def test_torch_export_files_are_refused_because_loading_them_unpickles(tmp_path, capsys):
    path = tmp_path / "m.pt2"
    path.write_bytes(b"PK")
    assert cli.main(["compile", str(path)]) == 2
    err = capsys.readouterr().err
    assert "torch.export (.pt2) files are read with pickle" in err and "torch.onnx.export" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target", "llvmx"], r"--target 'llvmx': unknown target kind 'llvmx'"),
        (["-o", "{tmp}/no/such/m.tar"], r"-o '.*m.tar': the folder '.*/no/such' does not exist"),
        (["-o", "{tmp}"], r"-o '.*' is a folder; give a file name"),
    ],
)
def test_compile_checks_target_and_output_before_reading_the_model(argv, message, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert cli.main(["compile", str(tmp_path / "never_read.onnx"), *argv]) == 2
    err = capsys.readouterr().err
    assert re.search("^error: " + message, err), err


def test_run_checks_the_output_name_before_running(hand_artifact, tmp_path, capsys):
    assert cli.main(["run", hand_artifact, "--random", "-o", str(tmp_path / "o.txt")]) == 2
    assert "use a .npy (one output) or .npz file name" in capsys.readouterr().err
    assert cli.main(["run", hand_artifact, "--random", "-o", str(tmp_path / "x/o.npy")]) == 2
    assert "does not exist; create it first" in capsys.readouterr().err


def test_compile_without_onnx_installed_says_what_to_install(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x08\x08")
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx -> ImportError
    assert cli.main(["compile", str(path), "-o", str(tmp_path / "m.tar")]) == 2
    err = capsys.readouterr().err
    assert "m.onnx' needs the onnx package; `pip install minitvm[onnx]`" in err


def test_compare_ort_without_onnxruntime_says_what_to_install(hand_artifact, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert cli.main(["bench", hand_artifact, "--repeat", "1", "--compare", "ort"]) == 2
    err = capsys.readouterr().err
    assert (
        "--compare ort needs onnxruntime, which is not installed; `pip install onnxruntime`" in err
    )


def test_bench_refuses_a_non_positive_repeat(hand_artifact, capsys):
    assert cli.main(["bench", hand_artifact, "--repeat", "0"]) == 2
    assert "--repeat must be >= 1" in capsys.readouterr().err
