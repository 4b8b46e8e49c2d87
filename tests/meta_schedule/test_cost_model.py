"""Cost models: the boosted-tree model learns to rank, every backend round-trips through
JSON with equal predictions, RandomModel is seeded, create() names the kinds."""

import json

import numpy as np
import pytest
from _space_workloads import matmul, resample

from minitvm import meta_schedule as ms
from minitvm.error import TuningError

cm = ms.cost_model


def _spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def _synthetic(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 4, (n, 12))
    secs = np.exp(0.8 * x[:, 0] - 0.5 * x[:, 3] + 0.3 * x[:, 5] * x[:, 6] / 4)
    return x, secs * (1 + 0.05 * rng.standard_normal(n))


BACKENDS = ["numpy"] + [
    pytest.param(b, marks=pytest.mark.skipif(not _has, reason=f"{b} is not installed"))
    for b, _has in (
        ("lightgbm", __import__("importlib").util.find_spec("lightgbm") is not None),
        ("xgboost", __import__("importlib").util.find_spec("xgboost") is not None),
    )
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_learns_to_rank_a_synthetic_set(backend):
    x, secs = _synthetic(240, 0)
    model = cm.XGBModel(backend=backend)
    model.fit(x[:180], secs[:180])
    pred = model.predict_vectors(x[180:])
    # higher score = faster: the ranking follows 1 / time
    assert _spearman(pred, 1 / secs[180:]) > 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_round_trips_through_json(backend, tmp_path):
    x, secs = _synthetic(80, 1)
    model = cm.XGBModel(backend=backend)
    model.fit(x, secs)
    path = str(tmp_path / "model.json")
    model.save(path)
    with open(path) as f:
        json.load(f)  # plain JSON
    again = cm.XGBModel(backend=backend)
    again.load(path)
    np.testing.assert_allclose(again.predict_vectors(x), model.predict_vectors(x), rtol=1e-6)
    assert again.costs == model.costs


class _Cand:
    def __init__(self, sch):
        self.sch = sch
        self.args_info = []


class _Res:
    def __init__(self, secs):
        self.run_secs = secs


class _Ctx:
    target = "llvm"
    rand_state = 0
    task_name = "mm"

    def __init__(self, mod):
        self.mod = mod


def test_update_and_predict_on_candidates_rank_measured_speed():
    mod = matmul(32, 32, 32)[0]
    space = ms.space_generator.PostOrderApply()
    designs = space.generate_design_space(mod)
    cands = []
    for seed in range(24):
        sch = resample(mod, designs[seed % (len(designs) - 1)], seed)
        if all(p.apply(sch) for p in space.postprocs):
            cands.append(_Cand(sch))
    ctx = _Ctx(mod)
    feats = ms.feature_extractor.PerStoreFeature().extract_from(ctx, [c.sch for c in cands])
    # a pretend measurement: time grows with the innermost extent of the first store
    secs = [1e-4 * (1 + f[0, 10]) for f in feats]
    model = cm.XGBModel(num_warmup_samples=4)
    model.update(ctx, cands, [_Res([s]) for s in secs])
    model.update(ctx, [cands[0]], [_Res(None)])  # a failed run is data too (score 0)
    pred = model.predict(ctx, cands)
    assert pred.shape == (len(cands),)
    assert _spearman(pred, [1 / s for s in secs]) > 0.5


def test_predictions_before_warmup_are_seeded_random():
    mod = matmul(16, 16, 16)[0]
    cands = [_Cand(s) for s in ms.space_generator.PostOrderApply().generate_design_space(mod)]
    a = cm.XGBModel(seed=3).predict(_Ctx(mod), cands)
    b = cm.XGBModel(seed=3).predict(_Ctx(mod), cands)
    np.testing.assert_array_equal(a, b)


def test_random_model_is_seeded_and_round_trips(tmp_path):
    a, b = cm.RandomModel(seed=5), cm.RandomModel(seed=5)
    np.testing.assert_array_equal(a.predict(None, [1, 2, 3]), b.predict(None, [1, 2, 3]))
    path = str(tmp_path / "r.json")
    a.save(path)
    c = cm.RandomModel()
    c.load(path)
    assert c.seed == 5


def test_create_names_kinds_and_load_refuses_other_models(tmp_path):
    assert isinstance(cm.create("xgb"), cm.XGBModel)
    assert isinstance(cm.create("random"), cm.RandomModel)
    with pytest.raises(TuningError, match="unknown kind 'mlp'"):
        cm.create("mlp")
    path = str(tmp_path / "r.json")
    cm.RandomModel(seed=1).save(path)
    with pytest.raises(TuningError, match="holds a 'RandomModel' model, not a XGBModel"):
        cm.XGBModel().load(path)


def test_malformed_model_json_is_refused(tmp_path):
    x, secs = _synthetic(20, 2)
    model = cm.XGBModel(backend="numpy")
    model.fit(x, secs)
    data = model.to_json()
    data["model"]["trees"][0] = ["__import__('os')"]
    with pytest.raises(TuningError, match="malformed tree node"):
        cm.XGBModel(backend="numpy").from_json(data)
    with pytest.raises(TuningError, match="cannot read"):
        cm.XGBModel().load(str(tmp_path / "missing.json"))


def test_unknown_backend_says_what_to_install():
    with pytest.raises(
        TuningError, match="backend 'catboost' is not installed; pip install catboost"
    ):
        cm.XGBModel(backend="catboost")
