"""autotvm: config spaces, tuners measuring through meta_schedule's workers, tuning logs,
apply_history_best and the fallback config."""

import json
import logging

import numpy as np
import pytest

import minitvm as tvm
from minitvm import autotvm, te
from minitvm.autotvm.measure import MeasureErrorNo, MeasureInput, MeasureResult
from minitvm.autotvm.record import decode, encode
from minitvm.autotvm.task.dispatcher import RecordWarning
from minitvm.error import TuningError

N, L, M = 32, 16, 48


@autotvm.template("test/matmul")
def matmul(n, l, m, dtype):
    A = te.placeholder((n, l), name="A", dtype=dtype)
    B = te.placeholder((l, m), name="B", dtype=dtype)
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("order", [0, 1, 2])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    orders = [(yo, xo, k, yi, xi), (yo, xo, yi, k, xi), (k, yo, xo, yi, xi)]
    s[C].reorder(*orders[cfg["order"].val])
    return s, [A, B, C]


@autotvm.template("test/fails")
def failing(n):
    """Knob 'mode': 0 builds, 1 binds a loop to a GPU thread (the CPU build fails),
    2 raises in the template, 3 computes twice the value (a wrong answer)."""
    A = te.placeholder((n,), name="A")
    cfg = autotvm.get_config()
    cfg.define_knob("mode", [0, 1, 2, 3])
    scale = 2.0 if cfg["mode"].val == 3 else 1.0
    C = te.compute((n,), lambda i: A[i] * scale + 1.0, name="C")
    s = te.create_schedule(C.op)
    if cfg["mode"].val == 1:
        xo, _ = s[C].split(C.op.axis[0], 4)
        s[C].bind(xo, te.thread_axis("blockIdx.x"))
    if cfg["mode"].val == 2:
        raise ValueError("this config cannot be instantiated")
    return s, [A, C]


def _task():
    return autotvm.task.create("test/matmul", args=(N, L, M, "float32"), target="llvm")


def _options():
    runner = autotvm.LocalRunner(number=1, repeat=1, timeout=60)
    return autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=60), runner=runner)


def _check_matmul(s, args):
    func = tvm.build(s, args)
    a = np.random.rand(N, L).astype("float32")
    b = np.random.rand(L, M).astype("float32")
    c = tvm.nd.empty((N, M))
    func(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)


# ------------------------------------------------------------------------ spaces
def test_space_size_and_enumeration_match_a_hand_count():
    task = _task()
    space = task.config_space
    # divisors of 32: 6; of 48: 1 2 3 4 6 8 12 16 24 48 = 10; three orders
    assert len(space) == 6 * 10 * 3 == space.range_length
    assert task.flop == 2 * N * L * M
    assert task.args == (N, L, M, "float32") and str(task.target) == "llvm"
    assert "tile_x: Split(policy=factors, product=48, num_outputs=2) len=10" in repr(space)
    # the first knob varies fastest
    first = space.get(0)
    assert [first["tile_y"].size, first["tile_x"].size, first["order"].val] == [[-1, 1], [-1, 1], 0]
    c = space.get(1 + 6 * 2 + 60 * 2)
    assert [c["tile_y"].size, c["tile_x"].size, c["order"].val] == [[-1, 2], [-1, 3], 2]
    assert repr(c) == "[('tile_y', [-1, 2]), ('tile_x', [-1, 3]), ('order', 2)],None,133"
    assert {tuple(space.get(i)["tile_x"].size) for i in range(len(space))} == {
        (-1, f) for f in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)
    }
    with pytest.raises(TuningError, match="outside the space of 180 points"):
        space.get(180)


def test_split_policies():
    space = autotvm.ConfigSpace()
    space.define_split("f", 48, num_outputs=2, policy="factors")
    space.define_split("p", 48, num_outputs=2, policy="power2")  # 1..32, tails allowed
    space.define_split("v", 48, num_outputs=2, policy="verbose")  # divisors and 32
    space.define_split("three", 16, num_outputs=3)  # (a, b) with a*b | 16: i+j <= 4
    space.define_split("small", 16, num_outputs=3, filter=lambda e: e.size[-1] <= 2)
    space.define_split("cand", 16, num_outputs=2, policy="candidate", candidate=[[4, 4], [2, 8]])
    lens = {name: len(s) for name, s in space.space_map.items()}
    assert lens == {"f": 10, "p": 6, "v": 11, "three": 15, "small": 9, "cand": 2}
    assert [e.size for e in space.space_map["p"].entities][-1] == [-1, 32]
    assert all(e.size[-1] <= 2 for e in space.space_map["small"].entities)
    with pytest.raises(TuningError, match="unknown policy 'halves'"):
        space.define_split("bad", 16, num_outputs=2, policy="halves")
    space.define_split("f", 16, num_outputs=2)  # defining a knob again replaces it, as in TVM
    assert len(space.space_map["f"]) == 5
    with pytest.raises(TuningError, match="define_annotate.*not supported"):
        space.define_annotate("ann", [], policy="try_unroll")
    with pytest.raises(TuningError, match="has no knob 'tile'"):
        space["tile"]


