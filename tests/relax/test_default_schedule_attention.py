"""DefaultSchedule on softmax and attention: softmax's normalisation (a stage calling exp) is
computed once per element instead of being inlined into `P @ V`, the softmax reductions keep
their vector partial sums (rfactor) next to a matmul's register tile, and a matmul whose
epilogue reads a second producer falls back to a plainer schedule instead of failing the
build; every case is compiled and checked against numpy."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.ir.transform import Sequential
from minitvm.relax import op
from minitvm.tir.function import PrimFunc
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Block

_ds = importlib.import_module("minitvm.dlight.cpu")
_an = importlib.import_module("minitvm.dlight.cpu.analysis")
T = relax.TensorStructInfo


def graph(shapes, body):
    params = [relax.Var(f"p{k}", T(s, "float32")) for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(bb, *params))
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


def run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*map(tvm.nd.array, args)).numpy()


def blocks(func: PrimFunc) -> dict[str, Block]:
    found: dict[str, Block] = {}
    post_order_visit(
        func.body, lambda n: found.update({n.name_hint: n}) if isinstance(n, Block) else None
    )
    return found


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_attention(q, k, v, causal=False):  # BSNH
    q, k, v = (np.transpose(a, (0, 2, 1, 3)).astype("float64") for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return np.transpose(np_softmax(s) @ v, (0, 2, 1, 3))


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(7,), (3, 33), (128, 768), (12, 128, 128), (2, 5, 17)])
def test_softmax_matches_numpy(shape) -> None:
    x = RNG.standard_normal(shape).astype("float32") * 4
    mod = graph([shape], lambda bb, x: op.nn.softmax(x, axis=-1))
    np.testing.assert_allclose(run(mod, x), np_softmax(x), rtol=1e-5, atol=1e-6)


def test_softmax_with_symbolic_batch_matches_numpy_for_any_batch() -> None:
    n = tir.Var("n", "int64")
    ex = relax.build(graph([(n, 48)], lambda bb, x: op.nn.softmax(x, axis=-1)), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for rows in (1, 5, 130):
        x = RNG.standard_normal((rows, 48)).astype("float32")
        out = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-6)


ATTENTION = [(1, 128, 12, 64), (2, 17, 3, 8), (1, 64, 2, 32)]


@pytest.mark.parametrize("shape", ATTENTION)
@pytest.mark.parametrize("causal", [False, True])
def test_nn_attention_matches_numpy(shape, causal) -> None:
    q, k, v = (RNG.standard_normal(shape).astype("float32") for _ in range(3))
    mask = "TopLeft" if causal else None
    mod = graph([shape] * 3, lambda bb, q, k, v: op.nn.attention(q, k, v, causal_mask=mask))
    np.testing.assert_allclose(
        run(mod, q, k, v), np_attention(q, k, v, causal), rtol=1e-4, atol=1e-5
    )


def test_attention_computes_exp_once_per_score_and_rfactors_its_reductions() -> None:
    shape = (1, 128, 12, 64)
    mod = graph([shape] * 3, lambda bb, q, k, v: op.nn.attention(q, k, v))
    (func,) = [f for _, f in schedule(mod).functions_items() if isinstance(f, PrimFunc)]
    found = blocks(func)
    # exp is its own stage, computed once per score: P @ V reads it (scaled by the row's
    # 1 / sum, or through a normalisation stage), no exp in the product's inner loop
    assert "T_softmax_exp" in found or "T_softmax_norm" in found, func.script()
    update = next(
        b for name, b in found.items() if name.startswith("T_matmul_1") and "update" in name
    )
    assert not _an._calls(update, _an._EXP), func.script()
    # max and sum keep vector partial results beside the matmuls' register tiles
    assert {"T_softmax_maxelem_rf_update", "T_softmax_expsum_rf_update"} <= set(found), (
        func.script()
    )


def test_attention_from_matmul_softmax_matmul_matches_numpy() -> None:
    def body(bb, q, k, v):  # q, k, v: (B, N, S, H)
        kt = bb.emit(op.permute_dims(k, (0, 1, 3, 2)))
        s = bb.emit(op.multiply(op.matmul(q, kt), relax.const(0.125, "float32")))
        return op.matmul(bb.emit(op.nn.softmax(s, axis=-1)), v)

    shape = (1, 12, 128, 64)
    q, k, v = (RNG.standard_normal(shape).astype("float32") for _ in range(3))
    expect = np_softmax(q.astype("float64") @ np.swapaxes(k, -1, -2) * 0.125) @ v
    np.testing.assert_allclose(run(graph([shape] * 3, body), q, k, v), expect, rtol=1e-4, atol=1e-5)


def _matmul_plus(second):
    """C = A @ B, D = C + P where P is a second producer in the same function."""
    A = te.placeholder((64, 32), name="A")
    B = te.placeholder((32, 64), name="B")
    X = te.placeholder((64, 64, 8), name="X")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((64, 64), lambda i, j: C[i, j] + second(X)[i, j], name="D")
    return te.create_prim_func([A, B, X, D])


def _sum_last(X):
    r = te.reduce_axis((0, 8), name="r")
    return te.compute((64, 64), lambda i, j: te.sum(X[i, j, r], axis=r), name="P")


def _exp_minus_rowmax(X):
    r = te.reduce_axis((0, 64), name="r")
    M = te.compute((64,), lambda i: te.max(X[i, r, 0], axis=r), name="M")
    return te.compute((64, 64), lambda i, j: te.exp(X[i, j, 0] - M[i]), name="P")


@pytest.mark.parametrize(
    "second, reference",
    [
        (_sum_last, lambda x: x.sum(-1)),
        (_exp_minus_rowmax, lambda x: np.exp(x[..., 0] - x[..., 0].max(-1, keepdims=True))),
    ],
)
def test_matmul_epilogue_reading_a_second_producer_builds_and_matches(second, reference) -> None:
    func = _matmul_plus(second)
    scheduled = _ds.default_schedule_func(func)  # raised ScheduleError in reverse_compute_at
    assert scheduled.attrs.get(_ds.IS_SCHEDULED)
    a, b = RNG.standard_normal((64, 32)), RNG.standard_normal((32, 64))
    x = RNG.standard_normal((64, 64, 8))
    a, b, x = (t.astype("float32") for t in (a, b, x))
    out = tvm.nd.empty((64, 64), "float32")
    tvm.build(scheduled, target="llvm")(*map(tvm.nd.array, (a, b, x)), out)
    np.testing.assert_allclose(out.numpy(), a @ b + reference(x), rtol=1e-4, atol=1e-4)
    # the product still gets its register tile (a `local` accumulator)
    assert "local" in {buf.scope() for buf in scheduled.body.block.alloc_buffers}


def test_transcendental_stage_read_once_per_element_is_still_inlined() -> None:
    x = te.placeholder((32, 48), name="x")
    e = te.compute((32, 48), lambda i, j: te.exp(x[i, j]), name="e")
    y = te.compute((32, 48), lambda i, j: e[i, j] * 2.0, name="y")
    scheduled = _ds.default_schedule_func(te.create_prim_func([x, y]))
    assert "e" not in blocks(scheduled), scheduled.script()  # inlined into y


def _softmax_exp_once(shape):
    """Softmax with exp computed once into a stage that both the sum and the norm read."""
    A = te.placeholder(shape, name="A")
    *lead, n = shape
    r = te.reduce_axis((0, n), name="r")
    M = te.compute(tuple(lead), lambda *i: te.max(A[(*i, r)], axis=r), name="M")
    E = te.compute(shape, lambda *i: te.exp(A[i] - M[i[:-1]]), name="E")
    r2 = te.reduce_axis((0, n), name="r2")
    S = te.compute(tuple(lead), lambda *i: te.sum(E[(*i, r2)], axis=r2), name="S")
    O = te.compute(shape, lambda *i: E[i] / S[i[:-1]], name="O")
    return te.create_prim_func([A, O])


@pytest.mark.parametrize("shape", [(128, 768), (3, 5, 40), (9, 17)])
def test_exp_stage_read_by_sum_and_norm_is_computed_once(shape) -> None:
    scheduled = _ds.default_schedule_func(_softmax_exp_once(shape))
    assert "E" in blocks(scheduled), scheduled.script()  # not inlined into S and O
    assert not _an._calls(blocks(scheduled)["O"], _an._EXP)
    x = RNG.standard_normal(shape).astype("float32") * 3
    out = tvm.nd.empty(shape, "float32")
    tvm.build(scheduled, target="llvm")(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), np_softmax(x), rtol=1e-5, atol=1e-6)
