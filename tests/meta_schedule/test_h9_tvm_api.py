"""TVM meta_schedule names and protocols (issue 27): ApplyCustomRule and the schedule_rule
annotation, PySpaceGenerator, ReplayFunc, the empty-batch protocol of EvolutionarySearch,
feature extractors' base and RandomFeatureExtractor, RandomModel state, PackSum, AutoBind on
blocks without spatial loops, InlineConstantScalars, MutateParallel's plans, one folder per built
artifact. Results are checked against numpy."""

import os
import warnings

import numpy as np
import pytest
from _space_workloads import matmul, run

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm import te
from minitvm.error import TuningError
from minitvm.testing.tir_interp import run_prim_func
from minitvm.tir.functor import post_order_visit
from minitvm.tir.schedule import Schedule
from minitvm.tir.stmt import For, ForKind


def _loops(func):
    out = []
    post_order_visit(func.body, lambda n: out.append(n) if isinstance(n, For) else None)
    return out[::-1]  # outermost first


def _annotated_matmul(n=32):
    mod, ins, out, ref = matmul(n, n, n)
    sch = Schedule(mod)
    sch.annotate(sch.get_block("C"), "schedule_rule", "h9_split_i")
    return sch.mod, ins, out, ref


def _context(mod, rules, target="llvm -num-cores=1"):
    space = ms.space_generator.PostOrderApply(sch_rules=rules, postprocs=[], mutator_probs={})
    return ms.TuneContext(mod=mod, target=target, space_generator=space, task_name="t")


# ---------------------------------------------------------------- ApplyCustomRule
@tvm.register_func("meta_schedule.cpu.h9_split_i", override=True)
def _split_i(sch, block):
    i, _, _ = sch.get_loops(block)
    sch.split(i, [None, 4])
    return [sch]


def test_apply_custom_rule_runs_the_registered_function_and_results_match_numpy():
    mod, ins, out, ref = _annotated_matmul()
    ctx = _context(mod, [ms.schedule_rule.ApplyCustomRule()])
    (sch,) = ctx.generate_design_space()
    assert [lp.extent.value for lp in _loops(sch.mod["main"])][:2] == [8, 4]
    xs, got = run(sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-5, atol=1e-5)


def test_annotated_block_is_left_to_apply_custom_rule_by_other_rules():
    mod, _, _, _ = _annotated_matmul()
    rule = ms.schedule_rule.MultiLevelTiling(structure="SSRSRS")
    (sch,) = _context(mod, [rule]).generate_design_space()
    assert len(_loops(sch.mod["main"])) == 3  # not tiled: the annotation names a custom rule


def test_apply_custom_rule_unknown_name_warns_and_frees_the_block():
    mod, _, _, _ = matmul(16, 16, 16)
    sch = Schedule(mod)
    sch.annotate(sch.get_block("C"), "schedule_rule", "h9_no_such_rule")
    rules = [ms.schedule_rule.ApplyCustomRule(), ms.schedule_rule.MultiLevelTiling("SSRSRS")]
    with pytest.warns(UserWarning, match="meta_schedule.cpu.h9_no_such_rule"):
        (space,) = _context(sch.mod, rules).generate_design_space()
    assert "schedule_rule" not in space.get(space.get_block("C")).annotations
    assert len(_loops(space.mod["main"])) > 3  # tiled once the annotation is gone


def test_apply_custom_rule_needs_a_target():
    with pytest.raises(TuningError, match="has no target"):
        ms.schedule_rule.ApplyCustomRule()._initialize_with_tune_context(ms.TuneContext())


# ---------------------------------------------------------------- space generators
def test_py_space_generator_without_overrides_says_what_is_missing():
    class Gen(ms.space_generator.PySpaceGenerator):
        pass

    with pytest.raises(tvm.TVMError, match="InitializeWithTuneContext method not implemented"):
        Gen()._initialize_with_tune_context(ms.TuneContext())


# ---------------------------------------------------------------- search strategies
def _tile_matmul(sch):
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, sch.sample_perfect_tile(i, n=2))
    sch.split(j, sch.sample_perfect_tile(j, n=2))


