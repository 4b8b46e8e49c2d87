"""DefaultSchedule on reductions: pooling over a blocked NCHW{c}c input accumulates a vector
of channels in a `local` buffer (max, sum), softmax and layer_norm run parallel over rows;
every case matches the graph's numpy reference on odd shapes and a symbolic batch."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate
from minitvm.tir.function import PrimFunc
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind

_ds = importlib.import_module("minitvm.dlight.cpu")
T = relax.TensorStructInfo


def graph(shapes, body):
    params = [relax.Var(f"p{k}", T(s, "float32")) for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return bb.get()


def schedule(mod):
    return Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.ApplyDefaultSchedule(),
        ]
    )(mod)


def prim_funcs(mod) -> list[PrimFunc]:
    return [f for _, f in mod.functions_items() if isinstance(f, PrimFunc)]


def loop_kinds(func: PrimFunc) -> set[ForKind]:
    kinds: set[ForKind] = set()
    post_order_visit(func.body, lambda n: kinds.add(n.kind) if isinstance(n, For) else None)
    return kinds


POOLS = {
    "max3s2p1": lambda x: op.nn.max_pool2d(x, 3, 2, 1, layout="NCHW16c"),
    "max2s2": lambda x: op.nn.max_pool2d(x, 2, 2, 0, layout="NCHW16c"),
    "avg3s1p1": lambda x: op.nn.avg_pool2d(x, 3, 1, 1, layout="NCHW16c"),
    "global_avg": lambda x: op.nn.adaptive_avg_pool2d(x, 1, layout="NCHW16c"),
}


@pytest.mark.parametrize("name", sorted(POOLS))
@pytest.mark.parametrize("shape", [(1, 2, 11, 11, 16), (2, 1, 7, 5, 16), (1, 3, 3, 2, 16)])
def test_blocked_pooling_accumulates_a_channel_vector(name, shape, monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    mod = graph([shape], POOLS[name])
    scheduled = schedule(mod)
    (pool,) = [f for f in prim_funcs(scheduled) if "pool" in f.script()]
    assert "local" in {b.scope() for b in pool.body.block.alloc_buffers}
    assert ForKind.VECTORIZED in loop_kinds(pool)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    np.testing.assert_allclose(evaluate(scheduled, x), evaluate(mod, x), rtol=1e-5, atol=1e-6)


def test_blocked_max_pool_with_symbolic_batch_works_for_any_batch() -> None:
    n = tir.Var("n", "int64")
    mod = graph([(n, 2, 9, 9, 16)], POOLS["max3s2p1"])
    scheduled = schedule(mod)
    (pool,) = prim_funcs(scheduled)
    assert ForKind.PARALLEL in loop_kinds(pool) and ForKind.VECTORIZED in loop_kinds(pool)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 9, 9, 16)).astype("float32")
        np.testing.assert_allclose(evaluate(scheduled, x), evaluate(mod, x), rtol=1e-6)


ROWS = {
    "softmax": ([("n", 64)], lambda x: op.nn.softmax(x)),
    "log_softmax": ([("n", 40)], lambda x: op.nn.log_softmax(x)),
    "layer_norm": (
        [("n", 48), (48,), (48,)],
        lambda x, g, b: op.nn.layer_norm(x, g, b, axes=[-1]),
    ),
    "sum_rows": ([(3, "n", 24)], lambda x: op.sum(x, axis=[-1])),
    "max_rows": ([("n", 20)], lambda x: op.max(x, axis=[-1])),
    "dense_few_rows_nk": ([("n", 32), (10, 32)], lambda x, w: op.linear(x, w)),
}


def _shape(shape, n):
    return tuple(n if d == "n" else d for d in shape)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_row_reductions_keep_a_vector_of_partial_results_per_row(name, monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    shapes, body = ROWS[name]
    # a symbolic batch of x @ W.T is packed for the matmul tile instead (a training batch)
    for static in (True,) if name.startswith("dense") else (True, False):
        n = 7 if static else tir.Var("n", "int64")
        mod = graph([_shape(s, n) for s in shapes], body)
        scheduled = schedule(mod)
        funcs = prim_funcs(scheduled)
        rf = [b.name for f in funcs for b in f.body.block.alloc_buffers if b.name.endswith("_rf")]
        assert rf, [f.script() for f in funcs]  # the rfactor of the contiguous reduction
        assert all(ForKind.VECTORIZED in loop_kinds(f) for f in funcs)
        rng = np.random.default_rng(0)
        for rows in (1, 7) if not static else (7,):
            args = [rng.standard_normal(_shape(s, rows)).astype("float32") for s in shapes]
            np.testing.assert_allclose(
                evaluate(scheduled, *args), evaluate(mod, *args), rtol=1e-5, atol=1e-5
            )


def test_row_reduction_of_a_width_no_vector_divides_keeps_parallel_rows(monkeypatch) -> None:
    # 37 = 2 x 16 + 5: partial results over a guarded split of 16 lanes (the last vector's
    # missing lanes hold the identity), the rows still parallel
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    mod = graph([(64, 37)], lambda x: op.nn.softmax(x))
    scheduled = schedule(mod)
    (func,) = prim_funcs(scheduled)
    assert [b for b in func.body.block.alloc_buffers if b.name.endswith("_rf")]
    assert ForKind.PARALLEL in loop_kinds(func)
    x = np.random.default_rng(1).standard_normal((64, 37)).astype("float32")
    np.testing.assert_allclose(evaluate(scheduled, x), evaluate(mod, x), rtol=1e-5, atol=1e-6)


def _top_loops(func: PrimFunc) -> list:
    """The statements directly under the root block (one loop when the stages are chained)."""
    body = func.body.block.body
    return list(body.seq) if hasattr(body, "seq") else [body]


def _layer_norm(x, g, b):
    return op.nn.layer_norm(x, g, b, axes=[-1])


@pytest.mark.parametrize("shape", [(37, 768), (1, 64), (5, 3, 96), (2, 3, 24)])
def test_layer_norm_computes_each_rows_chain_under_one_parallel_row_loop(shape, monkeypatch):
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    mod = graph([shape, shape[-1:], shape[-1:]], _layer_norm)
    scheduled = schedule(mod)
    (func,) = prim_funcs(scheduled)
    (top,) = _top_loops(func)  # sums, squared sums and the normalisation share the row loop
    rows_parallel = ForKind.PARALLEL if np.prod(shape[:-1]) > 1 else ForKind.SERIAL
    assert isinstance(top, For) and top.kind is rows_parallel, func.script()
    assert {"T_ln_sum_rf", "T_ln_sqsum_rf"} <= {b.name for b in func.body.block.alloc_buffers}
    assert ForKind.VECTORIZED in loop_kinds(func)
    rng = np.random.default_rng(len(shape))
    args = [rng.standard_normal(s).astype("float32") for s in (shape, shape[-1:], shape[-1:])]
    np.testing.assert_allclose(
        evaluate(scheduled, *args), evaluate(mod, *args), rtol=1e-5, atol=1e-5
    )


def test_layer_norm_chain_with_symbolic_batch_works_for_any_batch(monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    n = tir.Var("n", "int64")
    mod = graph([(n, 3, 32), (32,), (32,)], _layer_norm)
    scheduled = schedule(mod)
    (func,) = prim_funcs(scheduled)
    assert len(_top_loops(func)) == 1, func.script()
    for batch in (1, 5):
        rng = np.random.default_rng(batch)
        args = [rng.standard_normal(s).astype("float32") for s in ((batch, 3, 32), (32,), (32,))]
        np.testing.assert_allclose(
            evaluate(scheduled, *args), evaluate(mod, *args), rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize(
    "shape, body", [((7, 13), lambda x: op.nn.softmax(x))], ids=["width_no_vector_divides"]
)
def test_rows_not_chained_keep_per_stage_rules(shape, body, monkeypatch) -> None:
    # a width of 13 is shorter than two vectors: no loop of partial sums, so the per-block
    # rules, still right (a wider softmax is chained: tests/dlight/test_softmax_h5.py)
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    mod = graph([shape], body)
    scheduled = schedule(mod)
    (func,) = prim_funcs(scheduled)
    assert len(_top_loops(func)) > 1
    x = np.random.default_rng(2).standard_normal(shape).astype("float32")
    np.testing.assert_allclose(evaluate(scheduled, x), evaluate(mod, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "shape", [(9, 13), (2, 1, 8), (2, 3, 8)], ids=["width_13", "unit_row_dim", "one_vector_row"]
)
def test_layer_norm_not_chained_keeps_per_stage_rules(shape, monkeypatch) -> None:
    # no vector divides 13; a unit row loop is folded out of the block's bindings (no simple
    # nest); a row of one vector has no loop of partial sums: per-block rules, still right
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    mod = graph([shape, shape[-1:], shape[-1:]], _layer_norm)
    scheduled = schedule(mod)
    (func,) = prim_funcs(scheduled)
    assert len(_top_loops(func)) > 1
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype("float32") for s in (shape, shape[-1:], shape[-1:])]
    np.testing.assert_allclose(
        evaluate(scheduled, *args), evaluate(mod, *args), rtol=1e-5, atol=1e-5
    )


def test_a_strided_prologue_of_the_dot_product_rule_stays_a_packed_stage(monkeypatch) -> None:
    """A classifier reading a flattened blocked tensor (NCHW16c -> NCHW -> reshape -> x @ W.T):
    inlined, every vector of x along the reduction would be a gather, so the flattened copy is
    written once as its own vectorized stage and the dot product reads it contiguously."""
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    from minitvm.topi.layout import layout_index_map

    def body(x, w):
        flat = op.layout_transform(x, layout_index_map("NCHW16c", "NCHW"))
        return op.nn.linear(op.reshape(flat, (1, 32 * 3 * 5)), w)

    mod = graph([(1, 2, 3, 5, 16), (11, 32 * 3 * 5)], body)
    scheduled = schedule(mod)
    (func,) = prim_funcs(scheduled)
    names = [b.name for b in func.body.block.alloc_buffers]
    assert "T_reshape" in names and any(n.endswith("_rf") for n in names), func.script()
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((1, 2, 3, 5, 16)), rng.standard_normal((11, 480))]
    args = [a.astype("float32") for a in args]
    np.testing.assert_allclose(
        evaluate(scheduled, *args), evaluate(mod, *args), rtol=1e-5, atol=1e-5
    )
