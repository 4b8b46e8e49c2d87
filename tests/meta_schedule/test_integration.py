"""Relax integration: task extraction (twins deduplicated, weighted by calls), tune_relax,
compile_relax and MetaScheduleApplyDatabase give a model that still matches."""

import json

import numpy as np
import pytest
from _mscore_workloads import fast_runner, space, split_first_loops

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm import relax
from minitvm.error import TuningError


def _two_layer_model():
    """x @ W1 -> relu -> @ W2 -> relu: two kernels of the same shape (one task, weight 2)."""
    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((16, 16)).astype("float32") for _ in range(2))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(relax.op.matmul(x, relax.const(w1))))
            y = bb.emit(relax.op.nn.relu(relax.op.matmul(h, relax.const(w2))))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    ref = lambda a: np.maximum(np.maximum(a @ w1, 0) @ w2, 0)
    return bb.get(), ref


def _run(ex, x):
    return relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()


def test_extract_tasks_deduplicates_and_weights():
    mod, _ = _two_layer_model()
    tasks = ms.relax_integration.extract_tasks(mod, "llvm")
    assert len(tasks) == 1
    (task,) = tasks
    assert task.weight == 2 and task.flops == pytest.approx(
        2 * 4 * 16 * 16 + 2 * 4 * 16 * 0, rel=0.2
    )
    assert next(iter(task.mod.get_global_vars())).name_hint == "main"


def test_tune_relax_compile_relax_and_apply_database(tmp_path):
    mod, ref = _two_layer_model()
    db = ms.relax_integration.tune_relax(
        mod,
        None,
        "llvm",
        str(tmp_path),
        max_trials_global=3,
        num_trials_per_iter=3,
        space=space(split_first_loops),
        runner=fast_runner(),
        seed=0,
        verbose=False,
    )
    assert len(db) == 3 and all(r.run_secs for r in db.get_all_tuning_records())
    x = np.random.default_rng(1).standard_normal((4, 16)).astype("float32")
    ex = ms.relax_integration.compile_relax(db, mod, "llvm")
    np.testing.assert_allclose(_run(ex, x), ref(x), rtol=1e-4, atol=1e-4)

    # the pass: tuned kernels replace the unscheduled ones and are marked scheduled
    lowered = ms.relax_integration.lower_to_kernels(mod, "llvm")
    best = db.query_ir_module(ms.relax_integration.extract_tasks(mod, "llvm")[0].mod, "llvm")
    with db, tvm.target.Target("llvm"):
        applied = relax.transform.MetaScheduleApplyDatabase()(lowered)
    prims = [(gv, f) for gv, f in applied.functions_items() if isinstance(f, tvm.tir.PrimFunc)]
    assert prims and all(f.attrs["tir.is_scheduled"] for _, f in prims)
    for gv, f in prims:
        assert f.attrs["global_symbol"] == gv.name_hint
        want = best["main"].with_attr("global_symbol", gv.name_hint)
        tvm.ir.assert_structural_equal(f, want.with_attr("tir.is_scheduled", True))
    same = relax.transform.MetaScheduleApplyDatabase(work_dir=str(tmp_path))(lowered)
    tvm.ir.assert_structural_equal(same, applied)
    np.testing.assert_allclose(_run(relax.build(applied, "llvm"), x), ref(x), rtol=1e-4, atol=1e-4)


def test_apply_database_without_database_says_how():
    mod, _ = _two_layer_model()
    with pytest.raises(TuningError, match="needs a database"):
        relax.transform.MetaScheduleApplyDatabase()(mod)


def test_tune_relax_times_cpu_kernels_with_weights_flushed(monkeypatch):
    """A layer in a model finds its weights evicted by the other layers: tune_relax's default
    CPU runner flushes every argument but the first before each timed call; a Runner object
    passed in is used as it is."""
    from minitvm.meta_schedule import relax_integration

    mod, _ = _two_layer_model()
    seen = []

    def fake(**kw):
        seen.append(kw["runner"])
        return ms.MemoryDatabase()  # nothing tuned: nothing to check in the model

    monkeypatch.setattr(relax_integration, "tune_tasks", fake)
    ms.relax_integration.tune_relax(mod, None, "llvm", None, 4, verbose=False)
    assert isinstance(seen[-1], ms.LocalRunner)
    assert seen[-1].evaluator_config.enable_cpu_cache_flush is True
    mine = fast_runner()
    ms.relax_integration.tune_relax(mod, None, "llvm", None, 4, runner=mine, verbose=False)
    assert seen[-1] is mine and mine.evaluator_config.enable_cpu_cache_flush is False