def _drive(strategy, ctx, max_trials, per_iter, **kwargs):
    spaces = ctx.space_generator.generate_design_space(ctx.mod)
    strategy.pre_tuning(max_trials, per_iter, spaces, **kwargs)
    sizes, seen = [], []
    batch = strategy.generate_measure_candidates()
    while batch is not None:
        sizes.append(len(batch))
        seen += batch
        results = [ms.runner.RunnerResult([1e-3], None) for _ in batch]
        strategy.notify_runner_results(batch, results)
        batch = strategy.generate_measure_candidates()
    strategy.post_tuning()
    return sizes, seen


def test_replay_func_fills_each_batch_from_fresh_generator_runs():
    mod, ins, out, ref = matmul(32, 32, 8)
    space = ms.space_generator.ScheduleFn(_tile_matmul, sch_rules=[], postprocs=[])
    ctx = ms.TuneContext(mod=mod, target="llvm", space_generator=space, rand_state=0)
    strategy = ms.search_strategy.ReplayFunc()
    ctx.search_strategy = strategy
    strategy._initialize_with_tune_context(ctx)
    sizes, seen = _drive(strategy, ctx, 12, 5)
    assert sizes == [5, 5, 2]
    decisions = {str(list(c.sch.trace.decisions.values())) for c in seen}
    assert len(decisions) == 12  # each point once
    xs, got = run(seen[-1].sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-5, atol=1e-5)
    assert isinstance(ms.search_strategy.create("replay-func"), ms.search_strategy.ReplayFunc)


def _evolutionary_context(sch_fn, postprocs=()):
    mod, _, _, _ = matmul(8, 8, 8)
    space = ms.space_generator.ScheduleFn(sch_fn, sch_rules=[], postprocs=list(postprocs))
    strategy = ms.search_strategy.EvolutionarySearch(population_size=4, init_min_unmeasured=4)
    ctx = ms.TuneContext(
        mod=mod, target="llvm", space_generator=space, search_strategy=strategy, rand_state=1
    )
    return ctx, strategy


def test_evolutionary_search_sends_empty_batches_before_stopping():
    ctx, strategy = _evolutionary_context(lambda sch: None)  # a space of one point
    sizes, _ = _drive(strategy, ctx, 50, 4, database=ms.database.MemoryDatabase())
    assert sizes == [1, 0, 0, 0, 0]  # TVM's protocol: the fifth empty batch is None


def test_evolutionary_search_stops_when_no_schedule_survives_postprocs():
    class Refuse(ms.postproc.PyPostproc):
        def apply(self, sch):
            return False

    ctx, strategy = _evolutionary_context(_tile_matmul, [Refuse()])
    sizes, _ = _drive(strategy, ctx, 50, 4, database=ms.database.MemoryDatabase())
    assert sizes == []


# ---------------------------------------------------------------- features, cost models
def test_py_feature_extractor_prints_tvm_style():
    class Mine(ms.feature_extractor.PyFeatureExtractor):
        def extract_from(self, context, candidates):
            return []

    assert str(Mine()).startswith("meta_schedule.Mine(0x")
    assert isinstance(ms.feature_extractor.PerStoreFeature(), ms.FeatureExtractor)


def test_random_feature_extractor_replays_from_saved_state():
    ext = ms.feature_extractor.RandomFeatureExtractor(feature_size=7, max_block_num=3, seed=5)
    state = ext.random_state
    first = ext.extract_from(None, [None] * 4)
    assert all(f.shape[1] == 7 and 1 <= f.shape[0] <= 3 for f in first)
    ext.random_state = state
    again = ext.extract_from(None, [None] * 4)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    with pytest.raises(TuningError, match="max_block_num"):
        ms.feature_extractor.RandomFeatureExtractor(max_block_num=0)


def test_xgb_model_trains_on_random_features():
    ext = ms.feature_extractor.RandomFeatureExtractor(seed=0)
    model = ms.cost_model.XGBModel(extractor=ext, num_warmup_samples=2, backend="numpy")
    rng = np.random.default_rng(0)
    results = [ms.runner.RunnerResult(list(rng.random(3) + 0.1), None) for _ in range(8)]
    model.update(ms.TuneContext(), [None] * 8, results)
    assert model.predict(ms.TuneContext(), [None] * 5).shape == (5,)


