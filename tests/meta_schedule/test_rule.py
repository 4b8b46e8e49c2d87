"""Schedule rules: MultiLevelTiling (structure, vector lanes from the target, write cache),
AutoInline, AddRFactor, ParallelizeVectorizeUnroll, RandomComputeLocation, create_default."""

import pytest
from _space_workloads import fused_elementwise, matmul, softmax

from minitvm import meta_schedule as ms
from minitvm.error import ScheduleError
from minitvm.tir.schedule import Schedule

sr = ms.schedule_rule


class _Ctx:
    def __init__(self, target="llvm"):
        self.target = target
        self.mod = None
        self.rand_state = 0


def _rule(rule, target="llvm"):
    rule._initialize_with_tune_context(_Ctx(target))
    return rule


def _kinds(sch):
    return [i.kind.name for i in sch.trace.insts]


@pytest.mark.parametrize(
    "target, lanes", [("llvm -mcpu=haswell", 8), ("llvm -mcpu=skylake-avx512", 16)]
)
def test_multi_level_tiling_sizes_the_vector_tile_from_the_target(target, lanes):
    mod = matmul(64, 64, 64)[0]
    sch = Schedule(mod, seed=1)
    (out,) = _rule(sr.MultiLevelTiling(), target).apply(sch, sch.get_block("C"))
    part = [i for i in out.trace.insts if i.kind.name == "SamplePartitionedTile"]
    assert len(part) == 1 and int(part[0].attrs[2]) == lanes  # innerpart_factor
    assert out.trace.get_decision(part[0])[-1] % lanes == 0
    # SSRSRS over (i, j, k): i0 j0 i1 j1 k0 i2 j2 k1 i3 j3
    loops = out.get_loops(out.get_block("C"))
    assert len(loops) == 10
    names = [out.get(lp).loop_var.name for lp in loops]
    assert [n[0] for n in names] == list("ijijkijkij")
    assert out.get(out.get_block("C")).annotations["meta_schedule.tiling_structure"] == "SSRSRS"


def test_multi_level_tiling_forks_write_cache_levels_and_uses_an_epilogue():
    mod = matmul(64, 64, 64, relu=True)[0]
    sch = Schedule(mod, seed=2)
    outs = _rule(sr.MultiLevelTiling(reuse_write=sr.ReuseType("may", [1, 2], "global"))).apply(
        sch, sch.get_block("C")
    )
    assert len(outs) == 3
    # the relu epilogue is the write cache: computed at the tile, no extra buffer
    assert [("ReverseComputeAt" in _kinds(s)) for s in outs] == [False, True, True]
    assert all("CacheWrite" not in _kinds(s) for s in outs)


def test_multi_level_tiling_skips_spatial_blocks_and_checks_structure():
    mod = fused_elementwise()[0]
    sch = Schedule(mod)
    assert _rule(sr.MultiLevelTiling()).apply(sch, sch.get_block("U")) == [sch]
    with pytest.raises(ScheduleError, match="structure 'SXR' must be letters S and R"):
        sr.MultiLevelTiling(structure="SXR")


def test_auto_inline_inlines_intermediates_only():
    mod = fused_elementwise()[0]
    sch = Schedule(mod)
    rule = _rule(sr.AutoInline())
    for name in ("T", "S", "U"):
        rule.apply(sch, sch.get_block(name))
    assert _kinds(sch).count("ComputeInline") == 2
    assert [r.name_hint for r in [sch.get(sch.get_block("U"))]] == ["U"]  # the output stays


def test_add_rfactor_forks_small_spatial_reductions():
    mod = softmax()[0]
    sch = Schedule(mod, seed=0)
    block = sch.get_block("T_softmax_maxelem")
    outs = _rule(sr.AddRFactor(), "llvm -num-cores=2").apply(sch, block)
    assert len(outs) == 3  # as it is, and rfactored at each half of the split
    assert ["RFactor" in _kinds(s) for s in outs] == [False, True, True]


def test_parallelize_vectorize_unroll_annotates_the_root_with_a_sampled_unroll():
    mod = matmul(16, 16, 16)[0]
    sch = Schedule(mod, seed=0)
    rule = _rule(sr.ParallelizeVectorizeUnroll(unroll_max_steps=[0, 16, 64]), "llvm -num-cores=3")
    rule.apply(sch, sch.get_block("root"))
    anns = sch.get(sch.get_block("root")).annotations
    assert anns["meta_schedule.parallel"] == 3 * 16
    assert anns["meta_schedule.vectorize"] >= 16
    assert "SampleCategorical" in _kinds(sch)
    before = len(sch.trace.insts)
    rule.apply(sch, sch.get_block("C"))  # other blocks: untouched
    assert len(sch.trace.insts) == before + 1  # only the get_block


def test_random_compute_location_samples_a_location_for_producers():
    mod = softmax()[0]
    sch = Schedule(mod, seed=4)
    (out,) = _rule(sr.RandomComputeLocation()).apply(sch, sch.get_block("T_softmax_exp"))
    assert "SampleComputeLocation" in _kinds(out)
    # an output block is never moved
    (same,) = _rule(sr.RandomComputeLocation()).apply(sch, sch.get_block("T_softmax_norm"))
    assert same is sch


def test_create_default_lists_tvm_rules_plus_the_default_point():
    names = [type(r).__name__ for r in sr.create_default("llvm")]
    assert names == [
        "ApplyDefaultSchedule",
        "AutoInline",
        "AddRFactor",
        "MultiLevelTiling",
        "ParallelizeVectorizeUnroll",
        "RandomComputeLocation",
    ]
    assert type(sr.create_default("cuda")[0]).__name__ == "ApplyDefaultGPUSchedule"
