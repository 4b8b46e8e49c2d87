"""minitvm.driver.tvmc: TVMC's Python API and command line on a small ONNX model, checked
against ONNX Runtime."""

import json
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from minitvm.driver import tvmc


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 6)).astype("float32"), "w")
    b = numpy_helper.from_array(rng.standard_normal((6,)).astype("float32"), "b")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["mm"]),
            helper.make_node("Add", ["mm", "b"], ["pre"]),
            helper.make_node("Relu", ["pre"], ["y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = str(tmp_path_factory.mktemp("tvmc") / "tiny.onnx")
    onnx.save(model, path)
    return path


def _reference(path, x):
    return ort.InferenceSession(path).run(None, {"x": x})[0]


def test_load_compile_run_matches_onnxruntime(model_path, tmp_path):
    model = tvmc.load(model_path, shape_dict={"x": [4, 8]})
    assert "def main" in model.summary(file=open(tmp_path / "summary.txt", "w"))  # noqa: SIM115
    package = tvmc.compile(model, target="llvm", package_path=str(tmp_path / "pkg.tar"))
    x = np.random.default_rng(1).standard_normal((4, 8)).astype("float32")
    result = tvmc.run(package, device="cpu", inputs={"x": x}, repeat=2)
    np.testing.assert_allclose(result.get_output("y"), _reference(model_path, x), rtol=1e-5)
    assert "mean (ms)" in result.format_times() and len(result.times) == 2
    again = tvmc.run(tvmc.TVMCPackage(package_path=str(tmp_path / "pkg.tar")), inputs={"x": x})
    np.testing.assert_allclose(again.outputs["y"], result.outputs["y"])
    with pytest.raises(tvmc.TVMCException, match="no output named 'z'"):
        result.get_output("z")


@pytest.mark.slow
def test_tune_then_compile_with_records(model_path, tmp_path):
    model = tvmc.load(model_path)
    records = tvmc.tune(model, target="llvm", tuning_records=str(tmp_path / "rec"), trials=4)
    package = tvmc.compile(model, target="llvm", tuning_records=records)
    x = np.random.default_rng(2).standard_normal((4, 8)).astype("float32")
    out = tvmc.run(package, inputs={"x": x}).outputs["y"]
    np.testing.assert_allclose(out, _reference(model_path, x), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_tune_starts_from_prior_records_in_a_new_folder(model_path, tmp_path):
    """TVM's tutorial: tvmc.tune(model, prior_records=log) without tuning_records starts a new
    records folder from the earlier one's records (the earlier folder is left as it was)."""
    model = tvmc.load(model_path)
    first = tvmc.tune(model, target="llvm", tuning_records=str(tmp_path / "first"), trials=2)
    before = {p.name: p.read_bytes() for p in (tmp_path / "first").glob("database_*.json")}
    second = tvmc.tune(model, target="llvm", prior_records=first, trials=2)
    assert second != first
    assert {p.name: p.read_bytes() for p in (tmp_path / "first").glob("database_*.json")} == before
    def traces(path):  # each record's trace (its measured time may be re-measured)
        lines = open(f"{path}/database_tuning_record.json").read().splitlines()
        return [json.dumps(json.loads(line)[1][0]) for line in lines]

    old, new = traces(first), traces(second)
    assert len(new) > len(old) and set(old) <= set(new)  # started from them, then added
    x = np.random.default_rng(3).standard_normal((4, 8)).astype("float32")
    out = tvmc.run(tvmc.compile(model, target="llvm", tuning_records=second), inputs={"x": x})
    np.testing.assert_allclose(out.outputs["y"], _reference(model_path, x), rtol=1e-5, atol=1e-6)
    with pytest.raises(tvmc.TVMCException, match="not a tuning records folder"):
        tvmc.tune(model, prior_records=str(tmp_path / "nothing"), trials=1)
    with pytest.raises(tvmc.TVMCException, match="already holds records"):
        tvmc.tune(model, tuning_records=second, prior_records=first, trials=1)


def test_non_onnx_model_is_refused(tmp_path):
    with pytest.raises(tvmc.TVMCException, match="only ONNX"):
        tvmc.load(str(tmp_path / "model.pb"))


def test_command_line_compile_and_run(model_path, tmp_path):
    x = np.random.default_rng(3).standard_normal((4, 8)).astype("float32")
    np.savez(tmp_path / "in.npz", x=x)
    tar, out = str(tmp_path / "m.tar"), str(tmp_path / "out.npz")
    cmd = [sys.executable, "-m", "minitvm.driver.tvmc"]
    subprocess.run(
        [*cmd, "compile", "--target", "llvm", "--input-shapes", "x:[4,8]", "--output", tar,
         model_path], check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    subprocess.run(
        [*cmd, "run", "--inputs", str(tmp_path / "in.npz"), "--output", out, "--print-time", tar],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    got = np.load(out)
    np.testing.assert_allclose(got[got.files[0]], _reference(model_path, x), rtol=1e-5)
