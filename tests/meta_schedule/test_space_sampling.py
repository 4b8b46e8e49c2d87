"""Issue 15 Deliver 1: sampling primitives (sample_perfect_tile, sample_categorical,
sample_compute_location) deterministic under a seed, decisions in the trace, replay with
other decisions, the trace printed as Python and stored as JSON (read as data)."""

import ast
import json

import numpy as np
import pytest
from _space_workloads import matmul, run, softmax

import minitvm as tvm
from minitvm.error import ScheduleError
from minitvm.tir.schedule import Schedule, Trace


def _mm_sampled(seed):
    sch = Schedule(matmul(64, 64, 64)[0], seed=seed)
    j = sch.get_loops(sch.get_block("C"))[1]
    f = sch.sample_perfect_tile(j, n=4, max_innermost_factor=16)
    sch.split(j, factors=f)
    v = sch.sample_categorical([1, 2, 4], [0.2, 0.3, 0.5])
    return sch, f, v


def test_sampling_is_deterministic_under_a_seed():
    a, b = _mm_sampled(11), _mm_sampled(11)
    assert str(a[0].trace) == str(b[0].trace)
    assert [a[0].get(v) for v in a[1]] == [b[0].get(v) for v in b[1]]
    assert len({str(_mm_sampled(s)[0].trace) for s in range(8)}) > 1  # seeds matter


def test_perfect_tile_factors_multiply_to_the_extent_and_respect_the_innermost_limit():
    for seed in range(20):
        sch, f, _ = _mm_sampled(seed)
        values = [sch.get(v) for v in f]
        assert np.prod(values) == 64 and values[-1] <= 16


def test_copies_and_fork_seed_are_deterministic():
    s1, s2 = Schedule(matmul()[0], seed=5), Schedule(matmul()[0], seed=5)
    assert s1.fork_seed() == s2.fork_seed()
    c1, c2 = s1.copy(), s2.copy()
    j1, j2 = c1.get_loops(c1.get_block("C"))[1], c2.get_loops(c2.get_block("C"))[1]
    assert c1.sample_perfect_tile(j1, 3, 8) and str(c1.trace) == str(
        (c2.sample_perfect_tile(j2, 3, 8), c2.trace)[1]
    )


def test_decisions_are_recorded_and_replay_to_a_structurally_equal_module():
    sch, _, _ = _mm_sampled(3)
    decisions = [d for d in sch.trace.decisions.values()]
    assert len(decisions) == 2
    fresh = Schedule(matmul(64, 64, 64)[0], seed=999)  # another seed: the decisions rule
    sch.trace.apply_to_schedule(fresh)
    tvm.ir.assert_structural_equal(fresh.mod, sch.mod)


def test_with_decision_replays_other_factors_and_matches_numpy():
    mod, ins, out, ref = matmul(64, 64, 64)
    sch = Schedule(mod, seed=0)
    j = sch.get_loops(sch.get_block("C"))[1]
    sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=64))
    inst = next(i for i in sch.trace.insts if i.kind.name == "SamplePerfectTile")
    new = sch.trace.with_decision(inst, [2, 32], remove_postproc=True)
    other = Schedule(mod)
    new.apply_to_schedule(other)
    extents = [int(other.get(lp).extent) for lp in other.get_loops(other.get_block("C"))]
    assert extents == [64, 2, 32, 64]
    xs, got = run(other.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-4)
    bad = sch.trace.with_decision(inst, [3, 21], remove_postproc=True)
    with pytest.raises(ScheduleError, match=r"decision \[3, 21\] is not 2 positive factors"):
        bad.apply_to_schedule(Schedule(mod))


def test_sample_compute_location_is_recorded_and_replays():
    mod = softmax()[0]
    sch = Schedule(mod, seed=1)
    block = sch.get_block("T_softmax_exp")
    loc = sch.sample_compute_location(block)
    sch.compute_at(block, loc)
    inst = next(i for i in sch.trace.insts if i.kind.name == "SampleComputeLocation")
    assert isinstance(sch.trace.get_decision(inst), int)
    again = Schedule(mod)
    sch.trace.apply_to_schedule(again)
    tvm.ir.assert_structural_equal(again.mod, sch.mod)


def test_trace_shows_as_python_with_decisions(capsys):
    sch, _, _ = _mm_sampled(2)
    sch.trace.show()
    text = capsys.readouterr().out
    ast.parse(text)  # valid Python
    assert "sch.sample_perfect_tile(loop=l2, n=4, max_innermost_factor=16, decision=[" in text
    assert "sch.sample_categorical(candidates=[1, 2, 4], probs=[0.2, 0.3, 0.5], decision=" in text


def test_trace_json_round_trip_replays_equal():
    sch, _, _ = _mm_sampled(4)
    text = json.dumps(sch.trace.as_json())
    other = Schedule(matmul(64, 64, 64)[0])
    Trace.apply_json_to_schedule(json.loads(text), other)
    tvm.ir.assert_structural_equal(other.mod, sch.mod)


def test_trace_json_is_read_as_data_never_executed():
    sch, _, _ = _mm_sampled(4)
    data = sch.trace.as_json()
    data[0][0][0] = "__import__('os').system('true')"
    with pytest.raises(ScheduleError, match="unknown instruction kind"):
        Trace.apply_json_to_schedule(data, Schedule(matmul(64, 64, 64)[0]))
    data = sch.trace.as_json()
    data[0][3][1] = ["l2", "open('x')"]  # an input naming nothing defined
    with pytest.raises(ScheduleError, match="names no random variable"):
        Trace.apply_json_to_schedule(data, Schedule(matmul(64, 64, 64)[0]))
