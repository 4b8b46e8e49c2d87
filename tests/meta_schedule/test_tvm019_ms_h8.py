"""meta_schedule names TVM v0.19's meta_schedule tests use (issue 27, helper h8)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm.error import ArgumentError
from minitvm.meta_schedule.testing import dummy_object, space_generation, te_workload


def test_top_level_base_classes_are_the_subpackage_ones():
    assert ms.ScheduleRule is ms.schedule_rule.ScheduleRule
    assert ms.Postproc is ms.postproc.Postproc
    assert ms.Mutator is ms.mutator.Mutator
    assert ms.SpaceGenerator is ms.space_generator.SpaceGenerator
    assert ms.TaskScheduler is ms.task_scheduler.TaskScheduler
    assert ms.CostModel is ms.cost_model.CostModel


@pytest.mark.parametrize("kind", ["llvm", "cuda"])
def test_create_is_create_default(kind):
    def names(items):
        return [type(x).__name__ for x in items]

    assert names(ms.ScheduleRule.create(kind)) == names(ms.schedule_rule.create_default(kind))
    assert names(ms.Postproc.create(kind)) == names(ms.postproc.create_default(kind))
    assert names(ms.Mutator.create(kind)) == names(ms.mutator.create_default(kind))
    assert sum(ms.Mutator.create(kind).values()) == pytest.approx(1.0)


def test_profiler_adds_nested_scopes_and_total():
    with ms.Profiler() as prof:
        assert ms.Profiler.current() is prof
        for _ in range(2):
            with ms.Profiler.timeit("outer"):
                time.sleep(0.02)
                with ms.Profiler.timeit("inner"):
                    time.sleep(0.03)
    seconds = prof.get()
    assert set(seconds) == {"Total", "outer", "inner"}
    assert 0.06 <= seconds["inner"] <= seconds["outer"] <= seconds["Total"]
    assert seconds["outer"] >= 0.1
    assert "inner" in prof.table()
    assert ms.Profiler.current() is None
    with ms.Profiler.timeit("nobody listens"):  # no profiler: nothing recorded, no error
        pass


def test_te_workload_matmul_relu_computes_relu_of_product():
    func = tvm.te.create_prim_func(list(te_workload.matmul_relu(8, 6, 5)))
    lib = tvm.build(func, target="llvm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 5)).astype("float32")
    b = rng.standard_normal((5, 6)).astype("float32")
    out = tvm.nd.array(np.zeros((8, 6), "float32"))
    lib(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(a @ b, 0), rtol=1e-5, atol=1e-6)


def test_create_te_workload_names_the_known_workloads():
    assert isinstance(te_workload.create_te_workload("NRM", 0), tvm.tir.PrimFunc)
    with pytest.raises(ArgumentError, match="known: \\['GMM', 'NRM', 'SFM'\\]"):
        te_workload.create_te_workload("C2D", 0)


def _matmul_sketches():
    mod = tvm.te.create_prim_func(list(te_workload.matmul(32, 32, 32)))
    rules = space_generation.get_rules("llvm", ms.schedule_rule.MultiLevelTiling)
    target = tvm.target.Target("llvm --num-cores=4")
    return mod, space_generation.generate_design_space("llvm", mod, target, None, rules)


def _decisions(sch):
    trace = sch.trace
    return [(i.kind.name, trace.decisions[i]) for i in trace.insts if i in trace.decisions]


def test_check_sketches_matches_each_sketch_under_its_own_decisions():
    mod, sketches = _matmul_sketches()
    assert len(sketches) == 3  # no write cache, a cache at the outer and at the inner tile
    expected = [sch.mod for sch in reversed(sketches)]  # order does not matter
    decisions = [_decisions(sch) for sch in reversed(sketches)]
    space_generation.check_sketches(mod, sketches, expected, decisions)


def test_check_sketches_rejects_other_decisions():
    mod, sketches = _matmul_sketches()
    expected = [sch.mod for sch in sketches]
    decisions = [_decisions(sch) for sch in sketches]
    name, first = decisions[0][0]
    decisions[0] = [(name, [first[-1], *first[:-1]] if len(set(first)) > 1 else [1, 1, 1, 32])]
    decisions[0] += _decisions(sketches[0])[1:]
    with pytest.raises(AssertionError, match="expected sketch #0"):
        space_generation.check_sketches(mod, sketches, expected, decisions)


def test_dummy_builder_and_runner():
    (built,) = dummy_object.DummyBuilder().build([None])
    assert built.artifact_path == "test_path" and built.error_msg is None
    futures = dummy_object.DummyRunner(seed=1).run([None, None])
    secs = [f.result().run_secs for f in futures]
    assert all(len(s) == 2 and all(5 <= t <= 30 for t in s) for s in secs)
