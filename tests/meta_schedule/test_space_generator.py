"""Design spaces: ScheduleFn, PostOrderApply with the default CPU rules (our DefaultSchedule
one point of it), unions, create(); every sampled schedule is legal and matches numpy."""

import random

import numpy as np
import pytest
from _space_workloads import WORKLOADS, matmul, resample, run

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm.error import TuningError
from minitvm.relax.transform.default_schedule import default_schedule_func
from minitvm.script import tir as T
from minitvm.tir.schedule import Schedule

sg = ms.space_generator


def _postprocess(space, sch):
    return all(p.apply(sch) for p in space.postprocs)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_random_batch_of_default_space_is_legal_and_matches_numpy(name):
    mod, ins, out, ref = WORKLOADS[name]()
    space = sg.PostOrderApply()
    designs = space.generate_design_space(mod)
    assert designs
    kept = 0
    batch = random.Random(name).sample(range(len(designs)), min(4, len(designs)))
    for i in batch:
        sch = resample(mod, designs[i], seed=i + 1)
        if not _postprocess(space, sch):
            continue  # a postproc refused: the candidate is dropped, never built
        kept += 1
        xs, got = run(sch.mod, ins, out)
        np.testing.assert_allclose(got, ref(*xs), rtol=1e-4, atol=1e-4)
    assert kept >= (len(batch) + 1) // 2  # most candidates survive the postprocs


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_default_schedule_is_one_point_of_the_space(name):
    mod = WORKLOADS[name]()[0]
    expected = default_schedule_func(mod["main"])
    designs = sg.PostOrderApply().generate_design_space(mod)
    hits = [
        d
        for d in designs
        if tvm.ir.structural_equal(d.mod["main"].with_attr("tir.is_scheduled", True), expected)
    ]
    assert hits, "no design space equals DefaultSchedule's output"
    # and it replays from its trace alone, as the database stores it
    replay = Schedule(mod)
    hits[0].trace.apply_to_schedule(replay, remove_postproc=False)
    tvm.ir.assert_structural_equal(replay.mod, hits[0].mod)


def test_design_spaces_are_deterministic_under_a_seed():
    mod = matmul()[0]

    def traces(seed):
        space = sg.PostOrderApply()
        space._initialize_with_tune_context(_Ctx(seed))
        return [str(s.trace) for s in space.generate_design_space(mod)]

    assert traces(7) == traces(7)
    assert traces(7) != traces(8)


class _Ctx:
    def __init__(self, seed, target="llvm"):
        self.rand_state = seed
        self.target = target  # a string, as TVM users pass it ("--num-cores" spelling too)
        self.mod = None


def test_matmul_space_tiles_ssrsrs_with_write_cache_levels():
    mod = matmul(relu=False)[0]
    designs = sg.PostOrderApply().generate_design_space(mod)
    texts = [str(d.trace) for d in designs]
    tiled = [t for t in texts if "sample_perfect_tile" in t]
    assert len(tiled) == 3  # no cache, cache at level 1, cache at level 2
    assert sum('storage_scope="global"' in t and "cache_write(" in t for t in tiled) == 2


@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def main(
        A: T.Buffer((128, 128), "float32"),
        B: T.Buffer((128, 128), "float32"),
        C: T.Buffer((128, 128), "float32"),
    ):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(128, 128, 128):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def stochastic_schedule_mm(sch):
    block_C = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_C)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_C, k)
    return sch


def test_course_stochastic_schedule_mm_works_as_a_schedule_fn():
    mod = MyModule
    space = sg.ScheduleFn(stochastic_schedule_mm)
    space._initialize_with_tune_context(_Ctx(3, "llvm --num-cores=1"))
    (sch,) = space.generate_design_space(mod)
    assert sch.trace.insts[2].kind.name == "SamplePerfectTile"
    for seed in range(3):
        cand = resample(mod, sch, seed)
        assert _postprocess(space, cand)
        a = np.random.default_rng(seed).random((128, 128), dtype=np.float32)
        b = np.random.default_rng(seed + 1).random((128, 128), dtype=np.float32)
        f = tvm.build(cand.mod, target="llvm")
        c = tvm.nd.array(np.zeros((128, 128), "float32"))
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


@pytest.mark.parametrize(
    "returned, count",
    [(lambda s: None, 1), (lambda s: s, 1), (lambda s: [s, s.copy()], 2)],
)
def test_schedule_fn_accepts_none_a_schedule_or_a_list(returned, count):
    space = sg.ScheduleFn(returned, postprocs=[], mutator_probs={})
    assert len(space.generate_design_space(matmul()[0])) == count


def test_schedule_fn_rejects_other_return_values():
    space = sg.ScheduleFn(lambda s: 3)
    with pytest.raises(TuningError, match="returned int; return None, a tir.Schedule"):
        space.generate_design_space(matmul()[0])


def test_union_concatenates_spaces_and_create_dispatches():
    mod = matmul()[0]
    union = sg.create([stochastic_mm_tile, "post-order-apply"])
    assert isinstance(union, sg.SpaceGeneratorUnion)
    n_rules = len(sg.PostOrderApply().generate_design_space(mod))
    assert len(union.generate_design_space(mod)) == 1 + n_rules
    assert isinstance(sg.create(), sg.PostOrderApply)
    assert isinstance(sg.create(stochastic_mm_tile), sg.ScheduleFn)
    with pytest.raises(TuningError, match="unknown space 'grid'"):
        sg.create("grid")


def stochastic_mm_tile(sch):
    j = sch.get_loops(sch.get_block("C"))[1]
    sch.split(j, factors=sch.sample_perfect_tile(j, n=2))


def test_block_annotated_schedule_rule_none_is_left_alone():
    mod = matmul(relu=False)[0]
    sch = Schedule(mod)
    sch.annotate(sch.get_block("C"), "schedule_rule", "None")
    designs = sg.PostOrderApply(
        sch_rules=ms.schedule_rule.create_default("llvm")[1:]
    ).generate_design_space(sch.mod)
    assert all("sample_perfect_tile" not in str(d.trace) for d in designs)