def test_runner_with_cache_flush_times_and_checks_a_candidate(tmp_path):
    from minitvm.meta_schedule import runner as _runner

    task = ms.relax_integration.extract_tasks(_two_layer_model()[0], "llvm")[0]
    config = ms.EvaluatorConfig(number=1, repeat=2, min_repeat_ms=0, enable_cpu_cache_flush=True)
    args = ms.ArgInfo.from_entry_func(task.mod)
    payload = _runner.run_payload(_runner.RunnerInput("x", "cpu", args), config, None, 0)
    assert payload["cache_flush"] is True
    runner = ms.LocalRunner(evaluator_config=config)
    builder = ms.LocalBuilder(max_workers=1)
    (built,) = builder.build([ms.builder.BuilderInput(task.mod, "llvm")])
    assert runner.set_reference(built.artifact_path, args, str(tmp_path / "ref.npz")) is None
    (result,) = [f.result() for f in runner.run([ms.runner.RunnerInput(
        built.artifact_path, "cpu", args)])]  # fmt: skip
    assert result.error_msg is None and len(result.run_secs) == 2


def test_validation_in_the_model_keeps_the_default_where_it_is_faster():
    """A pick that only won in the worker (here: given a fake worker time) is timed inside
    the model beside the default; the in-model times replace both records' and the default,
    far faster there, is what compile_relax then builds. The model still matches numpy."""
    from minitvm.meta_schedule import relax_integration as ri
    from minitvm.meta_schedule.database import _num_samples

    rng = np.random.default_rng(0)
    w = rng.standard_normal((128, 128)).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((128, 128), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, relax.const(w)))
        bb.emit_func_output(out)
    mod = bb.get()
    (task,) = ri.extract_tasks(mod, "llvm")
    ctx = ms.TuneContext(mod=task.mod, target="llvm", space_generator="post-order-apply")
    default = next(s for s in ctx.generate_design_space() if _num_samples(s.trace) == 0)
    naive = tvm.tir.Schedule(task.mod, seed=0)
    _, j, _ = naive.get_loops(naive.get_block("T_matmul"))
    naive.split(j, factors=naive.sample_perfect_tile(j, n=2))  # else naive: far slower
    db = ms.MemoryDatabase()
    args = ms.ArgInfo.from_entry_func(task.mod)
    for sch, secs in ((default, [1e-3]), (naive, [1e-4])):  # the worker "saw" naive win
        db.commit_tuning_record(
            ms.TuningRecord(sch.trace, ms.Workload(task.mod), secs, "llvm", args)
        )
    assert _num_samples(db.query_tuning_record(task.mod, "llvm").trace) > 0
    report = ri.validate_picks_in_model(db, mod, None, "llvm", [task], rounds=2)
    assert [r["faster_in_model"] for r in report] == ["default"]
    assert report[0]["tuned_in_model_secs"] > 3 * report[0]["default_in_model_secs"] > 0
    kept = db.query_tuning_record(task.mod, "llvm")
    assert _num_samples(kept.trace) == 0 and kept.run_secs == [report[0]["default_in_model_secs"]]
    a = rng.standard_normal((128, 128)).astype("float32")
    ex = ms.relax_integration.compile_relax(db, mod, "llvm")
    np.testing.assert_allclose(_run(ex, a), a @ w, rtol=1e-4, atol=1e-3)
    # nothing to check when the default is already the pick; symbolic inputs are skipped
    assert ri.validate_picks_in_model(db, mod, None, "llvm", [task]) == []
    n = tvm.tir.Var("n", "int64")
    bb = relax.BlockBuilder()
    y = relax.Var("y", relax.TensorStructInfo((n, 128), "float32"))
    with bb.function("main", [y]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(y, relax.const(w)))
        bb.emit_func_output(out)
    assert ri._random_inputs(bb.get(), None) is None


def test_a_model_that_refuses_random_inputs_skips_the_check(monkeypatch, tmp_path):
    """Tuning's result stands when the in-model check cannot run the model: the reason goes to
    work_dir/validated_in_model.json."""
    from minitvm.error import ArgumentError
    from minitvm.meta_schedule import relax_integration

    mod, _ = _two_layer_model()
    db = ms.MemoryDatabase()
    monkeypatch.setattr(relax_integration, "tune_tasks", lambda **kw: db)

    def refuse(*args, **kwargs):
        raise ArgumentError("index 9 is out of range for 'indices'")

    monkeypatch.setattr(relax_integration, "validate_picks_in_model", refuse)
    got = ms.relax_integration.tune_relax(mod, None, "llvm", str(tmp_path), 4, verbose=False)
    assert got is db
    report = json.loads((tmp_path / "validated_in_model.json").read_text())
    assert "out of range for 'indices'" in report[0]["skipped"]
