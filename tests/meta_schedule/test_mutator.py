"""Mutators: each changes one decision, keeps it valid, and the mutated trace replays to a
schedule that still matches numpy."""

import numpy as np
import pytest
from _space_workloads import matmul, resample, run, softmax

from minitvm import meta_schedule as ms
from minitvm.tir.schedule import Schedule
from minitvm.tir.schedule.sampling import make_rng

mu = ms.mutator


class _Ctx:
    def __init__(self, mod):
        self.mod = mod
        self.target = "llvm -num-cores=2"
        self.rand_state = 0


def _tiled_design(mod):
    # seeded: under TVM's MutateParallel rules some random tilings leave no other plan
    ctx = ms.TuneContext(
        mod=mod,
        target="llvm -num-cores=2",
        space_generator=ms.space_generator.PostOrderApply(),
        rand_state=0,
    )
    designs = ctx.generate_design_space()
    return next(d for d in designs if "sample_perfect_tile" in str(d.trace))


def _replay_and_check(mod, trace, ins, out, ref):
    sch = Schedule(mod)
    trace.apply_to_schedule(sch, remove_postproc=True)
    for p in ms.postproc.create_default("llvm"):
        assert p.apply(sch)
    xs, got = run(sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-4, atol=1e-4)


def test_mutate_tile_size_moves_a_factor_and_replays():
    mod, ins, out, ref = matmul(32, 32, 32, relu=True)
    trace = _tiled_design(mod).trace
    m = mu.MutateTileSize()
    m._initialize_with_tune_context(_Ctx(mod))
    new = m.apply(trace, make_rng(1))
    assert new is not None
    changed = [
        (trace.get_decision(i), new.get_decision(i))
        for i in new.insts
        if i.kind.name.startswith("Sample") and trace.get_decision(i) != new.get_decision(i)
    ]
    assert len(changed) == 1
    old, now = changed[0]
    assert np.prod(old) == np.prod(now)
    _replay_and_check(mod, new, ins, out, ref)


def test_mutate_tile_size_accepts_numpy_generators_and_is_deterministic():
    mod = matmul(32, 32, 32)[0]
    trace = _tiled_design(mod).trace
    a = mu.MutateTileSize().apply(trace, np.random.default_rng(3))
    b = mu.MutateTileSize().apply(trace, np.random.default_rng(3))
    assert str(a) == str(b)


def test_mutate_unroll_changes_the_sampled_depth():
    mod, ins, out, ref = matmul(32, 32, 32, relu=True)
    trace = _tiled_design(mod).trace
    new = mu.MutateUnroll().apply(trace, make_rng(0))
    cat = next(i for i in new.insts if i.kind.name == "SampleCategorical")
    assert new.get_decision(cat) != trace.get_decision(cat)
    _replay_and_check(mod, new, ins, out, ref)


def test_mutate_parallel_changes_the_parallel_extent():
    mod, ins, out, ref = matmul(32, 32, 32, relu=True)
    trace = _tiled_design(mod).trace
    m = mu.MutateParallel()
    m._initialize_with_tune_context(_Ctx(mod))
    new = m.apply(trace, make_rng(0))
    ann = lambda t: [
        i.inputs[1]
        for i in t.insts
        if i.kind.name == "Annotate" and i.attrs[0] == "meta_schedule.parallel"
    ]
    assert ann(new) != ann(trace)
    _replay_and_check(mod, new, ins, out, ref)


def test_mutate_compute_location_picks_another_legal_location():
    mod, ins, out, ref = softmax()
    sch = Schedule(mod, seed=0)
    block = sch.get_block("T_softmax_exp")
    sch.compute_at(block, sch.sample_compute_location(block))
    m = mu.MutateComputeLocation()
    m._initialize_with_tune_context(_Ctx(mod))
    new = m.apply(sch.trace, make_rng(2))
    assert new is not None
    inst = next(i for i in new.insts if i.kind.name == "SampleComputeLocation")
    assert new.get_decision(inst) != sch.trace.get_decision(inst)
    _replay_and_check(mod, new, ins, out, ref)


def test_mutators_return_none_when_nothing_to_change():
    sch = Schedule(matmul(8, 8, 8)[0])
    sch.get_loops(sch.get_block("C"))
    for m in (
        mu.MutateTileSize(),
        mu.MutateUnroll(),
        mu.MutateParallel(),
        mu.MutateComputeLocation(),
    ):
        assert m.apply(sch.trace, make_rng(0)) is None


def test_create_default_probabilities():
    probs = mu.create_default("llvm")
    assert pytest.approx(sum(probs.values())) == 1.0
    assert {type(m).__name__ for m in probs} == {
        "MutateTileSize",
        "MutateComputeLocation",
        "MutateUnroll",
        "MutateParallel",
    }


def test_resampled_designs_keep_their_structure():
    mod = matmul(32, 32, 32)[0]
    design = _tiled_design(mod)
    again = resample(mod, design, 9)
    assert [i.kind.name for i in again.trace.insts] == [i.kind.name for i in design.trace.insts]
