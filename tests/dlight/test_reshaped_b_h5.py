"""A product whose B is read through a reshape, `gᵀ @ reshape(x, (b * s, n))` (a linear layer's
weight gradient over a 3-D input, the reshape inlined: `x[k // s, k % s, j]`): the default CPU
schedule packs B into column panels with its leading dims flattened into the panel's k, so the
register tile reads `Bp[j // c, k, j % c]` with no division per reduction step."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.dlight.cpu import default_schedule_func
from minitvm.tir.expr import BufferLoad, FloorDiv, FloorMod
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Block


def reshaped_b_te(b, s: int, m: int, n: int, a_reshaped: bool):
    """x [b, s, n] read as x2 [b * s, n]; A is gᵀ [m, b * s] given as it is, or (`a_reshaped`)
    g [b, s, m] transposed through the same reshape; returns [A's input, x, gᵀ @ x2]."""
    rows = b * s
    x = te.placeholder((b, s, n), name="x")
    x2 = te.compute((rows, n), lambda k, j: x[k // s, k % s, j], name="T_reshape_x")
    if a_reshaped:
        g = te.placeholder((b, s, m), name="g")
        g2 = te.compute((rows, m), lambda k, i: g[k // s, k % s, i], name="T_reshape_g")
        gt = te.compute((m, rows), lambda i, k: g2[k, i], name="T_transpose")
    else:
        g = gt = te.placeholder((m, rows), name="gt")
    r = te.reduce_axis((0, rows), name="k")
    dw = te.compute((m, n), lambda i, j: te.sum(gt[i, r] * x2[r, j], axis=r), name="dW")
    return [g, x, dw]


def _scheduled(tensors):
    func = te.create_prim_func(tensors).with_attr("global_symbol", "main")
    return default_schedule_func(func)


def _run(func, b: int, s: int, m: int, n: int, a_reshaped: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((b, s, m)).astype("float32")
    x = rng.standard_normal((b, s, n)).astype("float32")
    g2 = g.reshape(b * s, m)
    want = g2.T.astype(np.float64) @ x.reshape(b * s, n).astype(np.float64)
    a = g if a_reshaped else np.ascontiguousarray(g2.T)
    out = tvm.nd.array(np.zeros((m, n), "float32"))
    tvm.build(tvm.IRModule({"main": func}), target="llvm")(tvm.nd.array(a), tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-4 * np.sqrt(b * s))


SHAPES = [  # (batch, seq, m, n): the training shapes, both orientations, and odd sequences
    (8, 128, 1024, 256),
    (8, 128, 256, 1024),
    (8, 512, 768, 256),
    (8, 512, 256, 768),
    (8, 77, 256, 256),
    (3, 7, 77, 64),
    (8, 7, 1000, 48),
]


@pytest.mark.parametrize("a_reshaped", [False, True])
@pytest.mark.parametrize("b, s, m, n", SHAPES)
def test_product_with_reshaped_b_matches_numpy(b, s, m, n, a_reshaped):
    _run(_scheduled(reshaped_b_te(b, s, m, n, a_reshaped)), b, s, m, n, a_reshaped)


@pytest.mark.parametrize("a_reshaped", [False, True])
@pytest.mark.parametrize("s, m, n", [(128, 256, 1024), (77, 197, 64), (7, 1024, 256)])
@pytest.mark.parametrize("size", [1, 5])
def test_product_with_reshaped_b_over_a_symbolic_batch_matches_numpy(s, m, n, size, a_reshaped):
    b = tir.Var("n", "int64")  # a training batch
    func = _scheduled(reshaped_b_te(b, s, m, n, a_reshaped))
    _run(func, size, s, m, n, a_reshaped, seed=size)


def _product_loads(func) -> list[BufferLoad]:
    """The loads in the matmul's update block `dW_update`."""
    blocks: list[Block] = []
    post_order_visit(func.body, lambda n: blocks.append(n) if isinstance(n, Block) else None)
    update = [blk for blk in blocks if blk.name_hint == "dW_update"]
    assert len(update) == 1, [blk.name_hint for blk in blocks]
    loads: list[BufferLoad] = []
    post_order_visit(
        update[0].body, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None
    )
    return loads


@pytest.mark.parametrize("a_reshaped", [False, True])
@pytest.mark.parametrize("b, s, m, n", [(8, 512, 1024, 256), (8, 128, 256, 1024), (8, 77, 256, 64)])
def test_reshaped_b_is_packed_into_flat_column_panels(b, s, m, n, a_reshaped):
    func = _scheduled(reshaped_b_te(b, s, m, n, a_reshaped))
    loads = _product_loads(func)
    assert not any(ld.buffer.name == "x" for ld in loads), "the tile reads x in place"
    panels = [ld for ld in loads if ld.buffer.name.startswith("x")]
    assert len(panels) == 1 and len(panels[0].indices) == 3
    found: list = []
    post_order_visit(
        panels[0].indices[1],
        lambda e: found.append(e) if isinstance(e, FloorDiv | FloorMod) else None,
    )
    assert not found, f"the panel's k index divides: {panels[0]}"


def test_reshaped_b_under_few_rows_is_not_packed():
    func = _scheduled(reshaped_b_te(8, 64, 16, 256, False))
    assert not any(ld.buffer.name.endswith("_global") for ld in _product_loads(func))
    _run(func, 8, 64, 16, 256, False)


def test_product_with_a_scalar_operand_schedules_and_matches_numpy():
    # a 0-d tensor inside the product (an attention scale, as ONNX's FlexAttention expands):
    # the reshaped-B check must not look for a last index it does not have
    a = te.placeholder((64, 48), name="a")
    w = te.placeholder((48, 96), name="w")
    scale = te.placeholder((), name="scale")
    k = te.reduce_axis((0, 48), name="k")
    out = te.compute(
        (64, 96), lambda i, j: te.sum(a[i, k] * w[k, j] * scale[()], axis=k), name="dW"
    )
    func = _scheduled([a, w, scale, out])
    lib = tvm.build(func, target="llvm")
    rng = np.random.default_rng(0)
    xa, xw = rng.standard_normal((64, 48), "float32"), rng.standard_normal((48, 96), "float32")
    xs = np.array(0.5, "float32")
    got = tvm.nd.array(np.zeros((64, 96), "float32"))
    lib(tvm.nd.array(xa), tvm.nd.array(xw), tvm.nd.array(xs), got)
    np.testing.assert_allclose(got.numpy(), xa @ xw * 0.5, rtol=1e-5, atol=1e-5)
