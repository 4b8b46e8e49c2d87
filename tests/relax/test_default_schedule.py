"""DefaultSchedule: every op of the table, legalized with a symbolic batch dim and given the
default CPU schedule, still matches its numpy reference; fused graphs get their epilogues
inlined; hand-scheduled functions are left alone; scheduled kernels are not slower."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_op_table import CASES, _as_list, _build, _inputs

from minitvm import relax, te, tir
from minitvm.ir.module import IRModule
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.relax.eval_ref import Evaluator, evaluate
from minitvm.relax.transform.default_schedule import IS_SCHEDULED, default_schedule_func
from minitvm.tir.function import PrimFunc
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind

T = relax.TensorStructInfo


def _loop_kinds(func: PrimFunc) -> list[ForKind]:
    kinds: list[ForKind] = []
    post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    return kinds


def _prims(mod: IRModule) -> dict[str, PrimFunc]:
    return {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, PrimFunc)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_schedule_keeps_every_table_op_correct(name: str) -> None:
    case = CASES[name]
    mod, _ = _build(case, symbolic=case.symbolic)
    inputs = _inputs(case)
    expected = _as_list(evaluate(mod, *inputs))
    scheduled = _default_pipeline()(mod)  # legalize, fuse, schedule
    for f in _prims(scheduled).values():
        assert f.attrs[IS_SCHEDULED] is True
    got = _as_list(evaluate(scheduled, *inputs))
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize(
    "name",
    [
        "add",
        "matmul",
        "matmul_batched",
        "nn.conv2d",
        "nn.softmax",
        "sum",
        "take",
        "concat",
        "nn.layer_norm",
        "nn.max_pool2d",
        "mean",
        "strided_slice",
    ],
)
def test_parallel_paths_stay_correct_on_tiny_shapes(name: str, monkeypatch) -> None:
    ds = importlib.import_module("minitvm.relax.transform.default_schedule")
    monkeypatch.setattr(ds, "PARALLEL_MIN_WORK", 1)  # parallelize even the tiny test shapes
    case = CASES[name]
    mod, _ = _build(case, symbolic=case.symbolic)
    inputs = _inputs(case)
    expected = _as_list(evaluate(mod, *inputs))
    scheduled = Sequential([relax.transform.LegalizeOps(), relax.transform.DefaultSchedule()])(mod)
    kinds = [k for f in _prims(scheduled).values() for k in _loop_kinds(f)]
    assert ForKind.PARALLEL in kinds
    for g, e in zip(_as_list(evaluate(scheduled, *inputs)), expected):
        np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)


def _mlp(n):
    x = relax.Var("x", T((n, 32), "float32"))
    w1, b1 = relax.Var("w1", T((32, 64), "float32")), relax.Var("b1", T((64,), "float32"))
    w2, b2 = relax.Var("w2", T((64, 10), "float32")), relax.Var("b2", T((10,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w1, b1, w2, b2]):
        with bb.dataflow():
            h = bb.emit(op.nn.relu(op.add(op.matmul(x, w1), b1)))
            gv = bb.emit_output(op.nn.softmax(op.add(op.matmul(h, w2), b2)))
        bb.emit_func_output(gv)
    return bb.get()


def _default_pipeline():
    return Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.ApplyDefaultSchedule(),
        ]
    )


def test_fused_mlp_gets_epilogues_inlined_tiles_and_stays_correct_for_any_batch() -> None:
    n = tir.Var("n", "int64")
    mod = _mlp(n)
    scheduled = _default_pipeline()(mod)
    prims = _prims(scheduled)
    assert sorted(prims) == ["fused_matmul_add", "fused_matmul_add_nn_relu", "nn_softmax"]
    layer1 = prims["fused_matmul_add_nn_relu"]
    # T_add was inlined into the relu; only the matmul accumulator stays an intermediate
    assert [b.name for b in layer1.body.block.alloc_buffers] == ["T_matmul"]
    kinds = _loop_kinds(layer1)
    assert ForKind.PARALLEL in kinds and ForKind.VECTORIZED in kinds
    # the relu epilogue runs tile by tile inside the matmul's parallel row-tile loop
    top = layer1.body.block.body
    assert isinstance(top, For) and top.kind is ForKind.PARALLEL
    rng = np.random.default_rng(0)
    w1, b1 = (
        rng.standard_normal((32, 64)).astype("float32"),
        rng.standard_normal(64).astype("float32"),
    )
    w2, b2 = (
        rng.standard_normal((64, 10)).astype("float32"),
        rng.standard_normal(10).astype("float32"),
    )
    for rows in (1, 7, 33):
        x = rng.standard_normal((rows, 32)).astype("float32")
        logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        np.testing.assert_allclose(
            evaluate(scheduled, x, w1, b1, w2, b2),
            e / e.sum(axis=1, keepdims=True),
            rtol=1e-4,
            atol=1e-6,
        )


def test_fused_conv_with_padding_and_epilogue_is_correct_after_scheduling() -> None:
    n = tir.Var("n", "int64")
    x = relax.Var("x", T((n, 3, 9, 9), "float32"))
    w = relax.Var("w", T((8, 3, 3, 3), "float32"))
    b = relax.Var("b", T((1, 8, 1, 1), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            gv = bb.emit_output(op.nn.relu(op.add(op.nn.conv2d(x, w, padding=1), b)))
        bb.emit_func_output(gv)
    mod = bb.get()
    scheduled = _default_pipeline()(mod)
    assert list(_prims(scheduled)) == ["fused_nn_conv2d_add_nn_relu"]
    rng = np.random.default_rng(1)
    args = [
        rng.standard_normal(s).astype("float32") for s in [(2, 3, 9, 9), (8, 3, 3, 3), (1, 8, 1, 1)]
    ]
    np.testing.assert_allclose(
        evaluate(scheduled, *args), evaluate(mod, *args), rtol=1e-4, atol=1e-4
    )


def _te_add(n=64):
    a = te.placeholder((n, n), "float32", name="A")
    c = te.compute((n, n), lambda i, j: a[i, j] + 1.0, name="C")
    return te.create_prim_func([a, c])


def test_hand_scheduled_functions_are_left_alone() -> None:
    sch = tir.Schedule(_te_add())
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    hand = sch.mod["main"]
    out = default_schedule_func(hand)
    assert out.body is hand.body and out.attrs[IS_SCHEDULED] is True
    marked = _te_add().with_attr(IS_SCHEDULED, True)
    assert default_schedule_func(marked) is marked
    mod = relax.transform.DefaultSchedule()(IRModule({"hand": hand, "plain": _te_add()}))
    assert mod["hand"].body is hand.body
    assert ForKind.VECTORIZED in _loop_kinds(mod["plain"])


def _best_time(fn, *args, repeat=5) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def test_default_schedule_is_not_slower_than_no_schedule_on_dense() -> None:
    size = 256
    a = te.placeholder((size, size), "float32", name="A")
    b = te.placeholder((size, size), "float32", name="B")
    k = te.reduce_axis((0, size), name="k")
    c = te.compute((size, size), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    plain = te.create_prim_func([a, b, c])
    scheduled = default_schedule_func(plain)
    ev = Evaluator(IRModule())
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((2, size, size)).astype("float32")
    times = {}
    for label, func in (("unscheduled", plain), ("default", scheduled)):
        out = np.empty((size, size), "float32")
        kernel = ev.kernel(func, f"dense_{label}")
        times[label] = _best_time(kernel, x, y, out)
        np.testing.assert_allclose(out, x @ y, rtol=1e-3, atol=1e-3)
    print(f"dense {size}x{size}: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in times.items()))
    assert times["default"] <= 2 * times["unscheduled"]


_UNARY = [op.exp, op.nn.relu, op.negative, op.tanh, op.permute_dims]
_BINARY = [op.add, op.multiply, op.maximum, op.matmul]


@settings(max_examples=10, deadline=None, derandomize=True)
@given(
    choices=st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 99), st.integers(0, 99)), min_size=2, max_size=7
    )
)
def test_random_graphs_compute_the_same_after_fusion_and_scheduling(choices) -> None:
    x = relax.Var("x", T((8, 8), "float32"))
    y = relax.Var("y", T((8, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            values = [x, y]
            for kind, a, b in choices:
                lhs, rhs = values[a % len(values)], values[b % len(values)]
                call = (
                    _UNARY[kind](lhs)
                    if kind < len(_UNARY)
                    else _BINARY[kind - len(_UNARY)](lhs, rhs)
                )
                values.append(bb.emit(call))
            gv = bb.emit_output(values[-1])
        bb.emit_func_output(gv)
    mod = bb.get()
    rng = np.random.default_rng(len(choices))
    args = [rng.uniform(-1, 1, (8, 8)).astype("float32") for _ in range(2)]
    np.testing.assert_allclose(
        evaluate(_default_pipeline()(mod), *args), evaluate(mod, *args), rtol=1e-4, atol=1e-4
    )
