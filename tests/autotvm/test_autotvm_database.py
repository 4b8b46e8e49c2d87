"""autotvm.database: measurements keyed by target/workload/config, replayed by filter_inputs,
filled by callback.log_to_database."""

import importlib.util

import pytest

from minitvm import autotvm, te
from minitvm.autotvm import database
from minitvm.autotvm.measure import MeasureErrorNo, MeasureInput, MeasureResult
from minitvm.error import TuningError


@autotvm.template("test/database/add")
def add(n):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("t", C.op.axis[0], num_outputs=2)
    cfg["t"].apply(s, C, C.op.axis[0])
    return s, [A, C]


def _inputs(n=3):
    task = autotvm.task.create("test/database/add", (32,), "llvm")
    return [MeasureInput(task.target, task, task.config_space.get(i)) for i in range(n)]


def test_save_load_latest_all_and_replace():
    a, b, c = _inputs()
    db = database.DummyDatabase()
    db.save(a, MeasureResult([2e-3], 0, 0.1, 5.0))
    db.save(a, MeasureResult([1e-3], 0, 0.1, 7.0), extend=True)
    db.save(a, MeasureResult([3e-3], 0, 0.1, 6.0), extend=True)
    db.save(b, MeasureResult(["boom"], MeasureErrorNo.RUNTIME_DEVICE, 0.1, 1.0))
    assert db.load(a).timestamp == 7.0 and db.load(a).costs == (1e-3,)  # the latest
    assert [r.timestamp for r in db.load(a, get_all=True)] == [5.0, 7.0, 6.0]
    assert db.load(c) is None
    db.save(a, MeasureResult([9e-3], 0, 0.1, 1.0))  # no extend: replaces
    assert [r.costs for r in db.load(a, get_all=True)] == [(9e-3,)]
    failed = db.filter(lambda inp, results: any(r.error_no != 0 for r in results))
    assert [inp.config.index for inp, _ in failed] == [b.config.index]
    db.flush()
    assert db.load(a) is None


def test_filter_inputs_replays_saved_results():
    a, b, c = _inputs()
    db = database.DummyDatabase()
    ok = MeasureResult([1e-3], 0, 0.1, 1.0)
    bad = MeasureResult(["timeout"], MeasureErrorNo.RUN_TIMEOUT, 0.1, 1.0)
    db.save(a, ok)
    db.save(b, bad)
    results, unsaved = database.filter_inputs(db, [a, b, c])
    assert results == [ok, bad, None] and unsaved == [c]
    results, unsaved = database.filter_inputs(db, [a, b, c], retry=True)
    assert results == [ok, None, None] and unsaved == [b, c]


def test_log_to_database_saves_every_measurement():
    inputs = _inputs()
    results = [MeasureResult([i * 1e-3 + 1e-3], 0, 0.1, float(i)) for i in range(3)]
    db = database.DummyDatabase()
    autotvm.callback.log_to_database(db)(None, inputs, results)
    assert [db.load(inp) for inp in inputs] == results


@pytest.mark.skipif(importlib.util.find_spec("redis") is not None, reason="redis is installed")
def test_redis_database_without_redis_says_what_to_use():
    with pytest.raises(TuningError, match="needs the redis package.*DummyDatabase"):
        database.RedisDatabase()
