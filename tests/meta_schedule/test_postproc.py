"""Postprocs: the parallel/vectorize/unroll rewrite of the root annotations, reduction
decomposition, dynamic loops refused, legality checks; results match numpy."""

import numpy as np
from _space_workloads import fused_elementwise, matmul, run

from minitvm import meta_schedule as ms
from minitvm import te
from minitvm.ir import IRModule
from minitvm.tir.functor import post_order_visit
from minitvm.tir.schedule import Schedule
from minitvm.tir.stmt import For, ForKind

pp = ms.postproc


def _loop_kinds(sch):
    kinds = []
    post_order_visit(
        sch.mod["main"].body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None
    )
    return kinds


def _annotated(mod, parallel=32, vectorize=64, unroll=None):
    sch = Schedule(mod, seed=0)
    root = sch.get_block("root")
    sch.annotate(root, "meta_schedule.parallel", parallel)
    sch.annotate(root, "meta_schedule.vectorize", vectorize)
    if unroll is not None:
        v = sch.sample_categorical([unroll], [1.0])  # a sampled value, as the rule passes it
        sch.annotate(root, "meta_schedule.unroll_explicit", v)
    return sch


def test_rewrite_turns_annotations_into_parallel_vector_and_unrolled_loops():
    mod, ins, out, ref = fused_elementwise()
    sch = _annotated(mod, unroll=16)
    for name in ("T", "S"):
        sch.compute_inline(sch.get_block(name))
    assert pp.RewriteParallelVectorizeUnroll().apply(sch)
    kinds = _loop_kinds(sch)
    assert ForKind.PARALLEL in kinds and ForKind.VECTORIZED in kinds
    assert "meta_schedule.parallel" not in sch.get(sch.get_block("root")).annotations
    xs, got = run(sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-5)


def test_rewrite_never_parallelizes_or_vectorizes_a_reduction_loop():
    mod, ins, out, ref = matmul(16, 16, 64, relu=False)
    sch = _annotated(mod, parallel=4, vectorize=64, unroll=0)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.reorder(i, k, j)
    assert pp.RewriteParallelVectorizeUnroll().apply(sch)
    loops = {}
    post_order_visit(
        sch.mod["main"].body,
        lambda n: loops.__setitem__(n.loop_var.name, n.kind) if isinstance(n, For) else None,
    )
    assert loops["k"] is ForKind.SERIAL  # drives the reduction: stays serial
    xs, got = run(sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-4)


def test_unroll_stays_within_the_unrolled_statement_budget():
    mod = matmul(64, 64, 64, relu=False)[0]
    sch = _annotated(mod, parallel=1, vectorize=1, unroll=512)
    assert pp.RewriteParallelVectorizeUnroll().apply(sch)
    run(sch.mod, [(64, 64), (64, 64)], (64, 64))  # no BuildError for an oversized unroll


def test_rewrite_reduction_block_decomposes_the_init():
    mod, ins, out, ref = matmul(16, 16, 16, relu=False)
    sch = Schedule(mod)
    assert pp.RewriteReductionBlock().apply(sch)
    assert "DecomposeReduction" in [i.kind.name for i in sch.trace.insts]
    assert sch.get(sch.get_block("C_update")).init is None
    xs, got = run(sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-4)


def test_disallow_dynamic_loop_refuses_symbolic_extents():
    n = te.var("n")
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="B")
    sch = Schedule(IRModule({"main": te.create_prim_func([a, b])}))
    assert not pp.DisallowDynamicLoop().apply(sch)
    assert pp.DisallowDynamicLoop().apply(Schedule(matmul(8, 8, 8)[0]))


def test_verify_cpu_code_accepts_legal_schedules():
    sch = Schedule(matmul(8, 8, 8)[0])
    sch.parallel(sch.get_loops(sch.get_block("C"))[0])
    assert pp.VerifyCPUCode().apply(sch)


def test_create_default_order():
    names = [type(p).__name__ for p in pp.create_default("llvm")]
    assert names == [
        "DisallowDynamicLoop",
        "RewriteReductionBlock",
        "RewriteParallelVectorizeUnroll",
    ]


def test_vectorize_takes_only_the_loops_of_one_iterator():
    """Inner loops i2 (4) and j2 (8) of two block iterators are not fused into one vector:
    its lanes would index by f // 8, f % 8 (scalar code, minutes of LLVM); j2 alone is."""
    mod, ins, out, ref = matmul(16, 16, 16, relu=False)
    sch = _annotated(mod, parallel=1, vectorize=64, unroll=0)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i1, i2 = sch.split(i, [None, 4])
    j1, j2 = sch.split(j, [None, 8])
    sch.reorder(i1, j1, k, i2, j2)
    assert pp.RewriteParallelVectorizeUnroll().apply(sch)
    loops = {}
    post_order_visit(
        sch.mod["main"].body,
        lambda n: (
            loops.__setitem__(n.loop_var.name, (n.kind, int(n.extent)))
            if isinstance(n, For)
            else None
        ),
    )
    vectorized = [v for v in loops.values() if v[0] is ForKind.VECTORIZED]
    assert vectorized == [(ForKind.VECTORIZED, 8)]
    xs, got = run(sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-4)


def test_a_long_loop_is_not_unrolled_past_the_budget():
    """A k loop of 196 around 2 x 4 statements is 1568 copies: over an unroll budget of 64 it
    stays a loop (it was unrolled because the loop's own extent was not counted, and LLVM took
    196 s on the MLC course's linear layer). The 2 x 4 inside fits and is unrolled."""
    mod, ins, out, ref = matmul(4, 16, 784, relu=False)
    sch = _annotated(mod, parallel=1, vectorize=1, unroll=64)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, [None, 2])
    k0, k1 = sch.split(k, [196, 4])
    sch.reorder(i, j0, k0, j1, k1)
    assert pp.RewriteParallelVectorizeUnroll().apply(sch)
    kinds = {}
    post_order_visit(
        sch.mod["main"].body,
        lambda n: kinds.__setitem__(n.loop_var.name, n.kind) if isinstance(n, For) else None,
    )
    assert kinds["k_0"] is ForKind.SERIAL, kinds
    assert kinds["k_1"] is ForKind.UNROLLED and kinds["j_1"] is ForKind.UNROLLED, kinds
    xs, got = run(sch.mod, ins, out)
    np.testing.assert_allclose(got, ref(*xs), rtol=1e-4, atol=1e-3)
