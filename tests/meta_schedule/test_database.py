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
    """replace_tuning_record: the latest measurement of a schedule is the one ranked (the
    tuner re-measures its best few at the end), in memory and after the JSON file is read
    back; commit_tuning_record adds a second record of a schedule, as TVM's does."""
    mod = matmul_mod()
    db = ms.JSONDatabase(work_dir=str(tmp_path))
    _, lucky = _record(mod, 0, [1e-3])  # a noise-lucky first time
    _, other = _record(mod, 2, [2e-3])
    _, again = _record(mod, 0, [3e-3])  # the same schedule (seed 0) timed again
    for rec in (lucky, other):
        db.commit_tuning_record(rec)
    db.replace_tuning_record(again)
    for d in (db, ms.JSONDatabase(work_dir=str(tmp_path))):
        assert sorted(r.run_secs[0] for r in d.get_all_tuning_records()) == [2e-3, 3e-3]
        assert d.query_tuning_record(mod, "llvm").run_secs == [2e-3]
    assert not (tmp_path / "database_tuning_record.json.tmp").exists()
    db.commit_tuning_record(lucky)
    again_db = ms.JSONDatabase(work_dir=str(tmp_path))
    assert sorted(r.run_secs[0] for r in again_db.get_all_tuning_records()) == [1e-3, 2e-3, 3e-3]
    assert again_db.query_tuning_record(mod, "llvm").run_secs[0].value == 1e-3


def test_union_databases_and_python_databases(tmp_path):
    """TVM's UnionDatabase (fastest answer), OrderedUnionDatabase (first answer), and a
    PyDatabase subclass under derived_object whose queries go through its own methods."""
    mod = matmul_mod()
    fast, slow = ms.MemoryDatabase(), ms.MemoryDatabase()
    fast.commit_tuning_record(_record(mod, 0, [1e-3])[1])
    slow.commit_tuning_record(_record(mod, 2, [2e-3])[1])
    union = ms.database.UnionDatabase(slow, fast)
    assert union.query_tuning_record(mod, "llvm").run_secs == [1e-3]
    assert ms.database.OrderedUnionDatabase(slow, fast).query_tuning_record(mod).run_secs == [2e-3]
    assert union.query_schedule(matmul_mod(16, 16, 16), "llvm") is None and len(union) == 2
    with pytest.raises(TuningError, match="only answers queries"):
        union.commit_tuning_record(_record(mod, 0, [1e-3])[1])
    with pytest.raises(TuningError, match="takes databases"):
        ms.database.UnionDatabase(fast, "memory")

    @ms.utils.derived_object
    class Listed(ms.database.PyDatabase):
        def __init__(self):
            super().__init__()
            self.records, self.workloads = [], []

        def has_workload(self, m):
            return any(tvm.ir.structural_equal(m, w.mod) for w in self.workloads)

        def commit_workload(self, m):
            for w in self.workloads:
                if tvm.ir.structural_equal(m, w.mod):
                    return w
            self.workloads.append(ms.Workload(m))
            return self.workloads[-1]

        def commit_tuning_record(self, record):
            self.records.append(record)

        def get_top_k(self, workload, top_k):
            mine = [r for r in self.records if r.workload is workload]
            return sorted(mine, key=lambda r: -r.run_secs[0])[:top_k]  # slowest first: its rule

        def __len__(self):
            return len(self.records)

    db = Listed()
    workload = db.commit_workload(mod)
    for seed, secs in [(0, [1e-3]), (2, [2e-3])]:
        sch, rec = _record(mod, seed, secs)
        rec.workload = workload
        db.commit_tuning_record(rec)
    assert db.query_tuning_record(mod, "llvm").run_secs == [2e-3]
    tvm.ir.assert_structural_equal(db.query_ir_module(mod, "llvm"), sch.mod)
    with db:
        assert ms.Database.current() is db
    with pytest.raises(TuningError, match="decorates a class"):
        ms.utils.derived_object(3)


