"""Building a model takes time linear in its size: a chain of N elementwise ops (which FuseOps
fuses into one kernel of N blocks) costs about twice as many IR node visits at 2N as at N
through the graph passes, FuseOps/FuseTIR, the default schedule and TIR lowering. Counted, not
timed, so that a busy machine cannot fail it; one by one, every compute_inline walked the
whole kernel (a ratio near 4). benchmarks/build_scaling.py times the same chains."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op

WIDTH = 16
OPS = ("add", "relu", "multiply", "sigmoid")


def _chain(n: int):
    """relax main(x: [4, WIDTH]) applying add(c)/relu/multiply(c)/sigmoid in turn, n ops; and
    the numpy function it computes."""
    rng = np.random.default_rng(n)
    consts = [rng.uniform(0.5, 1.0, WIDTH).astype("float32") for _ in range(n)]
    x = relax.Var("x", relax.TensorStructInfo((4, WIDTH), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for i in range(n):
                kind = OPS[i % 4]
                if kind in ("add", "multiply"):
                    h = bb.emit(getattr(op, kind)(h, relax.const(consts[i])))
                else:
                    h = bb.emit(getattr(op, kind)(h) if kind == "sigmoid" else op.nn.relu(h))
            out = bb.emit_output(h)
        bb.emit_func_output(out)

    def reference(a):
        for i in range(n):
            kind = OPS[i % 4]
            if kind == "add":
                a = a + consts[i]
            elif kind == "multiply":
                a = a * consts[i]
            elif kind == "relu":
                a = np.maximum(a, 0)
            else:
                a = 1 / (1 + np.exp(-a))
        return a

    return bb.get(), reference


def _count_visits(monkeypatch, n: int, group_size: int | None = None) -> tuple[int, int]:
    """(TIR node visits, relax expression visits) of the build pipeline's passes and the TIR
    lowering of every kernel, for a chain of n ops; FuseOps groups at most `group_size` ops
    when given (a chain longer than a group becomes several kernels)."""
    from minitvm import driver
    from minitvm.relax import functor as relax_functor
    from minitvm.relax.pipeline import DEFAULT_PIPELINE, GRAPH_PIPELINE, default_passes
    from minitvm.tir import functor as tir_functor
    from minitvm.tir.function import PrimFunc

    counts = [0, 0]

    def counted(slot, fn):
        def wrapper(*args, **kwargs):
            counts[slot] += 1
            return fn(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as m:
        if group_size is not None:
            fuse_ops = importlib.import_module("minitvm.relax.transform.fuse_ops")
            m.setattr(fuse_ops, "MAX_GROUP_SIZE", group_size)
        m.setattr(tir_functor.Mutator, "visit", counted(0, tir_functor.Mutator.visit))
        m.setattr(tir_functor.Visitor, "visit", counted(0, tir_functor.Visitor.visit))
        m.setattr(
            relax_functor.ExprVisitor,
            "visit_expr",
            counted(1, relax_functor.ExprVisitor.visit_expr),
        )
        mod, _ = _chain(n)
        for p in default_passes("llvm", steps=GRAPH_PIPELINE + DEFAULT_PIPELINE):
            mod = p(mod)
        kernels = [f for _, f in mod.functions_items() if isinstance(f, PrimFunc)]
        assert group_size is not None or len(kernels) == 1, "the chain should be one kernel"
        for f in kernels:
            driver._lower_checked(f.with_attr("global_symbol", "k"))
    return counts[0], counts[1]


def _ratio(monkeypatch, slot: int, group_size: int | None = None) -> tuple[float, str]:
    small = _count_visits(monkeypatch, 48, group_size)[slot]
    large = _count_visits(monkeypatch, 96, group_size)[slot]
    return large / small, f"{small} -> {large}"


def test_tir_work_is_linear_in_chain_length(monkeypatch):
    # one kernel of N blocks: inlining them one by one visited ~N^2 nodes (ratio 3.8)
    ratio, seen = _ratio(monkeypatch, 0)
    assert ratio < 2.5, f"TIR node visits grew x{ratio:.2f} for twice the ops: {seen}"


def test_graph_work_is_linear_in_chain_length(monkeypatch):
    # several groups: FuseOps checked each member against every binding outside its group
    ratio, seen = _ratio(monkeypatch, 1, group_size=8)
    assert ratio < 2.5, f"relax expression visits grew x{ratio:.2f} for twice the ops: {seen}"


def test_chain_built_in_one_walk_matches_numpy():
    mod, reference = _chain(48)
    ex = relax.build(mod, "llvm")
    x = np.random.default_rng(0).standard_normal((4, WIDTH)).astype("float32")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_allclose(got, reference(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [7, 13])
def test_inlined_chain_is_one_block(n):
    """Every intermediate of the fused chain is inlined: one block is left, computing all."""
    from minitvm.dlight.base.analysis import blocks
    from minitvm.relax.pipeline import DEFAULT_PIPELINE, GRAPH_PIPELINE, default_passes
    from minitvm.tir.function import PrimFunc

    mod, _ = _chain(n)
    for p in default_passes("llvm", steps=GRAPH_PIPELINE + DEFAULT_PIPELINE):
        mod = p(mod)
    (kernel,) = [f for _, f in mod.functions_items() if isinstance(f, PrimFunc)]
    assert len(blocks(kernel)) == 1


def _te_chain(diamond: bool = False):
    from minitvm import te

    a = te.placeholder((8, 16), name="A")
    b = te.compute((8, 16), lambda i, j: a[i, j] + 1.0, name="B")
    c = te.compute((8, 16), lambda i, j: b[i, j] * 2.0, name="C")
    d = te.compute((8, 16), lambda i, j: te.exp(c[j // 2, i]), name="D")
    if diamond:  # E reads A through C and through D, at other indices
        e = te.compute((8, 16), lambda i, j: d[i, j] + c[i, j], name="E")
    else:
        e = te.compute((8, 16), lambda i, j: d[i, j] + 1.0, name="E")
    return te.create_prim_func([a, e])


def test_inlining_many_blocks_in_one_walk_equals_one_by_one():
    func = _te_chain()
    one_by_one = tvm.tir.Schedule(func)
    for name in ("B", "C", "D"):
        one_by_one.compute_inline(one_by_one.get_block(name))
    at_once = tvm.tir.Schedule(func)
    at_once._compute_inline_names(["B", "C", "D"])
    tvm.ir.assert_structural_equal(at_once.mod, one_by_one.mod)
    kinds = [inst.kind.name for inst in at_once.trace.insts]
    assert kinds == [inst.kind.name for inst in one_by_one.trace.insts]
    f = tvm.build(at_once.mod, target="llvm")
    x = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    out = tvm.nd.empty((8, 16), "float32")
    f(tvm.nd.array(x), out)
    cc = (x + 1) * 2
    want = np.exp(cc[np.arange(16)[None, :] // 2, np.arange(8)[:, None]]) + 1
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


def test_inlining_many_blocks_reads_every_region_the_block_reads():
    """E reads A at [i, j] (through C) and at [j // 2, i] (through D): its declared reads hold
    the region of both (one by one, the region of the first inline stayed and the second was
    left out)."""
    from minitvm.tir.analysis.region import infer_access_regions

    sch = tvm.tir.Schedule(_te_chain(diamond=True))
    sch._compute_inline_names(["B", "C", "D"])
    (e,) = _realizes(sch.mod["main"])
    inferred, _ = infer_access_regions(e.block)
    tvm.ir.assert_structural_equal(e.block.reads, inferred)
    assert len(inferred) == 1 and inferred[0].buffer.name == "A"


def test_inlining_many_blocks_checks_each_as_compute_inline():
    from minitvm.error import ScheduleError

    sch = tvm.tir.Schedule(_te_chain())
    with pytest.raises(ScheduleError, match="E, an output of the function"):
        sch._compute_inline_names(["B", "E"])
    with pytest.raises(ScheduleError, match="Cannot find a block with the name: Z"):
        sch._compute_inline_names(["B", "Z"])
    assert [r.block.name_hint for r in _realizes(sch.mod["main"])] == ["B", "C", "D", "E"]


def _realizes(func):
    from minitvm.dlight.base.analysis import blocks

    return blocks(func)