def test_random_model_save_load_resumes_the_stream(tmp_path):
    model = ms.cost_model.RandomModel(seed=3)
    model.predict(None, [None] * 10)
    path = str(tmp_path / "random.json")
    model.save(path)
    first = model.predict(None, [None] * 6)
    model.load(path)
    np.testing.assert_array_equal(model.predict(None, [None] * 6), first)
    assert str(model).startswith("meta_schedule.RandomModel(0x")


def test_random_model_rejects_a_malformed_state(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"kind": "RandomModel", "seed": 1, "max_range": 100, "state": {"x": 1}}')
    with pytest.raises(TuningError, match="malformed generator state"):
        ms.cost_model.RandomModel().load(str(path))
    path.write_text('{"kind": "RandomModel", "seed": "1; rm", "max_range": 100}')
    with pytest.raises(TuningError, match="seed must be an int"):
        ms.cost_model.RandomModel().load(str(path))


def test_pack_sum_scores_candidates_by_the_sum_of_their_blocks():
    from minitvm.meta_schedule.cost_model.xgb_model import PackSum

    xs = [np.ones((2, 3)), np.ones((1, 3)), np.ones((3, 3))]
    pack = PackSum(xs, np.array([1.0, 2.0, 0.5]))
    pred = np.array([0.25, 0.5, 1.0, 0.1, 0.1, 0.1])
    np.testing.assert_allclose(pack.predict_with_score(pred), [0.75, 1.0, 0.3])
    grad, hess = pack.obj_square_error(pred)
    labels = np.array([1.0, 1.0, 2.0, 0.5, 0.5, 0.5])
    per_row = np.array([0.75, 0.75, 1.0, 0.3, 0.3, 0.3])
    np.testing.assert_allclose(grad, (per_row - labels) * labels)
    np.testing.assert_allclose(hess, labels)
    _, rmse = pack.rmse(pred)
    assert rmse == pytest.approx(np.sqrt(np.mean((per_row - labels) ** 2)))
    _, peak = pack.average_peak_score(pred, 2)  # predicted order: 1, 0 -> labels 2, 1
    assert peak == pytest.approx(1.0)
    with pytest.raises(TuningError, match="no labels"):
        PackSum(xs, None).rmse(pred)


# ---------------------------------------------------------------- AutoBind, inlining
def _gpu_space(mod, rule):
    target = tvm.target.Target("cuda", host="llvm")
    space = ms.space_generator.PostOrderApply(sch_rules=[rule], postprocs=[], mutator_probs={})
    ctx = ms.TuneContext(mod=mod, target=target, space_generator=space, task_name="t")
    return ctx.generate_design_space()


def test_auto_bind_gives_a_block_with_only_a_reduction_loop_unit_thread_loops():
    a = te.placeholder((6,), name="A")
    r = te.reduce_axis((0, 6), name="r")
    s = te.compute((), lambda: te.sum(a[r], axis=r), name="S")
    mod = tvm.IRModule({"main": te.create_prim_func([a, s])})
    (sch,) = _gpu_space(mod, ms.schedule_rule.AutoBind())
    loops = _loops(sch.mod["main"])
    bound = [lp for lp in loops if lp.kind is ForKind.THREAD_BINDING]
    assert [(lp.thread_binding.thread_tag, lp.extent.value) for lp in bound] == [
        ("blockIdx.x", 1),
        ("threadIdx.x", 1),
    ]
    assert not sch.trace.decisions  # one thread fits: a constant, nothing sampled
    x = np.random.default_rng(0).standard_normal(6).astype("float32")
    out = np.zeros((), "float32")
    run_prim_func(sch.mod["main"], x, out)
    np.testing.assert_allclose(out, x.sum(), rtol=1e-5, atol=1e-6)


def test_inline_constant_scalars_inlines_a_scalar_intermediate_only():
    a = te.placeholder((4, 5), name="A")
    c = te.compute((), lambda: tvm.tir.const(3.0, "float32"), name="c")
    b = te.compute((4, 5), lambda i, j: a[i, j] * c[()], name="B")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b])})
    sch = Schedule(mod)
    (sch,) = ms.schedule_rule.InlineConstantScalars().apply(sch, sch.get_block("c"))
    assert 'T.block("c")' not in sch.mod.script()
    xs, got = run(sch.mod, [(4, 5)], (4, 5))
    np.testing.assert_allclose(got, xs[0] * 3.0, rtol=1e-6)
    out_only = tvm.IRModule({"main": te.create_prim_func([c])})
    sch = Schedule(out_only)
    (sch,) = ms.schedule_rule.InlineConstantScalars().apply(sch, sch.get_block("c"))
    assert tvm.ir.structural_equal(sch.mod, out_only)  # an output block stays