def test_tvm_ranking_rules_mean_time_and_failure_bound():
    """Records rank by their mean time; no time, an empty list, or every repeat at TVM's
    1e10 bound is a failed run, not ranked; times read as floats and as FloatImm .value."""
    mod = matmul_mod()
    db = ms.MemoryDatabase(tie_tolerance=0)
    workload = db.commit_workload(mod)
    for secs in [[1.5, 4.5], [], [0.0, 2.0], None, [2.0], [3.0, 1e10], [1e10]]:
        _, rec = _record(mod, 0, secs)
        rec.workload = workload
        db.commit_tuning_record(rec)
    top = db.get_top_k(workload, 10)
    assert [[s.value for s in r.run_secs] for r in top] == [[0.0, 2.0], [2.0], [1.5, 4.5],
                                                             [3.0, 1e10]]  # fmt: skip
    assert top[0].run_secs[0] + 1 == 1.0 and db.get_top_k(workload, 0) == []
    with pytest.raises(TuningError, match="top_k must be >= 0"):
        db.get_top_k(workload, -1)
    _, imm = _record(mod, 0, [tvm.tir.FloatImm("float64", 0.25)])
    assert imm.run_secs == [0.25]
    for eq in ("structural", "ignore-ndarray", "anchor-block"):
        ms.MemoryDatabase(module_equality=eq).commit_workload(mod)
    with pytest.raises(TuningError, match="module_equality='nope' is not supported"):
        ms.MemoryDatabase(module_equality="nope")


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


def _fixed_record(mod, secs):
    """The untuned kind of record: a schedule with no sampling step (here: none at all)."""
    sch = tvm.tir.Schedule(mod)
    return sch, ms.TuningRecord(
        sch.trace, ms.Workload(mod), secs, "llvm", ms.ArgInfo.from_entry_func(mod)
    )


@pytest.mark.parametrize(
    "tuned_secs, tolerance, fixed_wins",
    [
        (0.99e-3, 0.02, True),  # 1% faster: within the tolerance, the fixed schedule stays
        (0.97e-3, 0.02, False),  # 3% faster: a real gain
        (0.99e-3, 0.0, False),  # tolerance 0: time alone, as TVM ranks
        (1.01e-3, 0.02, True),
    ],
)
def test_a_fixed_schedule_keeps_its_place_against_a_gain_within_noise(
    tmp_path, tuned_secs, tolerance, fixed_wins
):
    mod = matmul_mod()
    fixed_sch, fixed = _fixed_record(mod, [1e-3])
    tuned_sch, tuned = _record(mod, 2, [tuned_secs])
    for db in (
        ms.MemoryDatabase(tie_tolerance=tolerance),
        ms.JSONDatabase(work_dir=str(tmp_path / str(tolerance)), tie_tolerance=tolerance),
    ):
        for rec in (tuned, fixed):
            db.commit_tuning_record(rec)
        want = fixed_sch if fixed_wins else tuned_sch
        tvm.ir.assert_structural_equal(db.query_ir_module(mod, "llvm"), want.mod)
        top = db.get_top_k(db.commit_workload(mod), 2)
        assert len(top) == 2 and {r.best_sec for r in top} == {1e-3, tuned_secs}


def test_tie_tolerance_is_checked():
    with pytest.raises(TuningError, match="tie_tolerance must be in"):
        ms.MemoryDatabase(tie_tolerance=-0.1)
    with pytest.raises(TuningError, match="tie_tolerance must be in"):
        ms.JSONDatabase(work_dir=None, path_workload="a", path_tuning_record="b", tie_tolerance=1)


def test_a_new_time_replaces_in_our_databases_and_is_added_to_a_python_one(tmp_path):
    """commit_replacing (the tuner's re-measurement): minitvm's databases keep one record per
    schedule; a PyDatabase that stores records itself receives the record through its own
    commit_tuning_record, not through the base class's storage."""
    from minitvm.meta_schedule.database import commit_replacing

    mod = matmul_mod()
    mem = ms.MemoryDatabase()
    for secs in ([1e-3], [2e-3]):
        commit_replacing(mem, _record(mod, 0, secs)[1])
    assert [r.run_secs for r in mem.get_all_tuning_records()] == [[2e-3]]

    class Mine(ms.database.PyDatabase):
        def __init__(self):
            super().__init__()
            self.mine = []

        def commit_tuning_record(self, record):
            self.mine.append(record)

    db = Mine()
    for secs in ([1e-3], [2e-3]):
        commit_replacing(db, _record(mod, 0, secs)[1])
    assert [r.run_secs for r in db.mine] == [[1e-3], [2e-3]] and len(db._records) == 0
