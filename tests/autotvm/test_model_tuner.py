"""autotvm's model-based tuning: XGBoostCostModel (trees on knob features), simulated
annealing, the ModelBasedTuner plan, transfer from history. Synthetic throughputs with a
known best make every check exact or a clear ranking quality bar."""

import numpy as np
import pytest

from minitvm import autotvm, te
from minitvm.autotvm.measure import MeasureInput, MeasureResult
from minitvm.autotvm.tuner import (
    ModelOptimizer,
    SimulatedAnnealingOptimizer,
    XGBoostCostModel,
    XGBTuner,
    submodular_pick,
    xgboost_cost_model,
)
from minitvm.error import TuningError


@autotvm.template("test/model_tuner/matmul")
def matmul(n, l, m):
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("unroll", [0, 1])
    cfg["tile_y"].apply(s, C, y)
    cfg["tile_x"].apply(s, C, x)
    return s, [A, B, C]


def _task():
    return autotvm.task.create("test/model_tuner/matmul", (64, 16, 96), "llvm")


def _secs(config):
    """Synthetic time: a wide inner x tile and a mid-sized y tile are fast."""
    tx, ty = config["tile_x"].size[1], config["tile_y"].size[1]
    return 1e-3 / tx * (1 + abs(np.log2(ty) - 3)) * (1.2 if config["unroll"].val else 1.0)


def _records(task, indices):
    space = task.config_space
    return [
        (
            MeasureInput(task.target, task, space.get(i)),
            MeasureResult([_secs(space.get(i))], 0, 0.0, 0.0),
        )
        for i in indices
    ]


def _flops(task, i):
    return task.flop / _secs(task.config_space.get(i))


def _spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