def test_multi_filter_restricts_points_and_tuners_skip_the_rest():
    task = _task()
    space = task.config_space
    space.multi_filter(filter=lambda e: e["tile_y"].size[1] * e["tile_x"].size[1] >= 64)
    valid = [i for i in range(space.range_length) if space.is_index_valid(i)]
    by_hand = [
        i
        for i in range(180)
        if space.space_map["tile_y"][i % 6].size[1] * space.space_map["tile_x"][i // 6 % 10].size[1]
        >= 64
    ]
    assert valid == by_hand and len(space) == len(valid) and space.range_length == 180
    assert space.get_next_index(valid[0]) == valid[1]
    with pytest.raises(TuningError, match="does not pass the space's multi_filter"):
        space.get(0)
    for tuner_cls in (autotvm.tuner.GridSearchTuner, autotvm.tuner.GATuner):
        batch = tuner_cls(task).next_batch(8)
        assert len(batch) == 8 and all(c.index in valid for c in batch)


def test_fallback_split_limits():
    cfg = autotvm.task.space.FallbackConfigEntity()
    cfg.define_split("t", cfg.axis(49), num_outputs=3)
    cfg.fallback_split("t", [-1, 8, 4])
    assert cfg["t"].size == [7, 7, 1]
    with pytest.raises(TuningError, match="no divisor of 49 is within the limit 0"):
        cfg.fallback_split("t", [-1, 1, 0])


def test_apply_splits_into_the_configured_sizes():
    task = _task()
    config = next(
        task.config_space.get(i)
        for i in range(len(task.config_space))
        if task.config_space.get(i)["tile_y"].size == [-1, 8]
        and task.config_space.get(i)["tile_x"].size == [-1, 16]
    )
    s, args = task.instantiate(config)
    script = s.build_prim_func(args, "main").script()
    # tile_y 8 -> outer 32/8 = 4, tile_x 16 -> outer 3
    assert "T.grid(4, 3, 16, 8, 16)" in script
    _check_matmul(s, args)


# ------------------------------------------------------------------------ tuning
@pytest.mark.parametrize(
    "tuner_cls",
    [
        autotvm.tuner.RandomTuner,
        autotvm.tuner.GridSearchTuner,
        autotvm.tuner.GATuner,
        autotvm.tuner.XGBTuner,
        autotvm.tuner.DropletTuner,
    ],
)
def test_each_tuner_records_n_trials(tuner_cls, tmp_path):
    log = tmp_path / "tune.log"
    task = _task()
    tuner = tuner_cls(task)
    tuner.tune(
        n_trial=3, measure_option=_options(), callbacks=[autotvm.callback.log_to_file(str(log))]
    )
    records = list(autotvm.record.load_from_file(str(log)))
    assert len(records) == 3
    assert len({inp.config.index for inp, _ in records}) == 3  # no config measured twice
    assert all(res.error_no == 0 and min(res.costs) > 0 for _, res in records)
    assert tuner.best_flops > 0 and tuner.best_config is not None


def test_xgb_tuner_ranks_by_its_model_after_a_plan_of_trials():
    task = _task()
    tuner = autotvm.tuner.XGBTuner(task, plan_size=16, seed=0)
    # feed synthetic measurements: configs with a bigger tile_x are faster
    inputs, results = [], []
    for index in range(0, 180, 7):
        config = task.config_space.get(index)
        secs = 1.0 / config["tile_x"].size[1]
        inputs.append(MeasureInput(task.target, task, config))
        results.append(MeasureResult([secs], 0, 0.0, 0.0))
    tuner.update(inputs, results)
    assert tuner.train_ct == 1 and len(tuner.trials) == 16
    batch = tuner.next_batch(4)
    assert all(c["tile_x"].size[1] >= 24 for c in batch)


def test_failed_candidates_are_records_and_tuning_goes_on(tmp_path):
    log = tmp_path / "fails.log"
    task = autotvm.task.create("test/fails", args=(64,), target="llvm")
    tuner = autotvm.tuner.GridSearchTuner(task)
    tuner.tune(
        n_trial=4, measure_option=_options(), callbacks=[autotvm.callback.log_to_file(str(log))]
    )
    records = {inp.config["mode"].val: res for inp, res in autotvm.record.load_from_file(str(log))}
    assert records[0].error_no == MeasureErrorNo.NO_ERROR
    assert records[1].error_no == MeasureErrorNo.COMPILE_HOST
    assert "GPU thread" in records[1].costs[0]
    assert records[2].error_no == MeasureErrorNo.INSTANTIATION_ERROR
    assert "cannot be instantiated" in records[2].costs[0]
    assert records[3].error_no == MeasureErrorNo.WRONG_ANSWER
    assert tuner.best_config["mode"].val == 0
    # the failures never win: the history best is the one config that ran correctly
    with autotvm.apply_history_best(str(log)), tvm.target.Target("llvm"):
        cfg = autotvm.task.DispatchContext.current.query(
            tvm.target.Target.current(), ("test/fails", 64)
        )
        s, args = failing(64)
    assert cfg["mode"].val == 0
    a = np.random.rand(64).astype("float32")
    c = tvm.nd.empty((64,))
    tvm.build(s, args)(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a + 1.0, rtol=1e-6)


# ------------------------------------------------------------------------ logs and dispatch
def _record(task, index, secs, error_no=0):
    costs = [secs] if error_no == 0 else ["failed"]
    return encode(
        MeasureInput(task.target, task, task.config_space.get(index)),
        MeasureResult(costs, error_no, 0.1, 0.0),
    )


def _write_log(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def _history_best_matmul(log):
    """The matmul template's schedule and config under apply_history_best(log)."""
    with autotvm.apply_history_best(log), tvm.target.Target("llvm"):
        s, args = matmul(N, L, M, "float32")
        cfg = autotvm.task.DispatchContext.current.query(
            tvm.target.Target.current(), ("test/matmul", N, L, M, "float32")
        )
    return s, args, cfg


def test_apply_history_best_picks_the_fastest_record(tmp_path):
    task = _task()
    log = _write_log(
        tmp_path / "h.log",
        [_record(task, 5, 3e-3), _record(task, 77, 1e-3), _record(task, 40, 1e-4, error_no=4)],
    )
    s, args, cfg = _history_best_matmul(log)
    assert cfg.index == 77 and not cfg.is_fallback
    _check_matmul(s, args)


def test_apply_history_best_needs_a_target(tmp_path):
    log = _write_log(tmp_path / "h.log", [_record(_task(), 5, 3e-3)])
    with autotvm.apply_history_best(log), pytest.raises(TuningError, match="needs a target"):
        matmul(N, L, M, "float32")


def test_fallback_without_records(caplog):
    with caplog.at_level(logging.WARNING, logger="autotvm"), tvm.target.Target("llvm"):
        s, args = matmul(N, L, M, "float32")
    cfg = autotvm.task.DispatchContext.current.query(
        tvm.target.Target("llvm"), ("test/matmul", N, L, M, "float32")
    )
    assert cfg.is_fallback and cfg["tile_y"].size == [-1, 1]
    assert "A fallback configuration is used" in caplog.text
    _check_matmul(s, args)
    cfg.fallback_split("tile_y", [-1, 8])
    assert cfg["tile_y"].size == [4, 8]


def test_garbled_log_lines_are_skipped_with_a_warning(tmp_path):
    task = _task()
    good = _record(task, 77, 1e-3)
    tampered = json.loads(_record(task, 5, 1e-6))  # the fastest, but not a point of the space
    tampered["config"]["entity"][0][2] = [-1, 7]
    negative = json.loads(_record(task, 6, 1e-6))
    negative["result"][0] = [-1.0]
    log = _write_log(
        tmp_path / "g.log",
        [
            good,
            "not json at all",
            good[: len(good) // 2],
            json.dumps(negative),
            json.dumps(tampered),
        ],
    )
    with pytest.warns(RecordWarning) as caught:
        records = list(autotvm.record.load_from_file(log))
    assert len(records) == 2
    messages = [str(w.message) for w in caught]
    assert any("g.log:2: skipped a malformed autotvm record: not JSON" in m for m in messages)
    assert any("g.log:3:" in m for m in messages)
    assert any("g.log:4:" in m and "non-negative finite costs" in m for m in messages)
    with pytest.warns(RecordWarning, match=r"not a point of the template's space"):
        s, args, cfg = _history_best_matmul(log)
    assert cfg.index == 77
    _check_matmul(s, args)


def test_record_round_trip():
    task = _task()
    inp, res = decode(_record(task, 133, 2e-3))
    assert inp.task.workload == task.workload and inp.config.index == 133
    assert repr(inp.config) == repr(task.config_space.get(133))
    assert res.costs == (2e-3,) and res.error_no == 0
    with pytest.raises(TuningError, match="'input' must be"):
        decode(json.dumps({"input": 3, "config": {}, "result": []}))


def test_pick_best(tmp_path):
    task = _task()
    log = _write_log(tmp_path / "all.log", [_record(task, 5, 3e-3), _record(task, 9, 1e-3)])
    autotvm.record.pick_best(log, str(tmp_path / "best.log"))
    (best,) = autotvm.record.load_from_file(str(tmp_path / "best.log"))
    assert best[0].config.index == 9


# ------------------------------------------------------------------------ clear errors
def test_unsupported_and_misused_api_say_what_to_do():
    with pytest.raises(TuningError, match="positional arguments only"):
        matmul(N, L, M, dtype="float32")
    with pytest.raises(TuningError, match="already registered"):
        autotvm.template("test/matmul")(lambda: None)
    with pytest.raises(TuningError, match="runner='rpc' is not supported"):
        autotvm.measure_option(builder="local", runner="rpc")
    with pytest.raises(TuningError, match="extract_from_program is not supported"):
        autotvm.task.extract_from_program(None, params={}, target="llvm")
    with pytest.raises(TuningError, match="no autotvm template named 'test/none'"):
        autotvm.task.create("test/none", args=(1,), target="llvm")
    with pytest.raises(TuningError, match="protocol 'pickle' is not supported"):
        autotvm.record.encode(None, None, protocol="pickle")
