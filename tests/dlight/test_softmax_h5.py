"""Softmax on CPU as one parallel loop over rows: each row's max, exp (computed once, kept in
L1), sum and scaled output under it; results match numpy and torch for static, odd and
symbolic rows, fused producers, log_softmax, and the other row reductions stay right."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm as tvm
from minitvm import dlight as dl
from minitvm import relax, te, tir, topi
from minitvm.relax import op
from minitvm.tir.expr import Call
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind

T = relax.TensorStructInfo

SHAPES = [(8, 4, 128, 128), (8, 4, 197, 197), (1, 4, 128, 128), (8, 128, 1000), (3, 7), (5, 77)]


def _module(shapes, body, dtype="float32"):
    params = [relax.Var(f"p{k}", T(s, dtype)) for k, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return bb.get()


def _run(mod, *arrays):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in arrays]).numpy()


def _numpy_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _scheduled(shape, fn=topi.nn.softmax, dtype="float32"):
    x = te.placeholder(shape, dtype=dtype, name="x")
    mod = tvm.IRModule({"main": te.create_prim_func([x, fn(x)])})
    return dl.ApplyDefaultSchedule(*dl.cpu.DEFAULT_RULES)(mod)["main"]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_softmax_matches_numpy_and_torch(shape):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype("float32") * 4
    got = _run(_module([shape], lambda a: op.nn.softmax(a, axis=-1)), x)
    np.testing.assert_allclose(got, _numpy_softmax(x), rtol=2e-6, atol=1e-7)
    want = torch.softmax(torch.from_numpy(x), -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(8, 4, 197, 197), (8, 128, 1000), (3, 7), (5, 77)], ids=str)
def test_log_softmax_matches_torch(shape):
    x = np.random.default_rng(3).standard_normal(shape).astype("float32") * 4
    got = _run(_module([shape], lambda a: op.nn.log_softmax(a, axis=-1)), x)
    want = torch.log_softmax(torch.from_numpy(x).double(), -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("shape", [(6, 197), (4, 128), (3, 7)], ids=str)
def test_softmax_float64_matches_torch(shape):
    x = np.random.default_rng(4).standard_normal(shape) * 4
    got = _run(_module([shape], lambda a: op.nn.softmax(a, axis=-1), "float64"), x)
    np.testing.assert_allclose(got, torch.softmax(torch.from_numpy(x), -1).numpy(), rtol=1e-13)


@pytest.mark.parametrize("width", [128, 197, 77])
def test_softmax_over_symbolic_rows_matches_numpy(width):
    n = tir.Var("n", "int64")
    mod = _module([(n, 4, width)], lambda a: op.nn.softmax(a, axis=-1))
    ex = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for rows in (1, 5, 33):
        x = np.random.default_rng(rows).standard_normal((rows, 4, width)).astype("float32")
        got = ex["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(got, _numpy_softmax(x), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [op.nn.softmax, op.nn.log_softmax], ids=["softmax", "log"])
def test_softmax_over_a_row_of_symbolic_length_matches_torch(fn):
    n = tir.Var("n", "int64")
    mod = _module([(2, n, n)], lambda a: fn(a, axis=-1))
    ex = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    ref = torch.softmax if fn is op.nn.softmax else torch.log_softmax
    for width in (1, 7, 16, 77, 200):
        x = np.random.default_rng(width).standard_normal((2, width, width)).astype("float32")
        got = ex["main"](tvm.nd.array(x)).numpy()
        want = ref(torch.from_numpy(x).double(), -1).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("width", [128, 197])
def test_attention_softmax_with_fused_scale_and_mask_matches_torch(width):
    shape, mshape = (2, 4, width, width), (2, 1, 1, width)

    def body(s, m):
        return op.nn.softmax(op.add(op.multiply(s, relax.const(0.125, "float32")), m), axis=-1)

    rng = np.random.default_rng(width)
    s = rng.standard_normal(shape).astype("float32") * 8
    m = np.where(rng.random(mshape) < 0.2, -1e9, 0).astype("float32")
    got = _run(_module([shape, mshape], body), s, m)
    want = torch.softmax(torch.from_numpy(s) * 0.125 + torch.from_numpy(m), -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def _top_loops(func):
    body = func.body.block.body
    return list(body.seq) if hasattr(body, "seq") else [body]


def _exp_calls(func) -> int:
    calls = []
    post_order_visit(
        func.body,
        lambda n: calls.append(n) if isinstance(n, Call) and n.op.name == "tir.exp" else None,
    )
    return len(calls)


@pytest.mark.parametrize("shape", [(8, 4, 128, 128), (8, 4, 197, 197), (8, 128, 1000)], ids=str)
def test_softmax_is_one_parallel_row_loop_computing_exp_once(shape):
    func = _scheduled(shape)
    # no serial pass over all rows (the lanes' cross-lane reduce runs inside the row loop)
    (loop,) = _top_loops(func)
    assert isinstance(loop, For) and loop.kind is ForKind.PARALLEL, func.script()
    assert _exp_calls(func) == 1, func.script()
    assert "T.vectorized" in func.script()


def test_log_softmax_is_one_parallel_row_loop():
    func = _scheduled((8, 4, 128, 128), topi.nn.log_softmax)
    (loop,) = _top_loops(func)
    assert isinstance(loop, For) and loop.kind is ForKind.PARALLEL, func.script()


def test_softmax_scales_by_the_reciprocal_of_the_sum():
    script = _scheduled((4, 128)).script()
    assert "T_softmax_exp[v_i0, v_i1] * (T.float32(1) / T_softmax_expsum[v_i0])" in script


@pytest.mark.parametrize(
    "name, body, ref",
    [
        (
            "layer_norm",
            lambda x: op.nn.layer_norm(
                x, relax.const(np.ones(197, "float32")), relax.const(np.zeros(197, "float32")), [-1]
            ),
            lambda x: torch.nn.functional.layer_norm(torch.from_numpy(x), (197,)).numpy(),
        ),
        ("mean", lambda x: op.mean(x, axis=[-1]), lambda x: x.mean(-1)),
        ("argmax", lambda x: op.argmax(x, axis=-1), lambda x: x.argmax(-1)),
    ],
)
def test_other_row_reductions_stay_right(name, body, ref):
    x = np.random.default_rng(5).standard_normal((4, 33, 197)).astype("float32")
    np.testing.assert_allclose(_run(_module([x.shape], body), x), ref(x), rtol=1e-5, atol=1e-5)
