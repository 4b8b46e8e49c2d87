"""TVM 0.24's renamed names (blocks became "SBlock"s; dlight moved under s_tir and gained
LowBatchGEMV and `analysis`; relax.transform.MetaScheduleTuneTIR) as minitvm's own objects,
and TensorIR written and scheduled with them, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
import minitvm.dlight as dl
from minitvm import te
from minitvm.driver import lower_gpu
from minitvm.error import ArgumentError, TuningError
from minitvm.script import tir as T
from minitvm.target import Target
from minitvm.testing.tir_interp import run_prim_func


def test_renamed_names_are_the_same_objects():
    from minitvm.s_tir.dlight import analysis as s_tir_analysis
    from minitvm.s_tir.dlight.gpu import LowBatchGEMV

    from minitvm.tir.schedule import schedule as schedule_module

    assert T.sblock is T.block
    assert T.sblock_alloc_buffer is T.alloc_buffer
    assert T.sblock_attr is T.block_attr
    assert tvm.s_tir.Schedule.get_sblock is tvm.tir.Schedule.get_block
    assert schedule_module.SBlockRV is tvm.tir.schedule.BlockRV
    assert tvm.s_tir.SBlockScope is tvm.tir.schedule.BlockScope
    assert s_tir_analysis is dl.analysis
    assert dl.analysis.BlockInfo is dl.analysis.SBlockInfo
    assert dl.analysis.get_block_info is dl.analysis.get_sblock_info
    assert LowBatchGEMV is dl.gpu.LowBatchGEMV
    assert tvm.relax.transform.MetaScheduleTuneTIR.__module__.endswith("meta_schedule")


# TVM 0.24's tir_transformation tutorial kernel: Y = A @ B into a function-level buffer, then
# C = relu(Y); every block-level name is the 0.24 spelling
@T.prim_func
def mm_relu(
    A: T.Buffer((64, 32), "float32"),
    B: T.Buffer((32, 48), "float32"),
    C: T.Buffer((64, 48), "float32"),
):
    T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
    Y = T.sblock_alloc_buffer((64, 48), "float32")
    for i, j, k in T.grid(64, 48, 32):
        with T.sblock("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(64, 48):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.sblock_attr({"note": "relu"})
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


def _mm_relu_inputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32)).astype("float32")
    b = rng.standard_normal((32, 48)).astype("float32")
    return a, b, np.maximum(a @ b, 0)


def test_sblock_names_parse_schedule_build_and_match_numpy():
    func = mm_relu
    assert [buf.name for buf in func.body.block.alloc_buffers] == ["Y"]  # the root allocates it
    sch = tvm.s_tir.Schedule(func)
    block_y = sch.get_sblock("Y")
    assert isinstance(block_y, tvm.tir.schedule.BlockRV)
    _, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(j0, k, j1)
    text = sch.mod.script()
    assert "T.block_attr" in text or "T.sblock_attr" in text, text  # the annotation survives
    assert tvm.ir.structural_equal(tvm.script.from_source(text), sch.mod)  # prints, parses back
    lib = tvm.build(sch.mod, target="llvm")
    a, b, want = _mm_relu_inputs()
    c = tvm.runtime.tensor(np.zeros((64, 48), "float32"))
    lib["mm_relu"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-5)


def test_sblock_alloc_buffer_inside_a_block_allocates_in_that_block():
    @T.prim_func
    def two_stage(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        with T.sblock("outer"):
            tmp = T.sblock_alloc_buffer((8,), "float32")
            for i in range(8):
                with T.sblock("double"):
                    vi = T.axis.spatial(8, i)
                    tmp[vi] = A[vi] * T.float32(2)
            for i in range(8):
                with T.sblock("inc"):
                    vi = T.axis.spatial(8, i)
                    B[vi] = tmp[vi] + T.float32(1)

    sch = tvm.s_tir.Schedule(two_stage)
    outer = sch.get(sch.get_sblock("outer"))
    assert [buf.name for buf in outer.alloc_buffers] == ["tmp"]
    a = np.arange(8, dtype="float32")
    b = np.zeros(8, "float32")
    run_prim_func(two_stage, a, b)
    np.testing.assert_allclose(b, a * 2 + 1)


# ---------------------------------------------------------------------------- dlight.analysis


def test_normalize_prim_func_describes_each_block():
    infos = dl.analysis.normalize_prim_func(tvm.s_tir.Schedule(mm_relu))
    assert [(i.name, i.dom_kind(), i.dom()) for i in infos] == [
        ("Y", "SSR", [64, 48, 32]),
        ("C", "SS", [64, 48]),
    ]
    assert infos[0].is_reduction() and not infos[0].is_injective()
    assert infos[1].is_injective() and not infos[1].is_reduction()


def test_normalize_prim_func_is_none_when_a_block_is_not_one_loop_per_iterator():
    sch = tvm.s_tir.Schedule(mm_relu)
    i, _, _ = sch.get_loops(sch.get_sblock("Y"))
    sch.split(i, factors=[None, 4])  # Y's vi is now bound to i0 * 4 + i1
    assert dl.analysis.normalize_prim_func(sch) is None


def test_a_rule_written_with_normalize_prim_func_schedules_for_a_gpu():
    # the dlight tutorial's custom rule: tile and bind a single injective block
    @dl.ScheduleRule.from_callable("MyTileAndBind")
    def tile_and_bind(func, target, tunable):
        sch = tvm.s_tir.Schedule(func)
        infos = dl.analysis.normalize_prim_func(sch)
        if infos is None or len(infos) != 1 or not infos[0].is_injective():
            return None
        fused = sch.fuse(*sch.get_loops(infos[0].block_rv))
        bx, tx = sch.split(fused, factors=[None, 64])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
        return sch

    A = te.placeholder((300,), name="A")
    B = te.compute((300,), lambda i: A[i] * 3.0, name="B")
    reduce_mod = tvm.IRModule({"main": te.create_prim_func([A, B])})
    with Target("opencl"):
        func = dl.ApplyDefaultSchedule(tile_and_bind)(reduce_mod)["main"]
        untouched = dl.ApplyDefaultSchedule(tile_and_bind)(tvm.IRModule({"main": mm_relu}))
    assert func.attrs.get(dl.IS_SCHEDULED) and "T.thread_binding" in func.script()
    assert not untouched["main"].attrs.get(dl.IS_SCHEDULED)  # two blocks: the rule declines
    lower_gpu([func], Target("opencl"))
    a = np.arange(300, dtype="float32")
    b = np.zeros(300, "float32")
    run_prim_func(func, a, b)
    np.testing.assert_allclose(b, a * 3)


# ---------------------------------------------------------------------------- LowBatchGEMV


@T.prim_func
def batch_gemv(x: T.handle, W: T.Buffer((96, 80), "float32"), y: T.handle):
    b = T.int64()
    X = T.match_buffer(x, (b, 80), "float32")
    Y = T.match_buffer(y, (b, 96), "float32")
    for i, n, k in T.grid(b, 96, 80):
        with T.sblock("Y"):
            vi, vn, vk = T.axis.remap("SSR", [i, n, k])
            with T.init():
                Y[vi, vn] = T.float32(0)
            Y[vi, vn] = Y[vi, vn] + X[vi, vk] * W[vn, vk]


def _apply(rule, func, kind="opencl"):
    with Target(kind):
        return dl.ApplyDefaultSchedule(rule)(tvm.IRModule({"main": func}))["main"]


@pytest.mark.parametrize("batch", [1, 4, 5])
def test_low_batch_gemv_binds_a_thread_per_output_and_matches_numpy(batch):
    # GPU-only (as in TVM): lowered for OpenCL, then run by the reference interpreter
    func = _apply(dl.gpu.LowBatchGEMV(), batch_gemv)
    assert func.attrs.get(dl.IS_SCHEDULED), "LowBatchGEMV did not apply"
    text = func.script()
    assert "T.thread_binding" in text and '"local"' in text, text  # accumulates in a register
    lower_gpu([func], Target("opencl"))
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 80)).astype("float32")
    w = rng.standard_normal((96, 80)).astype("float32")
    y = np.zeros((batch, 96), "float32")
    run_prim_func(func, x, w, y)
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-4, atol=1e-4)


def test_low_batch_gemv_takes_what_gemv_declines_and_declines_a_constant_batch():
    assert not _apply(dl.gpu.GEMV(), batch_gemv).attrs.get(dl.IS_SCHEDULED)
    X = te.placeholder((4, 80), name="X")
    W = te.placeholder((96, 80), name="W")
    k = te.reduce_axis((0, 80), name="k")
    Y = te.compute((4, 96), lambda i, n: te.sum(X[i, k] * W[n, k], axis=k), name="Y")
    static = te.create_prim_func([X, W, Y])
    assert not _apply(dl.gpu.LowBatchGEMV(), static).attrs.get(dl.IS_SCHEDULED)
    assert not _apply(dl.gpu.LowBatchGEMV(), batch_gemv, "llvm").attrs.get(dl.IS_SCHEDULED)


def test_low_batch_gemv_rejects_a_bad_bucket():
    with pytest.raises(ArgumentError, match="bucket must be a positive int"):
        dl.gpu.LowBatchGEMV(bucket=0)


# ---------------------------------------------------------------------------- MetaScheduleTuneTIR


def _linear_relu_module():
    from minitvm.relax.frontend import nn

    class Net(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(16, 8)

        def forward(self, x):
            return nn.relu(self.fc(x))

    return Net().export_tvm({"forward": {"x": nn.spec.Tensor((4, 16), "float32")}})[0]


def test_meta_schedule_tune_tir_records_what_apply_database_uses(tmp_path):
    mod = _linear_relu_module()
    relax = tvm.relax
    with Target("llvm"):
        tuned = tvm.ir.transform.Sequential(
            [
                relax.get_pipeline("zero"),
                relax.transform.MetaScheduleTuneTIR(work_dir=str(tmp_path), max_trials_global=2),
            ]
        )(mod)
        applied = relax.transform.MetaScheduleApplyDatabase(work_dir=str(tmp_path))(tuned)
    assert tvm.ir.structural_equal(tuned, relax.get_pipeline("zero")(mod))  # left unchanged
    scheduled = [
        gv.name_hint
        for gv, f in applied.functions_items()
        if isinstance(f, tvm.tir.PrimFunc) and f.attrs.get(dl.IS_SCHEDULED)
    ]
    assert scheduled, "no tuned kernel was applied from the database"


def test_meta_schedule_tune_tir_needs_a_target(tmp_path):
    with pytest.raises(TuningError, match="no target"):
        tvm.relax.transform.MetaScheduleTuneTIR(str(tmp_path), 2)(_linear_relu_module())


# ---------------------------------------------------------------------------- Transpose, RMSNorm


def _transpose_case():
    A = te.placeholder((40, 24), name="A")
    B = te.compute((24, 40), lambda j, i: A[i, j] * 2.0, name="scaled")
    C = te.compute((24, 40), lambda j, i: A[i, j], name="T")
    return [A, topi_add(B, C)], lambda a: a.T * 3


def topi_add(x, y):
    from minitvm import topi

    return topi.add(x, y)


def _rms_norm_case():
    X = te.placeholder((6, 40), name="X")
    W = te.placeholder((40,), name="W")
    k = te.reduce_axis((0, 40), name="k")
    sq = te.compute((6,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="sq")
    out = te.compute(
        (6, 40),
        lambda i, j: X[i, j] * tvm.tir.rsqrt(sq[i] / 40.0 + 1e-5) * W[j],
        name="norm",
    )

    def ref(x, w):
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * w

    return [X, W, out], ref


@pytest.mark.parametrize(
    "rule, case", [(dl.gpu.Transpose(), _transpose_case), (dl.gpu.RMSNorm(), _rms_norm_case)]
)
def test_transpose_and_rmsnorm_rules_match_numpy(rule, case):
    tensors, ref = case()
    func = _apply(rule, te.create_prim_func(tensors))
    assert func.attrs.get(dl.IS_SCHEDULED), f"{rule!r} did not apply"
    assert "T.thread_binding" in func.script()
    lower_gpu([func], Target("opencl"))
    rng = np.random.default_rng(1)
    inputs = [
        rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]
    ]
    out = np.zeros([int(d) for d in tensors[-1].shape], "float32")
    run_prim_func(func, *inputs, out)
    np.testing.assert_allclose(out, ref(*inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rule", [dl.gpu.Transpose(), dl.gpu.RMSNorm()])
def test_transpose_and_rmsnorm_decline_other_kernels(rule):
    assert not _apply(rule, mm_relu).attrs.get(dl.IS_SCHEDULED)  # a matmul: neither


def test_transpose_declines_an_elementwise_kernel_without_a_transpose():
    A = te.placeholder((40, 24), name="A")
    B = te.compute((40, 24), lambda i, j: A[i, j] + 1.0, name="B")
    assert not _apply(dl.gpu.Transpose(), te.create_prim_func([A, B])).attrs.get(dl.IS_SCHEDULED)


def test_tir_build_and_sblock_node_names():
    import numpy as np

    import minitvm as tvm
    from minitvm import te

    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i] + 1.0, name="B")
    lib = tvm.tirx.build(te.create_prim_func([a, b]))
    x = tvm.nd.array(np.arange(8, dtype="float32"))
    y = tvm.nd.empty((8,), "float32")
    lib(x, y)
    np.testing.assert_array_equal(y.numpy(), np.arange(8, dtype="float32") + 1)
    assert tvm.tirx.SBlock is tvm.tir.Block and tvm.tir.SBlockRealize is tvm.tir.BlockRealize
    assert tvm.s_tir.schedule.SBlockRV is tvm.tir.schedule.BlockRV
    import pytest

    with pytest.raises(tvm.error.ArgumentError, match="pipeline"):
        tvm.tir.build(te.create_prim_func([a, b]), pipeline="s_tir")
