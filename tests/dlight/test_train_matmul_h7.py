"""A weight gradient over a training batch, `gᵀ @ x` reduced over a symbolic batch n (a linear
layer's dW, imported as `matmul(permute_dims(g), x)` with int64 dims as relax makes them): the
default CPU schedule packs both operands into panels (`is_batch_deep`), which keeps the sums
and their order, while inference products (a static weight B) keep their schedule."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.dlight.cpu import default_schedule_func
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Block


def _i64(v: int):
    return tir.IntImm("int64", v)


def weight_grad_te(m: int, n: int, sgd: bool = True):
    """g [rows, m], x [rows, n] over a symbolic batch of rows -> W - 0.01 * gᵀ @ x [m, n]."""
    rows = tir.Var("n", "int64")
    g = te.placeholder((rows, _i64(m)), name="g")
    x = te.placeholder((rows, _i64(n)), name="x")
    gt = te.compute((_i64(m), rows), lambda i, k: g[k, i], name="T_transpose")
    r = te.reduce_axis((_i64(0), rows), name="k")
    dw = te.compute((_i64(m), _i64(n)), lambda i, j: te.sum(gt[i, r] * x[r, j], axis=r), name="dW")
    if not sgd:
        return [g, x, dw]
    w = te.placeholder((_i64(m), _i64(n)), name="W")
    upd = te.compute(
        (_i64(m), _i64(n)),
        lambda i, j: w[i, j] - te.const(0.01, "float32") * dw[i, j],
        name="W_new",
    )
    return [g, x, w, upd]


def _scheduled(tensors):
    func = te.create_prim_func(tensors).with_attr("global_symbol", "main")
    return default_schedule_func(func)


def _block_names(func) -> set[str]:
    names = set()
    post_order_visit(func.body, lambda n: names.add(n.name_hint) if isinstance(n, Block) else None)
    return names


def _run(func, rows: int, m: int, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((rows, m)).astype("float32")
    x = rng.standard_normal((rows, n)).astype("float32")
    w = rng.standard_normal((m, n)).astype("float32")
    want = w - 0.01 * (g.T.astype(np.float64) @ x.astype(np.float64))
    out = tvm.nd.array(np.zeros((m, n), "float32"))
    mod = tvm.build(tvm.IRModule({"main": func}), target="llvm")
    mod(tvm.nd.array(g), tvm.nd.array(x), tvm.nd.array(w), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5 * np.sqrt(rows))


# (m, n): GPT-2 bench's weights (lm_head 1000 x 256 with 5-row tiles, c_fc, c_attn) and odd ones
SHAPES = [(1000, 256), (256, 1024), (1024, 256), (256, 768), (96, 200), (40, 48)]


@pytest.mark.parametrize("m, n", SHAPES)
@pytest.mark.parametrize("rows", [1, 7, 300, 1024])
def test_weight_grad_over_a_symbolic_batch_matches_numpy(m, n, rows):
    _run(_scheduled(weight_grad_te(m, n)), rows, m, n, seed=rows)


@pytest.mark.parametrize("m, n", [(1000, 256), (256, 1024), (256, 768)])
def test_weight_grad_over_a_symbolic_batch_packs_both_operands(m, n):
    names = _block_names(_scheduled(weight_grad_te(m, n)))
    assert {"g_global", "x_global"} <= names, sorted(names)


def test_weight_grad_with_few_rows_leaves_its_b_in_place():
    # 8 rows of output: copying x [n, 256] would cost as much as the product
    names = _block_names(_scheduled(weight_grad_te(8, 256)))
    assert "x_global" not in names, sorted(names)


def test_inference_dense_over_a_symbolic_batch_keeps_its_b_in_place():
    rows = tir.Var("n", "int64")
    x = te.placeholder((rows, _i64(256)), name="x")
    w = te.placeholder((_i64(256), _i64(1024)), name="W")
    r = te.reduce_axis((_i64(0), _i64(256)), name="k")
    y = te.compute((rows, _i64(1024)), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="Y")
    assert "W_global" not in _block_names(_scheduled([x, w, y]))
