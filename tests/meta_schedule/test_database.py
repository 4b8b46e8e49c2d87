"""Databases: JSON round trip, queries, and tampered files refused as data (never run)."""

import json

import pytest
from _mscore_workloads import matmul_mod, tile_j

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm.error import TuningError


def _record(mod, seed, secs):
    sch = tvm.tir.Schedule(mod, seed=seed)
    tile_j(sch)
    return sch, ms.TuningRecord(
        sch.trace, ms.Workload(mod), secs, "llvm", ms.ArgInfo.from_entry_func(mod)
    )


def test_json_database_round_trip(tmp_path):
    mod = matmul_mod()
    db = ms.JSONDatabase(work_dir=str(tmp_path))
    workload = db.commit_workload(mod)
    assert db.commit_workload(matmul_mod()) is workload  # structurally equal: one workload
    schedules = []
    for seed, secs in [(0, [3e-3, 2e-3]), (2, [1e-3]), (3, None)]:  # three distinct tiles
        sch, rec = _record(mod, seed, secs)
        rec.workload = workload
        db.commit_tuning_record(rec)
        schedules.append(sch)
    again = ms.JSONDatabase(work_dir=str(tmp_path))
    assert len(again) == 3 and again.has_workload(mod)
    recs = again.get_all_tuning_records()
    assert [r.run_secs for r in recs] == [[3e-3, 2e-3], [1e-3], None]
    assert recs[0].args_info == ms.ArgInfo.from_entry_func(mod)
    assert str(recs[0].target) == str(db.get_all_tuning_records()[0].target)
    for sch, rec in zip(schedules, recs):
        replayed = rec.as_measure_candidate().sch
        tvm.ir.assert_structural_equal(replayed.mod, sch.mod)
    best = again.query_tuning_record(mod, "llvm")
    assert best.run_secs == [1e-3]
    tvm.ir.assert_structural_equal(again.query_ir_module(mod, "llvm"), schedules[1].mod)
    assert again.query_schedule(matmul_mod(16, 16, 16), "llvm") is None
    top = again.get_top_k(again.commit_workload(mod), 5)
    assert [r.run_secs for r in top] == [[1e-3], [3e-3, 2e-3]]  # failed runs are not ranked


def test_a_schedule_measured_again_replaces_its_record(tmp_path):
    """The latest measurement of a schedule is the one ranked (the tuner re-measures its
    best few at the end), in memory and after the JSON file is read back."""
    mod = matmul_mod()
    db = ms.JSONDatabase(work_dir=str(tmp_path))
    _, lucky = _record(mod, 0, [1e-3])  # a noise-lucky first time
    _, other = _record(mod, 2, [2e-3])
    _, again = _record(mod, 0, [3e-3])  # the same schedule (seed 0) timed again
    for rec in (lucky, other, again):
        db.commit_tuning_record(rec)
    for d in (db, ms.JSONDatabase(work_dir=str(tmp_path))):
        assert sorted(r.run_secs[0] for r in d.get_all_tuning_records()) == [2e-3, 3e-3]
        assert d.query_tuning_record(mod, "llvm").run_secs == [2e-3]


def test_memory_database_and_paths(tmp_path):
    mod = matmul_mod()
    mem = ms.MemoryDatabase()
    _, rec = _record(mod, 0, [1e-3])
    mem.commit_tuning_record(rec)
    assert len(mem) == 1 and mem.query_schedule(mod, "llvm") is not None
    db = ms.JSONDatabase(
        path_workload=str(tmp_path / "w.json"), path_tuning_record=str(tmp_path / "r.json")
    )
    db.commit_tuning_record(rec)
    assert (tmp_path / "w.json").read_text().count("\n") == 1
    with pytest.raises(TuningError, match="needs work_dir"):
        ms.JSONDatabase()
    with pytest.raises(TuningError, match="does not exist"):
        ms.JSONDatabase(work_dir=str(tmp_path / "new"), allow_missing=False)


_EVIL = """
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    __import__("os").system("touch PWNED")
"""


def _tamper(tmp_path, which, edit):
    db = ms.JSONDatabase(work_dir=str(tmp_path))
    _, rec = _record(matmul_mod(), 0, [1e-3])
    db.commit_tuning_record(rec)
    path = tmp_path / which
    path.write_text(edit(path.read_text()))


@pytest.mark.parametrize(
    "which, edit, match",
    [
        ("database_tuning_record.json", lambda t: t[:-20], "not valid JSON"),
        (
            "database_tuning_record.json",
            lambda t: t.replace("[0, [[", "[7, [[", 1),
            "workload index",
        ),
        (
            "database_tuning_record.json",
            lambda t: t.replace('"Split"', '"__import__"'),
            "does not replay",
        ),
        (
            "database_tuning_record.json",
            lambda t: t.replace('"GetBlock"', '"os.system"'),
            "does not replay",
        ),
        (
            "database_workload.json",
            lambda t: json.dumps(["1", _EVIL]) + "\n",
            "does not parse",
        ),
        ("database_workload.json", lambda t: "[1, 2, 3]\n", "workload JSON must be"),
    ],
)
def test_tampered_json_is_refused_and_never_runs(tmp_path, which, edit, match):
    _tamper(tmp_path, which, edit)
    with pytest.raises(TuningError, match=match):
        ms.JSONDatabase(work_dir=str(tmp_path))


def test_arg_info_json():
    info = ms.TensorInfo("float32", (2, 3))
    assert ms.ArgInfo.from_json(info.as_json()) == info
    with pytest.raises(TuningError, match="arg info JSON"):
        ms.ArgInfo.from_json(["TENSOR", "float32", ["__import__('os')"]])


def test_workload_found_whatever_the_attr_order():
    """A module parsed back from its script may list function attrs in another order."""
    func = matmul_mod()["main"]
    a = tvm.IRModule({"main": func.with_attr("x", 1).with_attr("y", 2)})
    b = tvm.IRModule({"main": func.with_attr("y", 2).with_attr("x", 1)})
    db = ms.MemoryDatabase()
    assert db.commit_workload(a) is db.commit_workload(b)
