"""`python -m minitvm compile / run / bench / show` end to end in subprocesses: outputs against
numpy and ONNX Runtime, and every bad input a one-line error with its exit code."""

from __future__ import annotations

import numpy as np
import pytest
from cli_testing import cli, reference


def _one_line_error(proc, *fragments: str) -> str:
    """The process failed with one `error:` message (the importer's list of unsupported ops
    may continue on further lines) holding every fragment, and no traceback."""
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert [ln.startswith("error:") for ln in err.splitlines()].count(True) == 1, err
    message = err[err.index("error:") :]
    for f in fragments:
        assert f in message, message
    return message


# ------------------------------------------------------------- an artifact built by hand
def test_run_writes_outputs_that_match_numpy(hand_artifact, tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npy"
    proc = cli("run", hand_artifact, "--input", f"x={tmp_path / 'x.npy'}", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert "output 0: shape (2, 4) float32" in proc.stdout
    np.testing.assert_allclose(np.load(out), reference(x), rtol=1e-5, atol=1e-5)


def test_run_takes_the_source_models_input_name_and_writes_npz(hand_artifact, tmp_path):
    x = np.ones((2, 8), "float32")
    np.savez(tmp_path / "in.npz", **{"x.in": x})
    proc = cli("run", hand_artifact, "--input", tmp_path / "in.npz", "-o", tmp_path / "o.npz")
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "o.npz") as outs:
        np.testing.assert_allclose(outs["output_0"], reference(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "make, fragments",
    [
        (lambda d: [f"x={_save(d, (3, 8))}"], ["input 'x' must have shape (2, 8), got (3, 8)"]),
        (lambda d: [f"y={_save(d, (2, 8))}"], ["the model has no input 'y'; its inputs are 'x'"]),
        (lambda d: [f"x={d / 'none.npy'}"], ["--input file", "none.npy' does not exist"]),
        (lambda d: [], ["input 'x' (2, 8) float32 is not given", "--random"]),
    ],
)
def test_run_with_wrong_inputs_exits_2_naming_the_input(hand_artifact, tmp_path, make, fragments):
    args = [a for item in make(tmp_path) for a in ("--input", item)]
    proc = cli("run", hand_artifact, *args)
    assert proc.returncode == 2
    _one_line_error(proc, *fragments)


def _save(folder, shape) -> str:
    path = folder / f"a{len(shape)}_{shape[0]}.npy"
    np.save(path, np.zeros(shape, "float32"))
    return str(path)


def test_run_of_a_missing_or_damaged_artifact(tmp_path):
    proc = cli("run", tmp_path / "nope.tar", "--random")
    assert proc.returncode == 2
    _one_line_error(proc, "artifact '", "nope.tar' does not exist")
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar file" * 50)
    proc = cli("run", bad, "--random")
    assert proc.returncode == 1
    _one_line_error(proc, "bad.tar' is not a minitvm artifact", "compile it again")


def test_bench_prints_latency_and_the_per_op_profile(hand_artifact):
    proc = cli("bench", hand_artifact, "--repeat", "3", "--profile")
    assert proc.returncode == 0, proc.stderr
    assert "minitvm" in proc.stdout and "median" in proc.stdout and "(3 runs)" in proc.stdout
    assert "profile of 'main'" in proc.stdout and "fused_matmul_add" in proc.stdout


def test_bench_compare_ort_needs_the_source_model_named_by_the_user(hand_artifact):
    proc = cli("bench", hand_artifact, "--repeat", "1", "--compare", "ort")
    assert proc.returncode == 2
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        _one_line_error(proc, "--compare ort needs onnxruntime")
    else:
        _one_line_error(proc, "needs --source MODEL.onnx", "'/nonexistent/hand.onnx'")


def test_show_summarises_an_artifact(hand_artifact):
    proc = cli("show", hand_artifact)
    assert proc.returncode == 0, proc.stderr
    assert "input 'x' (in the source model: 'x.in'): (2, 8) float32" in proc.stdout
    assert "relax Executable: 1 function(s)" in proc.stdout


def test_bad_input_shapes_syntax_exits_2(tmp_path):
    proc = cli("compile", tmp_path / "m.onnx", "--input-shapes", "data=1,3")
    assert proc.returncode == 2
    _one_line_error(proc, "--input-shapes 'data=1,3': use NAME:D1,D2")


def test_a_missing_model_file_exits_2(tmp_path):
    pytest.importorskip("onnx")
    proc = cli("compile", tmp_path / "missing.onnx")
    assert proc.returncode == 2
    _one_line_error(proc, "model '", "missing.onnx' does not exist; check the path")


def test_a_corrupt_onnx_file_exits_1(tmp_path):
    pytest.importorskip("onnx")
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(b"\x08\x07garbage\xff\xff" * 10)
    proc = cli("compile", path)
    assert proc.returncode == 1
    _one_line_error(proc, "corrupt.onnx' is not a valid ONNX model", "re-export it")


# ------------------------------------------------------------- ONNX models through the importer
def _need_importer():
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    try:
        from minitvm.relax.frontend.onnx import from_onnx  # noqa: F401
    except ImportError as err:
        pytest.skip(f"the ONNX importer is not present ({err})")


def _small_cnn(path) -> None:
    """Conv-Relu-GlobalAveragePool-Flatten-Gemm-Softmax, batch 'N', input named 'input.1'."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = {
        "conv.w": rng.standard_normal((4, 3, 3, 3)).astype("float32") * 0.3,
        "conv.b": rng.standard_normal(4).astype("float32"),
        "fc.w": rng.standard_normal((5, 4)).astype("float32"),
        "fc.b": rng.standard_normal(5).astype("float32"),
    }
    nodes = [
        helper.make_node("Conv", ["input.1", "conv.w", "conv.b"], ["c"], name="conv", pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["g"], name="fc", transB=1),
        helper.make_node("Softmax", ["g"], ["prob"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 5])],
        [numpy_helper.from_array(w, name) for name, w in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)


@pytest.fixture(scope="module")
def compiled_cnn(tmp_path_factory):
    """(model.onnx, model.tar, compile process) for the small CNN at batch 2."""
    _need_importer()
    folder = tmp_path_factory.mktemp("cnn")
    onnx_path, tar = folder / "cnn.onnx", folder / "cnn.tar"
    _small_cnn(onnx_path)
    proc = cli("compile", onnx_path, "--input-shapes", "input.1:2,3,8,8", "-o", tar)
    assert proc.returncode == 0, proc.stderr
    return onnx_path, tar, proc


def test_compile_shows_each_pass_and_records_the_source(compiled_cnn):
    onnx_path, tar, proc = compiled_cnn
    assert "LegalizeOps" in proc.stderr and "FuseOps" in proc.stderr and " ms" in proc.stderr
    assert f"wrote '{tar}'" in proc.stdout
    from minitvm.cli import artifact
    from minitvm.cli._common import sha256_file

    meta = artifact.load(str(tar)).meta
    assert meta["source"]["sha256"] == sha256_file(str(onnx_path))
    (inp,) = meta["inputs"]
    assert inp["source_name"] == "input.1" and inp["shape"] == [2, 3, 8, 8]


def test_compile_run_matches_onnxruntime(compiled_cnn, tmp_path):
    import onnxruntime as ort

    onnx_path, tar, _ = compiled_cnn
    x = np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    proc = cli("run", tar, "--input", f"input.1={tmp_path / 'x.npy'}", "-o", out)
    assert proc.returncode == 0, proc.stderr
    (expected,) = ort.InferenceSession(str(onnx_path)).run(None, {"input.1": x})
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-4, atol=1e-5)


def test_bench_compares_with_onnxruntime(compiled_cnn):
    onnx_path, tar, _ = compiled_cnn
    proc = cli("bench", tar, "--repeat", "3", "--compare", "ort", "--source", onnx_path)
    assert proc.returncode == 0, proc.stderr
    assert "onnxruntime" in proc.stdout and "onnxruntime / minitvm median" in proc.stdout
    diff = float(proc.stdout.rsplit("largest output difference", 1)[1].split()[0])
    assert diff < 1e-4


def test_show_prints_the_imported_relax_program(compiled_cnn):
    onnx_path, _, _ = compiled_cnn
    proc = cli("show", onnx_path, "--input-shapes", "input.1:1,3,8,8")
    assert proc.returncode == 0, proc.stderr
    assert "def main(" in proc.stdout and "R.nn.conv2d" in proc.stdout
    # weights are parameters (names and shapes), not pages of base64 metadata
    assert "# 4 weight array(s)" in proc.stdout and 'metadata = """' not in proc.stdout


@pytest.mark.parametrize(
    "shapes, fragments",
    [
        (
            ["data:1,3,8,8"],
            ["cnn.onnx' has no input 'data'; its inputs are 'input.1' (N, 3, 8, 8)"],
        ),
        (["input.1:2,3,8"], ["input 'input.1' of", "has shape (N, 3, 8, 8), given (2, 3, 8)"]),
        (["input.1:2,4,8,8"], ["has shape (N, 3, 8, 8), given (2, 4, 8, 8)"]),
    ],
)
def test_compile_with_a_wrong_input_shape_exits_2(compiled_cnn, tmp_path, shapes, fragments):
    onnx_path, _, _ = compiled_cnn
    local = tmp_path / "cnn.onnx"
    local.write_bytes(onnx_path.read_bytes())
    proc = cli("compile", local, "--input-shapes", *shapes, "-o", tmp_path / "m.tar")
    assert proc.returncode == 2
    _one_line_error(proc, *fragments)


def test_an_unsupported_op_exits_1_naming_every_one(tmp_path):
    _need_importer()
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("FancyOp", ["x"], ["h"], name="fancy1", domain="com.example"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("OtherOp", ["r"], ["y"], name="other2", domain="com.example"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets, ir_version=8), tmp_path / "u.onnx")
    proc = cli("compile", tmp_path / "u.onnx", "-o", tmp_path / "u.tar")
    assert proc.returncode == 1
    line = _one_line_error(proc, "importing '", "u.onnx'", "FancyOp", "OtherOp")
    assert "fancy1" in line and "other2" in line


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_torch_onnx_export_compiles_and_matches_torch_and_onnxruntime(tmp_path):
    _need_importer()
    torch = pytest.importorskip("torch")
    import onnxruntime as ort

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.fc = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Linear(4, 5)

        def forward(self, x):
            return torch.softmax(self.fc(torch.relu(self.conv(x)).mean((2, 3))), 1)

    torch.manual_seed(0)
    net, x = Net().eval(), torch.randn(2, 3, 8, 8)
    onnx_path = tmp_path / "net.onnx"
    torch.onnx.export(net, (x,), onnx_path, input_names=["data"], dynamo=False)
    proc = cli("compile", onnx_path, "--input-shapes", "data:2,3,8,8", "-o", tmp_path / "n.tar")
    assert proc.returncode == 0, proc.stderr
    np.save(tmp_path / "x.npy", x.numpy())
    out = tmp_path / "y.npy"
    proc = cli("run", tmp_path / "n.tar", "--input", f"data={tmp_path / 'x.npy'}", "-o", out)
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        expected = net(x).numpy()
    (from_ort,) = ort.InferenceSession(str(onnx_path)).run(None, {"data": x.numpy()})
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.load(out), from_ort, rtol=1e-4, atol=1e-5)


def test_python_dash_m_minitvm_lists_the_verbs():
    proc = cli("--help")
    assert proc.returncode == 0
    assert all(verb in proc.stdout for verb in ("compile", "run", "bench", "show", "train"))
    proc = cli()
    assert proc.returncode == 2 and "required: VERB" in proc.stderr


def test_a_model_with_two_outputs_writes_an_npz(tmp_path):
    _need_importer()
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"),
    ]
    graph = helper.make_graph(
        nodes,
        "two",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("r", "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, tmp_path / "two.onnx")
    assert cli("compile", tmp_path / "two.onnx", "-q", "-o", tmp_path / "two.tar").returncode == 0
    x = np.linspace(-2, 2, 6, dtype="float32").reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    given = ["--input", f"x={tmp_path / 'x.npy'}"]
    proc = cli("run", tmp_path / "two.tar", *given, "-o", tmp_path / "o.npz")
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "o.npz") as outs:
        # each output under its name in the ONNX graph
        np.testing.assert_allclose(outs["r"], np.maximum(x, 0))
        np.testing.assert_allclose(outs["s"], 1 / (1 + np.exp(-x)), rtol=1e-6)
    proc = cli("run", tmp_path / "two.tar", *given, "-o", tmp_path / "o.npy")
    assert proc.returncode == 2
    _one_line_error(proc, "o.npy': the model has 2 outputs; use an .npz file")


def test_a_symbolic_batch_is_kept_and_runs_at_any_size(tmp_path):
    _need_importer()
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(3).standard_normal((8, 4)).astype("float32")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Tanh", ["h"], ["y"], name="tanh"),
    ]
    graph = helper.make_graph(
        nodes,
        "sym",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, tmp_path / "sym.onnx")
    proc = cli("compile", tmp_path / "sym.onnx", "-q", "-o", tmp_path / "sym.tar")
    assert proc.returncode == 0, proc.stderr
    assert "inputs: x (batch, 8) float32" in proc.stdout
    assert "FuseOps" not in proc.stderr  # -q
    proc = cli("compile", tmp_path / "sym.onnx", "--opt-level", "0", "-o", tmp_path / "s0.tar")
    assert proc.returncode == 0, proc.stderr
    assert "LegalizeOps" in proc.stderr and "FuseOps" not in proc.stderr  # opt_level 1 passes
    session = ort.InferenceSession(str(tmp_path / "sym.onnx"))
    for batch in (3, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 8)).astype("float32")
        np.save(tmp_path / "x.npy", x)
        out = tmp_path / f"y{batch}.npy"
        proc = cli("run", tmp_path / "sym.tar", "--input", f"x={tmp_path / 'x.npy'}", "-o", out)
        assert proc.returncode == 0, proc.stderr
        (expected,) = session.run(None, {"x": x})
        np.testing.assert_allclose(np.load(out), expected, rtol=1e-5, atol=1e-6)
