"""autotvm records: which measured costs a log may hold (zero yes; negative, NaN, inf no)."""

import json

import pytest

import minitvm as tvm
from minitvm import autotvm, te
from minitvm.autotvm.measure import MeasureInput, MeasureResult
from minitvm.autotvm.record import decode, encode
from minitvm.autotvm.task.dispatcher import RecordWarning
from minitvm.autotvm.tuner.tuner import measured_flops
from minitvm.error import TuningError


@autotvm.template("test/record_costs/scale")
def scale(n):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", C.op.axis[0], num_outputs=2)
    cfg["tile"].apply(s, C, C.op.axis[0])
    return s, [A, C]


def _task():
    return autotvm.task.create("test/record_costs/scale", args=(64,), target="llvm")


def _line(task, index, costs):
    inp = MeasureInput(task.target, task, task.config_space.get(index))
    return encode(inp, MeasureResult(costs, 0, 0.0, 0.0))


def test_a_zero_cost_is_a_measurement_and_ranks_first(tmp_path):
    task = _task()
    _, res = decode(_line(task, 3, [0]))
    assert res.costs == (0,) and res.error_no == 0
    log = tmp_path / "z.log"
    log.write_text(_line(task, 5, [1e-3]) + "\n" + _line(task, 3, [0.0]) + "\n")
    best = autotvm.apply_history_best(str(log))
    cfg = best.query(tvm.target.Target("llvm"), task.workload)
    assert cfg.index == 3
    # a time below the timer's resolution counts as 1 ns, not a division by zero
    assert measured_flops(2e6, res) == pytest.approx(2e6 / 1e-9)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_negative_nan_and_infinite_costs_are_rejected(tmp_path, bad):
    row = json.loads(_line(_task(), 3, [1e-3]))
    row["result"][0] = [bad]
    with pytest.raises(TuningError, match="non-negative finite costs"):
        decode(json.dumps(row))
    log = tmp_path / "b.log"
    log.write_text(json.dumps(row) + "\n")
    with pytest.warns(RecordWarning, match="b.log:1: .*non-negative finite costs"):
        assert list(autotvm.record.load_from_file(str(log))) == []


def test_measure_input_and_result_are_named_tuples():
    task = _task()
    inp = MeasureInput(task.target, task, task.config_space.get(2))
    res = MeasureResult([1e-3, 3e-3], 0, 0.5, 7)
    target, tsk, config = inp
    assert (target, tsk, config.index) == (task.target, task, 2) and inp[2] is inp.config
    assert res[0] == (1e-3, 3e-3) and res.mean_cost == pytest.approx(2e-3)
    assert res == MeasureResult((1e-3, 3e-3), 0, 0.5, 7.0)
    assert MeasureResult(("build failed",), 2, 0, 0).mean_cost == float("inf")


def test_best_by_targetkey_holds_the_fastest_record_per_key(tmp_path):
    task = _task()
    log = tmp_path / "k.log"
    log.write_text(
        "".join(_line(task, i, [c]) + "\n" for i, c in ((1, 3e-3), (4, 1e-3), (2, 2e-3)))
    )
    best = autotvm.apply_history_best(str(log))
    (key,) = best.best_by_targetkey
    inp, res = best.best_by_targetkey[key]
    assert key == ("cpu", task.workload) and inp.config.index == 4 and res.costs == (1e-3,)