# ---------------------------------------------------------------- parallel mutator
def _parallel_trace(ann):
    mod, _, _, _ = matmul(64, 64, 16)
    sch = Schedule(mod)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [4, 16])
    j0, j1 = sch.split(j, [8, 8])
    sch.reorder(i0, j0, k, i1, j1)
    sch.annotate(sch.get_block("root"), "meta_schedule.parallel", ann)
    return mod, sch


def test_mutate_parallel_offers_one_value_per_other_plan():
    mod, sch = _parallel_trace(4)
    mutator = ms.mutator.MutateParallel(max_jobs_per_core=8)
    mutator._initialize_with_tune_context(
        ms.TuneContext(mod=mod, target="llvm -num-cores=8", task_name="t")
    )
    got = set()
    for seed in range(40):
        trace = mutator.apply(sch.trace, seed)
        got.add(int(trace.insts[-1].inputs[1]))
    # outer spatial loops 4, 8 (k is a reduction): products 4, 32; the limit is 64.
    assert got == {32}  # 4 is the current plan (one loop)
    mod, sch = _parallel_trace(16)  # fuses i0 and j0: same plan as 32
    mutator._initialize_with_tune_context(
        ms.TuneContext(mod=mod, target="llvm -num-cores=8", task_name="t")
    )
    trace = mutator.apply(sch.trace, 0)
    assert int(trace.insts[-1].inputs[1]) == 4
    mutated = Schedule(mod)
    trace.apply_to_schedule(mutated, remove_postproc=True)
    assert ms.postproc.RewriteParallelVectorizeUnroll().apply(mutated)
    _, ins, out, ref = matmul(64, 64, 16)
    xs, got = run(mutated.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- builder
def test_local_builder_gives_each_artifact_its_own_folder():
    mod, _, _, _ = matmul(8, 8, 8)
    builder = ms.LocalBuilder(max_workers=1)
    results = builder.build([ms.builder.BuilderInput(mod, "llvm") for _ in range(2)])
    folders = {os.path.dirname(r.artifact_path) for r in results}
    assert len(folders) == 2
    for r in results:
        os.remove(r.artifact_path)
        os.rmdir(os.path.dirname(r.artifact_path))  # TVM's tests clean up this way


def test_unknown_custom_rule_warning_is_a_user_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod, _, _, _ = matmul(8, 8, 8)
        (sch,) = _context(mod, [ms.schedule_rule.ApplyCustomRule()]).generate_design_space()
    assert sch is not None  # no annotation: no warning


def test_mutate_compute_location_replays_a_trace_once_and_moves_the_stage():
    a = te.placeholder((16, 16), name="A")
    b = te.compute((16, 16), lambda i, j: a[i, j] * 2.0, name="B")
    c = te.compute((16, 16), lambda i, j: b[i, j] + 1.0, name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, c])})
    sch = Schedule(mod, seed=0)
    loc = sch.sample_compute_location(sch.get_block("B"), decision=-1)
    sch.compute_at(sch.get_block("B"), loc)
    mutator = ms.mutator.MutateComputeLocation()
    mutator._initialize_with_tune_context(ms.TuneContext(mod=mod, target="llvm", task_name="t"))
    calls = []
    find = mutator._find_candidates
    mutator._find_candidates = lambda *args: calls.append(1) or find(*args)
    traces = [mutator.apply(sch.trace, seed) for seed in range(6)]
    assert len(calls) == 1  # the same trace prefix: candidates computed once
    moved = Schedule(mod)
    traces[0].apply_to_schedule(moved, remove_postproc=True)
    xs, got = run(moved.mod, [(16, 16)], (16, 16))
    np.testing.assert_allclose(got, xs[0] * 2.0 + 1.0, rtol=1e-6)
