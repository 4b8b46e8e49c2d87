"""The GPU design space (issue 26): default rules, postprocs and mutators for GPU targets, the
default GPU schedule as one replayable point, candidates that build and match numpy on OpenCL
(pocl), limits a candidate must not exceed, and tuning end to end (cuda without a device: a
clear error naming it)."""

import tempfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm import te, topi
from minitvm.dlight.gpu import default_gpu_schedule_func
from minitvm.error import ScheduleError, TuningError
from minitvm.ir import structural_equal
from minitvm.tir.schedule import Schedule
from minitvm.tir.schedule.trace import Trace
from minitvm.tir.schedule.tree import walk
from minitvm.tir.stmt import For, ForKind

OPENCL = tvm.target.Target("opencl")
needs_opencl = pytest.mark.skipif(not tvm.opencl(0).exist, reason="no OpenCL device")


def _matmul(n=64):
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c]), lambda x, y: x @ y


def _conv2d():
    x = te.placeholder((1, 8, 10, 10), name="X")
    w = te.placeholder((16, 8, 3, 3), name="W")
    out = topi.nn.conv2d_nchw(x, w, 1, 1, 1)

    def ref(xv, wv):
        pad = np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1)))
        cols = np.stack([pad[0, :, r : r + 10, s : s + 10] for r in range(3) for s in range(3)])
        wk = wv.reshape(16, 8, 9).transpose(0, 2, 1)  # (f, rs, c)
        return np.einsum("frc,rchw->fhw", wk, cols.transpose(0, 1, 2, 3))[None]

    return te.create_prim_func([x, w, out]), ref


def _softmax():
    a = te.placeholder((16, 40), name="A")
    k = te.reduce_axis((0, 40), name="k")
    m = te.compute((16,), lambda i: te.max(a[i, k], axis=k), name="M")
    e = te.compute((16, 40), lambda i, j: te.exp(a[i, j] - m[i]), name="E")
    k2 = te.reduce_axis((0, 40), name="k2")
    s = te.compute((16,), lambda i: te.sum(e[i, k2], axis=k2), name="S")
    o = te.compute((16, 40), lambda i, j: e[i, j] / s[i], name="O")

    def ref(x):
        z = np.exp(x - x.max(1, keepdims=True))
        return z / z.sum(1, keepdims=True)

    return te.create_prim_func([a, o]), ref


def _row_sum():
    a = te.placeholder((32, 300), name="A")
    k = te.reduce_axis((0, 300), name="k")
    s = te.compute((32,), lambda i: te.sum(a[i, k], axis=k), name="S")
    return te.create_prim_func([a, s]), lambda x: x.sum(1)


def _elementwise():
    a = te.placeholder((50, 70), name="A")
    b = te.compute((50, 70), lambda i, j: a[i, j] * 2.0 + 1.0, name="B")
    return te.create_prim_func([a, b]), lambda x: x * 2.0 + 1.0


WORKLOADS = {
    "matmul": _matmul,
    "conv2d": _conv2d,
    "softmax": _softmax,
    "reduction": _row_sum,
    "elementwise": _elementwise,
}


def _context(func, target=OPENCL):
    mod = tvm.IRModule({"main": func})
    space = ms.space_generator.PostOrderApply()
    return mod, ms.TuneContext(mod=mod, target=target, space_generator=space, task_name="t")


