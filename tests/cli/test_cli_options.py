"""`python -m minitvm` in subprocesses: --version, "did you mean", --target kinds, --device,
--tuning-records (and hostile records files), ONNX output names, latency statistics and
--format, and what `tune` says while and after it works."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from cli_testing import cli

W = np.random.default_rng(3).standard_normal((16, 8)).astype("float32")


def _one_line_error(proc, *fragments: str) -> str:
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, err
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def _need_importer():
    pytest.importorskip("onnx")
    try:
        from minitvm.relax.frontend.onnx import from_onnx  # noqa: F401
    except ImportError as err:
        pytest.skip(f"the ONNX importer is not present ({err})")


def _onnx_model(path, batch=4, outputs=("prod", "total"), transpose=False) -> None:
    """x (batch, 16) -> prod = relu(x @ W), total = sum(prod) (or t = prod^T)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Relu", ["h"], ["prod"], name="relu"),
    ]
    outs = [helper.make_tensor_value_info("prod", TensorProto.FLOAT, [batch, 8])]
    if "total" in outputs:
        nodes.append(helper.make_node("ReduceSum", ["prod"], ["total"], name="sum", keepdims=0))
        outs.append(helper.make_tensor_value_info("total", TensorProto.FLOAT, []))
    if transpose:
        nodes.append(helper.make_node("Transpose", ["prod"], ["t"], name="tr", perm=[1, 0]))
        outs = [helper.make_tensor_value_info("t", TensorProto.FLOAT, [8, batch])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        outs,
        [numpy_helper.from_array(W, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)


@pytest.fixture(scope="module")
def two_outputs(tmp_path_factory):
    """(model.onnx, model.tar, folder) of the two-output model at batch 4."""
    _need_importer()
    folder = tmp_path_factory.mktemp("two")
    _onnx_model(folder / "m.onnx")
    proc = cli("compile", folder / "m.onnx", "-q", "-o", folder / "m.tar")
    assert proc.returncode == 0, proc.stderr
    return folder / "m.onnx", folder / "m.tar", folder


# ------------------------------------------------------------- 1. --version, 5. did you mean
def test_version_prints_the_package_version():
    import minitvm

    proc = cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"minitvm {minitvm.__version__}"


def test_a_mistyped_verb_gets_did_you_mean_and_that_verbs_usage():
    proc = cli("comple", "m.onnx")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: minitvm compile")
    _one_line_error(proc, "unknown command 'comple'; did you mean 'compile'?")
    proc = cli("zzzz")
    assert proc.returncode == 2
    _one_line_error(proc, "unknown command 'zzzz'; the commands are demo, train, compile")


def test_a_mistyped_option_gets_did_you_mean_and_the_verbs_usage(hand_artifact):
    proc = cli("run", hand_artifact, "--inptu", "x=a.npy")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: minitvm run")  # not the top-level usage
    _one_line_error(proc, "minitvm run: unknown option '--inptu'; did you mean --input?")
    proc = cli("bench", hand_artifact, "--repaet", "3")
    assert proc.returncode == 2 and proc.stderr.startswith("usage: minitvm bench")
    _one_line_error(proc, "did you mean --repeat?")


# ------------------------------------------------------------- 4. --target kinds
@pytest.mark.parametrize(
    "target, fragments",
    [
        ("foo", ["unknown target kind 'foo'", "minitvm compiles for llvm, cuda, opencl"]),
        ("llvmx", ["did you mean 'llvm'?"]),
        ("vulkan", ["no code generator for vulkan", "llvm, cuda, opencl"]),
    ],
)
def test_target_errors_list_the_kinds_minitvm_compiles_for(tmp_path, target, fragments):
    proc = cli("compile", tmp_path / "never_read.onnx", "--target", target)
    assert proc.returncode == 2
    _one_line_error(proc, f"--target '{target}'", *fragments)


def test_the_listed_kinds_come_from_the_target_and_pipeline_tables():
    from minitvm.cli._device import compilable_kinds
    from minitvm.relax.pipeline import GPU_KINDS
    from minitvm.target import SUPPORTED_KINDS

    assert set(compilable_kinds()) == set(SUPPORTED_KINDS) | set(GPU_KINDS)


# ------------------------------------------------------------- 3. --device
def test_device_that_does_not_match_the_artifact_names_both(hand_artifact):
    proc = cli("run", hand_artifact, "--random", "--device", "opencl")
    assert proc.returncode == 2
    _one_line_error(
        proc, "--device opencl:", "compiled for target 'llvm'", "pass --device cpu", "--target"
    )


def _has_opencl() -> bool:
    from minitvm import runtime

    return runtime.opencl(0).unavailable_reason() is None


def test_an_opencl_artifact_runs_with_device_opencl_or_says_what_is_missing(two_outputs):
    _, _, folder = two_outputs
    _onnx_model(folder / "mm.onnx", outputs=("prod",))  # GPU code: no full reduction
    tar = folder / "cl.tar"
    proc = cli("compile", folder / "mm.onnx", "-q", "--target", "opencl", "-o", tar)
    assert proc.returncode == 0, proc.stderr
    proc = cli("run", tar, "--random", "--device", "cpu")
    assert proc.returncode == 2
    _one_line_error(proc, "compiled for target 'opencl'", "pass --device opencl")
    x = np.random.default_rng(0).standard_normal((4, 16)).astype("float32")
    np.save(folder / "x.npy", x)
    proc = cli("run", tar, "--input", f"x={folder / 'x.npy'}", "--device", "opencl", "-o",
               folder / "y.npy")  # fmt: skip
    if not _has_opencl():
        assert proc.returncode == 2
        line = _one_line_error(proc, "--device opencl: OpenCL is not available")
        assert "tvm." not in line and "--target llvm" in line  # command-line advice only
        return
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(folder / "y.npy"), np.maximum(x @ W, 0), rtol=1e-5)
    assert cli("bench", tar, "--repeat", "2", "--device", "opencl").returncode == 0


def test_a_cuda_artifact_without_cuda_says_so(two_outputs):
    from minitvm import runtime

    if runtime.cuda(0).unavailable_reason() is None:
        pytest.skip("this machine has CUDA")
    _, _, folder = two_outputs
    _onnx_model(folder / "mm2.onnx", outputs=("prod",))
    tar = folder / "cu.tar"
    assert cli("compile", folder / "mm2.onnx", "-q", "--target", "cuda", "-o", tar).returncode == 0
    proc = cli("bench", tar, "--repeat", "1")  # the artifact's own device by default
    assert proc.returncode == 2
    _one_line_error(proc, "--device cuda: CUDA is not available", "--device cpu")


# ------------------------------------------------------------- 6. ONNX output names
def test_run_reports_and_saves_outputs_under_their_onnx_names(two_outputs):
    _, tar, folder = two_outputs
    x = np.random.default_rng(1).standard_normal((4, 16)).astype("float32")
    np.save(folder / "x1.npy", x)
    proc = cli("run", tar, "--input", f"x={folder / 'x1.npy'}", "-o", folder / "o.npz")
    assert proc.returncode == 0, proc.stderr
    assert "output 'prod': shape (4, 8)" in proc.stdout
    assert "output 'total': shape ()" in proc.stdout
    with np.load(folder / "o.npz") as outs:
        assert sorted(outs.files) == ["prod", "total"]
        np.testing.assert_allclose(outs["prod"], np.maximum(x @ W, 0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(outs["total"], np.maximum(x @ W, 0).sum(), rtol=1e-4)


# ------------------------------------------------------------- 8. latency statistics
def test_bench_prints_mean_median_min_max_std_and_percentiles(hand_artifact):
    proc = cli("bench", hand_artifact, "--repeat", "5")
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()[0].split()
    assert head[2:] == ["mean", "median", "min", "max", "std", "p90", "p99"]
    assert "(5 runs)" in proc.stdout


def test_bench_format_json_and_csv(hand_artifact):
    proc = cli("bench", hand_artifact, "--repeat", "4", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)["latency_ms"]["minitvm"]
    assert stats["runs"] == 4
    assert stats["min"] <= stats["p50"] == stats["median"] <= stats["p90"] <= stats["p99"]
    assert stats["p99"] <= stats["max"] and stats["std"] >= 0
    proc = cli("bench", hand_artifact, "--repeat", "3", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    (row,) = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert row["engine"] == "minitvm" and row["runs"] == "3" and float(row["p90_ms"]) > 0
    proc = cli("bench", hand_artifact, "--profile", "--format", "csv")
    assert proc.returncode == 2
    _one_line_error(proc, "--profile has no CSV form")


def test_run_repeat_reports_latency_in_each_format(hand_artifact):
    proc = cli("run", hand_artifact, "--random", "--repeat", "3", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["latency_ms"]["runs"] == 3 and doc["outputs"][0]["shape"] == [2, 4]
    proc = cli("run", hand_artifact, "--random", "--print-time")
    assert proc.returncode == 0 and "p99" in proc.stdout and "(1 runs)" in proc.stdout
    proc = cli("run", hand_artifact, "--random", "--repeat", "2", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["kind"] for r in rows] == ["output", "latency"] and rows[1]["runs"] == "2"


# ------------------------------------------------------------- 2. --tuning-records
def _records_dir(folder, onnx_path, run_secs=1e-6):
    """A meta_schedule database with the default schedule of each of the model's kernels."""
    from minitvm import meta_schedule as ms
    from minitvm.cli import _onnx
    from minitvm.tir.schedule import Schedule

    mod = _onnx.import_model(str(onnx_path), _onnx.load_model(str(onnx_path)), {})
    db = ms.JSONDatabase(work_dir=str(folder))
    for task in ms.relax_integration.extract_tasks(mod, "llvm"):
        workload = db.commit_workload(task.mod)
        trace = Schedule(task.mod).trace
        db.commit_tuning_record(ms.TuningRecord(trace, workload, [run_secs], "llvm"))
    return folder


def test_compile_applies_tuning_records_of_a_work_dir(two_outputs, tmp_path):
    onnx_path, _, _ = two_outputs
    records = _records_dir(tmp_path / "work", onnx_path)
    proc = cli("compile", onnx_path, "--tuning-records", records, "-o", tmp_path / "t.tar")
    assert proc.returncode == 0, proc.stderr
    assert "tuned schedules for 2 of the model's 2 kernels" in proc.stderr
    # one of the two files names the database too
    one = records / "database_tuning_record.json"
    proc = cli("compile", onnx_path, "-q", "--tuning-records", one, "-o", tmp_path / "u.tar")
    assert proc.returncode == 0, proc.stderr
    x = np.ones((4, 16), "float32")
    np.save(tmp_path / "x.npy", x)
    proc = cli("run", tmp_path / "t.tar", "--input", f"x={tmp_path / 'x.npy'}", "-o",
               tmp_path / "o.npz")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "o.npz") as outs:
        np.testing.assert_allclose(outs["prod"], np.maximum(x @ W, 0), rtol=1e-5)


def test_tune_trials_0_builds_from_the_records_already_there(two_outputs, tmp_path):
    onnx_path, _, _ = two_outputs
    work = _records_dir(tmp_path / "work", onnx_path)
    proc = cli("tune", onnx_path, "--trials", "0", "--work-dir", work, "-o", tmp_path / "t.tar")
    assert proc.returncode == 0, proc.stderr
    assert "measured nothing (--trials 0); reused the 2 records" in proc.stdout
    assert (tmp_path / "t.tar").stat().st_size > 0
    proc = cli("tune", onnx_path, "--trials", "0", "--work-dir", tmp_path / "empty")
    assert proc.returncode == 2
    _one_line_error(proc, "--trials 0", "empty' , and it has none".replace(" ,", ","))


def test_an_autotvm_log_is_read_and_said_to_change_nothing(two_outputs, tmp_path):
    onnx_path, _, _ = two_outputs
    line = {
        "input": ["llvm", "dense_nopack.x86", [["TENSOR", [4, 16], "float32"]], {}],
        "config": {"index": 0, "code_hash": None, "entity": [["tile_y", "sp", [-1, 1]]]},
        "result": [[1e-5], 0, 0.1, 1700000000.0],
        "version": 0.2,
        "tvm_version": "0.8.0",
    }
    log = tmp_path / "log.json"
    log.write_text(json.dumps(line) + "\n")
    proc = cli("compile", onnx_path, "--tuning-records", log, "-o", tmp_path / "t.tar")
    assert proc.returncode == 0, proc.stderr
    assert "1 AutoTVM record(s) read; none applies" in proc.stderr


HOSTILE = {
    "code in a workload": (
        "database_workload.json",
        json.dumps(["1", "__import__('os').system('touch {marker}')"]) + "\n",
        ["does not parse"],
    ),
    "deep nesting": ("database_tuning_record.json", "[" * 100000 + "\n", ["nests too deeply"]),
    "not JSON": ("database_tuning_record.json", "{oops\n", ["not valid JSON"]),
    "a record of no workload": (
        "database_tuning_record.json",
        json.dumps([7, [[], [1e-6], "llvm", None]]) + "\n",
        ["[workload index, record]"],
    ),
    "a bad trace": (
        "database_tuning_record.json",
        json.dumps([0, [[["Exec", ["__import__('os')"], [], []]], [1e-6], "llvm", None]]) + "\n",
        ["tuning record"],
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_tuning_records_are_one_error_naming_the_file(two_outputs, tmp_path, case):
    onnx_path, _, _ = two_outputs
    work = _records_dir(tmp_path / "work", onnx_path)
    marker = tmp_path / "MARKER"
    name, text, fragments = HOSTILE[case]
    (work / name).write_text(text.replace("{marker}", str(marker)))
    proc = cli("compile", onnx_path, "--tuning-records", work, "-o", tmp_path / "t.tar")
    assert proc.returncode == 1, proc.stderr
    line = _one_line_error(proc, f"--tuning-records '{work}'", *fragments)
    assert "work dir of `minitvm tune`" in line or "--work-dir" in line
    assert not marker.exists() and not (tmp_path / "t.tar").exists()


def test_malformed_autotvm_log_and_missing_records_are_named(two_outputs, tmp_path):
    onnx_path, _, _ = two_outputs
    log = tmp_path / "log.json"
    log.write_text('{"input": ["llvm", "t", []], "config": {}, "result": []}\n')
    proc = cli("compile", onnx_path, "--tuning-records", log, "-o", tmp_path / "t.tar")
    assert proc.returncode == 1
    _one_line_error(proc, f"--tuning-records '{log}'", "line 1")
    proc = cli("compile", onnx_path, "--tuning-records", tmp_path / "nope", "-o", tmp_path / "t")
    assert proc.returncode == 2
    _one_line_error(proc, "nope' does not exist", "minitvm tune")
    (tmp_path / "folder").mkdir()
    proc = cli("compile", onnx_path, "--tuning-records", tmp_path / "folder", "-o", tmp_path / "t")
    assert proc.returncode == 2
    _one_line_error(proc, "is a folder without database_workload.json")


# ------------------------------------------------------------- 7. shapes and tune's report
def test_compile_input_shapes_overrides_a_fixed_batch(two_outputs, tmp_path):
    onnx_path, _, _ = two_outputs
    proc = cli("compile", onnx_path, "-q", "--input-shapes", "x:2,16", "-o", tmp_path / "b2.tar")
    assert proc.returncode == 0, proc.stderr
    assert "inputs: x (2, 16) float32" in proc.stdout
    x = np.random.default_rng(2).standard_normal((2, 16)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    proc = cli("run", tmp_path / "b2.tar", "--input", f"x={tmp_path / 'x.npy'}", "-o",
               tmp_path / "o.npz")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "o.npz") as outs:
        np.testing.assert_allclose(outs["prod"], np.maximum(x @ W, 0), rtol=1e-5, atol=1e-5)
    proc = cli("compile", onnx_path, "--input-shapes", "x:2,15", "-o", tmp_path / "b.tar")
    assert proc.returncode == 2
    _one_line_error(proc, "only the first, the batch, may differ")


def test_tuning_a_dynamic_batch_points_to_input_shapes(tmp_path):
    _need_importer()
    _onnx_model(tmp_path / "dyn.onnx", batch="N")
    proc = cli("tune", tmp_path / "dyn.onnx", "--trials", "2", "--work-dir", tmp_path / "w")
    assert proc.returncode == 2
    line = _one_line_error(proc, "'x' (N, 16) have symbolic dims", '--input-shapes "x:1,16"')
    assert "0 distinct kernels" not in proc.stderr and "dyn.onnx" in line


def test_tune_minutes_is_honoured_and_progress_is_honest(tmp_path):
    """A 30 s budget: the command ends within 10% of it, says what it does after the trials,
    counts the kernels that got trials, and shows a data-movement kernel's time, not GFLOPS."""
    _need_importer()
    _onnx_model(tmp_path / "tr.onnx", transpose=True)
    budget = 30.0
    proc = cli("tune", tmp_path / "tr.onnx", "--minutes", budget / 60, "--trials-per-iter", "8",
               "--work-dir", tmp_path / "w", "--seed", "0")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    took = float(re.search(r" in ([0-9.]+) s; records in", proc.stdout)[1])
    assert took <= 1.1 * budget, proc.stdout
    said = proc.stdout + proc.stderr
    assert "re-measuring the 3 best schedules" in said
    # a loaded machine may spend the budget first: then the check is skipped, and it says so
    assert ("timing the tuned kernels inside the model" in said) != (
        "the tuned kernels are not timed inside the model" in said
    ), said
    assert "/1000000000" not in said  # a time budget has no trial count to show
    rows = {
        ln.split()[0]: ln for ln in proc.stdout.splitlines() if ln.startswith(("fused", "perm"))
    }
    assert "(data movement)" in rows["permute_dims"]
    assert "(data movement)" not in rows["fused_matmul_nn_relu"]
    tuned = int(re.search(r"tuned (\d) of 2 kernels", proc.stdout)[1])
    assert tuned == sum(int(row.split()[2]) > 0 for row in rows.values())
    curve = tmp_path / "w" / "tuning_curve.json"  # written once a batch ran (a busy machine
    if tuned:  # may spend a short budget before the first)
        assert json.loads(curve.read_text())[-1]["tasks_timed"].endswith("/2")