@pytest.mark.parametrize("feature_type", ["itervar", "knob"])
@pytest.mark.parametrize("backend", ["lightgbm", "numpy"])
def test_cost_model_ranks_unseen_configs(monkeypatch, feature_type, backend):
    if backend == "lightgbm":
        pytest.importorskip("lightgbm")
    task = _task()
    n = len(task.config_space)
    rng = np.random.default_rng(0)
    order = rng.permutation(n)
    train, test = order[: n // 2], order[n // 2 :]
    model = XGBoostCostModel(task, feature_type, seed=0)
    model.backend = backend
    model.fit(train, [_flops(task, i) for i in train], plan_size=16)
    predicted = model.predict(test)
    assert _spearman(predicted, [_flops(task, i) for i in test]) > 0.8


def test_backend_falls_back_from_xgboost():
    try:
        import xgboost  # noqa: F401

        expected = "xgboost"
    except ImportError:
        try:
            import lightgbm  # noqa: F401

            expected = "lightgbm"
        except ImportError:
            expected = "numpy"
    assert xgboost_cost_model.backend() == expected


class _Oracle:
    """A 'model' that knows the synthetic throughput."""

    def __init__(self, task):
        self.task = task

    def predict(self, xs, output_margin=False):
        return np.array([_flops(self.task, int(i)) for i in xs])


def test_simulated_annealing_finds_the_true_best_outside_the_exclusive_set():
    np.random.seed(0)  # the space's random walk draws from numpy's global generator
    task = _task()
    n = len(task.config_space)
    truth = sorted(range(n), key=lambda i: -_flops(task, i))
    exclusive = set(truth[:3])
    sa = SimulatedAnnealingOptimizer(task, n_iter=200, parallel_size=16, seed=0)
    found = sa.find_maximums(_Oracle(task), 5, exclusive)
    assert not exclusive & set(found)
    assert found == truth[3:8]


def test_tuner_plans_the_models_best_and_keeps_indices_and_visited():
    task = _task()
    tuner = XGBTuner(task, plan_size=20, seed=0)
    records = _records(task, range(0, len(task.config_space), 3)[:20])
    tuner.update([i for i, _ in records], [r for _, r in records])
    assert tuner.xs == [inp.config.index for inp, _ in records]
    assert tuner.ys == pytest.approx([_flops(task, i) for i in tuner.xs])
    assert set(tuner.xs) <= tuner.visited and tuner.train_ct == 1
    batch = tuner.next_batch(5)
    assert not {c.index for c in batch} & set(tuner.xs)  # never a measured config again
    best_seen = max(tuner.ys)
    # the model's picks are mostly better than an average config
    mean = np.mean([_flops(task, i) for i in range(len(task.config_space))])
    assert np.mean([_flops(task, c.index) for c in batch]) > mean
    assert max(_flops(task, c.index) for c in batch) > 0.5 * best_seen


def test_load_history_needs_min_seed_records_and_seeds_the_model():
    task = _task()
    records = _records(task, range(40))
    tuner = XGBTuner(task, plan_size=8, seed=0)
    tuner.load_history(records, min_seed_records=41)
    assert tuner.cost_model.base_model is None and tuner.trials == []
    tuner.load_history(records, min_seed_records=40)
    assert tuner.cost_model.base_model is not None and len(tuner.trials) == 8
    # the first trials come from the history model: better than an average config
    mean = np.mean([_flops(task, i) for i in range(len(task.config_space))])
    assert np.mean([_flops(task, i) for i in tuner.trials]) > mean
    # records of another workload are not used
    other = autotvm.task.create("test/model_tuner/matmul", (32, 16, 96), "llvm")
    tuner = XGBTuner(other, plan_size=8)
    tuner.load_history(records, min_seed_records=1)
    assert tuner.cost_model.base_model is None


def test_submodular_pick_prefers_uncovered_knob_values():
    knobs = [[0, 0], [0, 0], [1, 1], [0, 1]]
    assert submodular_pick(np.zeros(4), knobs, 2) == [0, 2]
    assert submodular_pick(np.array([0.0, 5.0, 0.0, 0.0]), knobs, 1) == [1]


def test_model_tuner_errors_say_what_to_do():
    task = _task()
    with pytest.raises(TuningError, match="feature_type must be one of"):
        XGBoostCostModel(task, "loops")
    with pytest.raises(TuningError, match="not trained; fit it first"):
        XGBoostCostModel(task, "knob").predict([0, 1])
    with pytest.raises(TuningError, match="diversity_filter_ratio must be at least 1"):
        XGBTuner(task, diversity_filter_ratio=0.5)
    with pytest.raises(TuningError, match="optimizer must be 'sa' or"):
        XGBTuner(task, optimizer="ga")
    assert isinstance(XGBTuner(task).model_optimizer, ModelOptimizer)


def test_xgb_tuner_tunes_with_real_measurements(tmp_path):
    """Random trials, then two rounds planned by the model, all measured in the workers."""
    task = _task()
    log = tmp_path / "xgb.log"
    tuner = XGBTuner(task, plan_size=4, seed=0)
    runner = autotvm.LocalRunner(number=1, repeat=1, timeout=60)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=60), runner=runner)
    tuner.tune(n_trial=8, measure_option=option, callbacks=[autotvm.callback.log_to_file(str(log))])
    records = list(autotvm.record.load_from_file(str(log)))
    indices = [inp.config.index for inp, _ in records]
    assert len(indices) == 8 and len(set(indices)) == 8
    assert all(res.error_no == 0 for _, res in records)
    assert tuner.train_ct == 2 and tuner.xs == indices and tuner.best_flops > 0


@pytest.mark.parametrize("loss_type", ["rank", "rank-binary"])
def test_rank_losses_and_the_diversity_filter_still_plan_fast_configs(loss_type):
    task = _task()
    tuner = XGBTuner(task, plan_size=10, loss_type=loss_type, diversity_filter_ratio=2, seed=0)
    records = _records(task, range(0, len(task.config_space), 4)[:30])
    tuner.update([i for i, _ in records], [r for _, r in records])
    assert tuner.train_ct == 1 and len(tuner.trials) == 10
    assert not set(tuner.trials) & set(tuner.xs)
    # the diversity pick spreads over several values of each split
    knobs = [task.config_space.point2knob(i) for i in tuner.trials]
    assert len({k[0] for k in knobs}) > 1 and len({k[1] for k in knobs}) > 1
    mean = np.mean([_flops(task, i) for i in range(len(task.config_space))])
    assert np.mean([_flops(task, i) for i in tuner.trials]) > mean