def _sample(mod, design, postprocs, seed):
    """`design`'s trace replayed with fresh decisions, then the postprocs (None: refused)."""
    sch = Schedule(mod, seed=seed)
    Trace(design.trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
    sch.enter_postproc()
    return sch if all(p.apply(sch) for p in postprocs) else None


def _run_opencl(mod, func, ref, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [[int(d) for d in b.shape] for b in func.buffer_map.values()]
    ins = [rng.standard_normal(s).astype("float32") for s in shapes[:-1]]
    dev = tvm.opencl(0)
    nds = [tvm.nd.array(x, dev) for x in ins] + [tvm.nd.empty(shapes[-1], "float32", dev)]
    tvm.build(mod, target=OPENCL)["main"](*nds)
    return nds[-1].numpy(), ref(*ins)


@pytest.mark.parametrize("kind", ["opencl", "cuda", "nvptx"])
def test_gpu_targets_have_default_rules_postprocs_and_mutators(kind):
    target = tvm.target.Target(kind)
    rules = ms.schedule_rule.create_default(target)
    names = [type(r).__name__ for r in rules]
    assert names[0] == "ApplyDefaultGPUSchedule"
    assert {"MultiLevelTiling", "AutoBind", "ParallelizeVectorizeUnroll"} <= set(names)
    mlt = next(r for r in rules if isinstance(r, ms.schedule_rule.MultiLevelTiling))
    assert mlt.structure == "SSSRRSRS"
    assert mlt.tile_binds == ["blockIdx.x", "vthread.x", "threadIdx.x"]
    posts = [type(p).__name__ for p in ms.postproc.create_default(target)]
    assert posts[-1] == "VerifyGPUCode"
    assert {"RewriteCooperativeFetch", "RewriteUnboundBlock"} <= set(posts)
    muts = {type(m).__name__ for m in ms.mutator.create_default(target)}
    assert muts == {"MutateTileSize", "MutateUnroll", "MutateThreadBinding"}


def test_cpu_defaults_are_unchanged():
    names = [type(r).__name__ for r in ms.schedule_rule.create_default("llvm")]
    assert names[0] == "ApplyDefaultSchedule" and "AutoBind" not in names
    assert "VerifyGPUCode" not in [type(p).__name__ for p in ms.postproc.create_default("llvm")]


@pytest.mark.parametrize("name", ["matmul", "conv2d", "softmax", "elementwise"])
def test_default_gpu_point_equals_dlight_and_its_trace_replays(name):
    func, _ = WORKLOADS[name]()
    expected = default_gpu_schedule_func(
        func, OPENCL.max_num_threads, OPENCL.max_shared_memory_per_block
    )
    mod, ctx = _context(func)
    (point,) = ms.schedule_rule.ApplyDefaultGPUSchedule().apply_function(Schedule(mod))
    # the rule's target comes from the TuneContext; without one dlight's defaults (256, 32 KiB)
    # are the opencl target's limits too
    assert structural_equal(point.mod["main"], expected)
    again = Schedule(mod)
    Trace.apply_json_to_schedule(point.trace.as_json(), again)
    assert structural_equal(again.mod["main"], expected)
    assert any(structural_equal(s.mod["main"], expected) for s in ctx.generate_design_space())


def test_multi_level_tiling_binds_tiles_and_stages_operands_in_shared():
    func, _ = _matmul(64)
    mod, ctx = _context(func)
    tiled = [s for s in ctx.generate_design_space() if "tiling_structure" in s.mod["main"].script()]
    assert len(tiled) == 1
    for seed in range(20):
        sch = _sample(mod, tiled[0], ctx.space_generator.postprocs, seed)
        if sch is not None:
            break
    assert sch is not None
    loops = [s for s, _ in walk(sch.mod["main"].body) if isinstance(s, For)]
    tags = [lp.thread_binding.thread_tag for lp in loops if lp.kind is ForKind.THREAD_BINDING]
    assert {"blockIdx.x", "vthread.x", "threadIdx.x"} <= set(tags)
    # the tile's thread loop and each cooperative fetch's thread loop have one extent
    extents = {int(lp.extent) for lp in loops if lp.thread_binding is not None
               and lp.thread_binding.thread_tag == "threadIdx.x"}  # fmt: skip
    assert len(extents) == 1
    text = sch.mod["main"].script()
    assert "A_shared" in text and "B_shared" in text and "cooperative_fetch" not in text


def test_verify_gpu_code_rejects_a_candidate_over_the_thread_limit():
    func, _ = _elementwise()
    mod, ctx = _context(func)
    verify = ms.postproc.VerifyGPUCode()
    verify._initialize_with_tune_context(ctx)
    for threads, ok in ((512, False), (128, True)):  # opencl: 256 threads per block
        sch = Schedule(mod)
        i, j = sch.get_loops(sch.get_block("B"))
        bx, tx = sch.split(sch.fuse(i, j), [None, threads])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
        assert verify.apply(sch) is ok


def test_verify_gpu_code_rejects_a_candidate_over_the_shared_memory_limit():
    func, _ = _matmul(128)
    mod, ctx = _context(func)
    verify = ms.postproc.VerifyGPUCode()
    verify._initialize_with_tune_context(ctx)
    # opencl: 32 KiB per block; staged at the k-tile loop the 64-row tiles of A and B take
    # 2 x 64 x 8 x 4 bytes, staged above it (all of k) 2 x 64 x 128 x 4 = 64 KiB
    for stage_whole_k, ok in ((True, False), (False, True)):
        sch = Schedule(mod)
        block = sch.get_block("C")
        i, j, k = sch.get_loops(block)
        io, ii = sch.split(i, [None, 64])
        jo, ji = sch.split(j, [None, 64])
        ko, ki = sch.split(k, [None, 8])
        sch.reorder(io, jo, ko, ii, ji, ki)
        sch.bind(io, "blockIdx.x")
        sch.bind(jo, "blockIdx.y")
        for index in (0, 1):
            fetch = sch.cache_read(block, index, "shared")
            sch.compute_at(fetch, jo if stage_whole_k else ko)
        assert verify.apply(sch) is ok


@needs_opencl
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_sampled_gpu_candidates_build_and_match_numpy_on_opencl(name):
    func, ref = WORKLOADS[name]()
    mod, ctx = _context(func)
    designs = ctx.generate_design_space()
    assert len(designs) >= 2  # the default point and the rules' space
    built = 0
    for d, design in enumerate(designs):
        for seed in range(8):
            sch = _sample(mod, design, ctx.space_generator.postprocs, seed + 10 * d)
            if sch is None:
                continue  # over a limit: dropped, never built
            got, want = _run_opencl(sch.mod, func, ref, seed)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            built += 1
            break
    assert built == len(designs)


@needs_opencl
def test_tune_tir_on_opencl_returns_a_kernel_that_matches_numpy():
    func, ref = _matmul(64)
    mod = tvm.IRModule({"main": func})
    with tempfile.TemporaryDirectory() as work_dir:
        db = ms.tune_tir(
            mod, target=OPENCL, work_dir=work_dir, max_trials_global=2, num_trials_per_iter=2
        )
        measured = [r for r in db.get_all_tuning_records() if r.run_secs]
        assert measured  # measured on the OpenCL device, each checked against the reference
        sch = ms.tir_integration.compile_tir(db, mod, OPENCL)
    got, want = _run_opencl(sch.mod, func, ref)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(tvm.cuda(0).exist, reason="this machine has a CUDA device")
def test_tune_for_cuda_without_a_device_fails_naming_it():
    func, _ = _matmul(32)
    with (
        tempfile.TemporaryDirectory() as work_dir,
        pytest.raises(TuningError, match=r"cuda\(0\).*CUDA is not available"),
    ):
        mod = tvm.IRModule({"main": func})
        ms.tune_tir(mod, "cuda", work_dir, max_trials_global=2, num_trials_per_iter=2)


def test_cuda_candidates_build_to_ptx():
    func, _ = _matmul(64)
    cuda = tvm.target.Target("cuda")
    mod, ctx = _context(func, cuda)
    designs = ctx.generate_design_space()
    built = 0
    for d, design in enumerate(designs):
        for seed in range(8):
            sch = _sample(mod, design, ctx.space_generator.postprocs, seed + 10 * d)
            if sch is not None:
                tvm.build(sch.mod, target=cuda)
                built += 1
                break
    assert built == len(designs)


def test_auto_bind_samples_threads_for_an_unbound_spatial_block():
    func, _ = _elementwise()
    mod, ctx = _context(func)
    rule = ms.schedule_rule.AutoBind()
    rule._initialize_with_tune_context(ctx)
    sch = Schedule(mod)
    (out,) = rule.apply(sch, sch.get_block("B"))
    assert any(i.kind.name == "SampleCategorical" for i in out.trace.insts)
    tags = [sch_lp.thread_binding.thread_tag for sch_lp, _ in walk(out.mod["main"].body)
            if isinstance(sch_lp, For) and sch_lp.thread_binding is not None]  # fmt: skip
    assert tags == ["blockIdx.x", "threadIdx.x"]


def test_mutate_thread_binding_changes_auto_binds_thread_count():
    func, _ = _elementwise()
    mod, ctx = _context(func)
    rule = ms.schedule_rule.AutoBind()
    rule._initialize_with_tune_context(ctx)
    sch = Schedule(mod)
    (out,) = rule.apply(sch, sch.get_block("B"))
    trace = out.trace
    new = ms.mutator.MutateThreadBinding().apply(trace, 0)
    assert new is not None
    (inst,) = [i for i in new.insts if i.kind.name == "SampleCategorical"]
    (old_inst,) = [i for i in trace.insts if i.kind.name == "SampleCategorical"]
    assert new.get_decision(inst) != trace.get_decision(old_inst)


def test_tile_binds_over_a_reduction_level_is_refused_with_the_fix():
    with pytest.raises(ScheduleError, match="must bind the leading spatial levels"):
        ms.schedule_rule.MultiLevelTiling(structure="SRS", tile_binds=["blockIdx.x", "threadIdx.x"])
