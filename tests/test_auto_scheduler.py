"""minitvm.auto_scheduler: TVM's auto-scheduler API over meta_schedule, checked against numpy."""

import json
import os
import pathlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import auto_scheduler, te
from minitvm.error import TuningError


@auto_scheduler.register_workload
def dense_bias_relu(n, k_, m, dtype):
    A = te.placeholder((n, k_), name="A", dtype=dtype)
    B = te.placeholder((k_, m), name="B", dtype=dtype)
    bias = te.placeholder((m,), name="bias", dtype=dtype)
    k = te.reduce_axis((0, k_), name="k")
    mm = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="mm")
    zero = tvm.tir.const(0, dtype)
    out = te.compute((n, m), lambda i, j: te.max(mm[i, j] + bias[j], zero), name="out")
    return [A, B, bias, out]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """One tiny tuning run shared by the tests: 4 trials of a 16x24x32 dense+bias+relu."""
    log = str(tmp_path_factory.mktemp("as") / "dense.json")
    task = auto_scheduler.SearchTask(
        func=dense_bias_relu, args=(16, 24, 32, "float32"), target="llvm"
    )
    options = auto_scheduler.TuningOptions(
        num_measure_trials=4,
        measure_callbacks=[auto_scheduler.RecordToFile(log)],
        runner=auto_scheduler.LocalRunner(number=1, repeat=1, min_repeat_ms=0),
        verbose=0,
    )
    task.tune(options)
    return task, log


def _run(func, shapes):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype("float32") for s in shapes)
    out = tvm.nd.empty((shapes[0][0], shapes[1][1]))
    func(tvm.nd.array(a), tvm.nd.array(b), tvm.nd.array(c), out)
    return out.numpy(), np.maximum(a @ b + c, 0)


def test_tuned_matmul_bias_relu_matches_numpy(tuned):
    task, log = tuned
    assert "mm" in str(task.compute_dag) and "out" in str(task.compute_dag)
    sch, args = task.apply_best(log)
    assert "is_scheduled" in str(tvm.lower(sch, args, simple_mode=True))
    got, want = _run(tvm.build(sch, args, "llvm"), [(16, 24), (24, 32), (32,)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert "sch.get_block" in task.print_best(log)


def test_records_load_and_workload_key_rebuilds_task(tuned):
    task, log = tuned
    records = auto_scheduler.load_records(log)
    assert 1 <= len(records) <= 8 and all(r.run_secs is not None for _, r in records[:1])
    assert json.loads(task.workload_key) == ["dense_bias_relu", 16, 24, 32, "float32"]
    again = auto_scheduler.SearchTask(workload_key=task.workload_key, target="llvm")
    sch, args = again.apply_best(log)  # the same workload finds the same records
    got, want = _run(tvm.build(sch, args, "llvm"), [(16, 24), (24, 32), (32,)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_tampered_log_is_refused(tuned, tmp_path):
    task, log = tuned
    bad = str(tmp_path / "bad.json")
    lines = pathlib.Path(log).read_text().splitlines()
    record = json.loads(lines[0])
    trace_text = json.dumps(record)
    # an instruction name outside the trace allow-list, as an attacker would write it
    tampered = trace_text.replace('"GetBlock"', '"__import__"', 1)
    assert tampered != trace_text
    with open(bad, "w") as f:
        f.write(tampered + "\n")
    workloads = pathlib.Path(log + ".workloads.json").read_text()
    pathlib.Path(bad + ".workloads.json").write_text(workloads)
    with pytest.raises(TuningError, match="bad.json:1"):
        task.apply_best(bad)


def test_missing_log_and_unregistered_key_say_what_to_do(tmp_path):
    task = auto_scheduler.SearchTask(func=dense_bias_relu, args=(4, 4, 4, "float32"), target="llvm")
    with pytest.raises(TuningError, match="RecordToFile"):
        task.print_best(str(tmp_path / "none.json"))  # a missing log has no best record
    with pytest.raises(TuningError, match="not registered"):
        auto_scheduler.SearchTask(workload_key='["no_such_workload", 1]', target="llvm")
    with pytest.raises(TuningError, match="JSON"):
        auto_scheduler.SearchTask(workload_key="__import__('os')", target="llvm")
    with pytest.raises(TuningError, match="RecordToFile"):
        auto_scheduler.TuningOptions(num_measure_trials=1, measure_callbacks=[print])
    assert os.listdir(tmp_path) == []  # reading never creates files
