"""A product with a transposed A, `gᵀ @ x` (a linear layer's weight gradient, imported as
`matmul(permute_dims(g), x)`): the default CPU schedule inlines the transpose and register-tiles
the product whatever the output's orientation, so a weight taller than wide keeps its gradient
in its own layout (`relax.op.grad_layout`)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.dlight.cpu import default_schedule_func
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Block, For, ForKind


def transposed_a_te(rows, m: int, n: int, sgd: bool = False):
    """g [rows, m], x [rows, n] -> gᵀ @ x [m, n], the transpose a stage of its own (as the
    relax import fuses it); `sgd` adds W [m, n] and returns the update `W - 0.1 * gᵀ @ x`."""
    g = te.placeholder((rows, m), name="g")
    x = te.placeholder((rows, n), name="x")
    gt = te.compute((m, rows), lambda i, k: g[k, i], name="T_transpose")
    r = te.reduce_axis((0, rows), name="k")
    dw = te.compute((m, n), lambda i, j: te.sum(gt[i, r] * x[r, j], axis=r), name="dW")
    if not sgd:
        return [g, x, dw]
    w = te.placeholder((m, n), name="W")
    upd = te.compute(
        (m, n), lambda i, j: w[i, j] - te.const(0.1, "float32") * dw[i, j], name="W_new"
    )
    return [g, x, w, upd]


def _scheduled(tensors):
    func = te.create_prim_func(tensors).with_attr("global_symbol", "main")
    return default_schedule_func(func)


def _run(func, rows: int, m: int, n: int, sgd: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((rows, m)).astype("float32")
    x = rng.standard_normal((rows, n)).astype("float32")
    want = g.T.astype(np.float64) @ x.astype(np.float64)
    ins = [g, x]
    if sgd:
        w = rng.standard_normal((m, n)).astype("float32")
        want = w - 0.1 * want
        ins.append(w)
    out = tvm.nd.array(np.zeros((m, n), "float32"))
    tvm.build(tvm.IRModule({"main": func}), target="llvm")(*map(tvm.nd.array, ins), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-4 * np.sqrt(rows))


SHAPES = [  # (rows reduced, m, n): the training shapes, both orientations, and odd sizes
    (1024, 1024, 256),
    (1024, 256, 1024),
    (1024, 768, 256),
    (1024, 256, 256),
    (1024, 1000, 256),
    (8 * 128, 256, 768),
    (77, 197, 7),
    (197, 7, 77),
    (7, 77, 197),
]


@pytest.mark.parametrize("rows, m, n", SHAPES)
def test_transposed_a_product_matches_numpy(rows, m, n):
    _run(_scheduled(transposed_a_te(rows, m, n)), rows, m, n)


@pytest.mark.parametrize("m, n", [(1024, 256), (256, 1024), (197, 77)])
@pytest.mark.parametrize("size", [1, 7, 300])
def test_transposed_a_product_over_a_symbolic_batch_matches_numpy(m, n, size):
    rows = tir.Var("n", "int64")  # a training batch
    _run(_scheduled(transposed_a_te(rows, m, n)), size, m, n, seed=size)


@pytest.mark.parametrize("rows, m, n", [(1024, 1024, 256), (1024, 256, 1024), (77, 197, 7)])
def test_transposed_a_product_with_a_fused_sgd_update_matches_numpy(rows, m, n):
    _run(_scheduled(transposed_a_te(rows, m, n, sgd=True)), rows, m, n, sgd=True)


def _loops_above(func, name: str) -> list[For]:
    """The loops enclosing block `name`, outermost first."""
    found: list[list[For]] = []

    def walk(stmt, path):
        if isinstance(stmt, Block) and stmt.name_hint == name:
            found.append(path)
        if isinstance(stmt, For):
            path = [*path, stmt]
        for child in _children(stmt):
            walk(child, path)

    walk(func.body, [])
    assert len(found) == 1, f"block '{name}' found {len(found)} times"
    return found[0]


def _children(stmt) -> list:
    kids: list = []
    for field in ("body", "seq", "block"):
        v = getattr(stmt, field, None)
        if v is None:
            continue
        kids.extend(v if isinstance(v, tuple) else (v,))
    return [k for k in kids if k is not None and not isinstance(k, (int, str))]


def _block_names(func) -> set:
    names: set = set()
    post_order_visit(func.body, lambda s: names.add(s.name_hint) if isinstance(s, Block) else None)
    return names


@pytest.mark.parametrize("m, n", [(1024, 256), (256, 1024)])
def test_tall_and_wide_outputs_get_the_same_register_tile(m, n):
    """Both orientations read g directly (no transpose stage) in a register tile: the reduction
    over k, unrolled rows, then a vector of columns, the tile's sizes the same for both."""
    func = _scheduled(transposed_a_te(1024, m, n))
    assert "T_transpose" not in _block_names(func)
    kinds = [(lp.kind, int(lp.extent)) for lp in _loops_above(func, "dW_update")]
    assert kinds[-3:] == [(ForKind.UNROLLED, 4), (ForKind.UNROLLED, 4), (ForKind.VECTORIZED, 64)]
    assert kinds[0][0] == ForKind.PARALLEL


def _update_reads(func, name: str = "dW_update") -> list:
    """The buffers the product block `name` reads."""
    found: list = []
    post_order_visit(
        func.body,
        lambda s: (
            found.extend(r.buffer for r in s.reads)
            if isinstance(s, Block) and s.name_hint == name
            else None
        ),
    )
    return found


@pytest.mark.parametrize("m, n", [(1024, 256), (256, 1024)])
def test_deep_transposed_a_with_aliasing_rows_is_packed_into_row_panels(m, n):
    """4096 rows reduced, A's rows a power of two of bytes apart: the tile reads A from row
    panels [m // rows, 4096, rows] (unpacked it read a few floats of each of 4096 rows, in a
    few cache sets, once per column panel)."""
    func = _scheduled(transposed_a_te(4096, m, n))
    a = next(b for b in _update_reads(func) if b.name.startswith("g"))
    assert a.name != "g" and len(a.shape) == 3
    assert [int(d) for d in a.shape[1:]] == [4096, int(a.shape[2])]
    assert int(a.shape[0]) * int(a.shape[2]) == m


@pytest.mark.parametrize("rows, m", [(2048, 1024), (4096, 768), (1024, 1024)])
def test_shallow_or_unaliased_transposed_a_reads_g_directly(rows, m):
    func = _scheduled(transposed_a_te(rows, m, 256))
    assert any(b.name == "g" for b in _update_reads(func))


@pytest.mark.parametrize("m, n, sgd", [(1024, 256, False), (256, 1024, True)])
def test_packed_transposed_a_matches_numpy(m, n, sgd):
    _run(_scheduled(transposed_a_te(4096, m, n, sgd)), 4096, m, n, sgd=sgd)


def test_packed_transposed_a_over_flattened_batch_rows_matches_numpy():
    """g [8, 512, m] read as gᵀ over the flattened 8 x 512 rows (a weight gradient of a 3-D
    input): packed as [m // rows, 8 * 512, rows]."""
    g = te.placeholder((8, 512, 256), name="g")
    x = te.placeholder((8, 512, 64), name="x")
    b = te.reduce_axis((0, 8), name="b")
    s = te.reduce_axis((0, 512), name="s")
    dw = te.compute((256, 64), lambda i, j: te.sum(g[b, s, i] * x[b, s, j], axis=[b, s]), name="dW")
    func = _scheduled([g, x, dw])
    a = next(buf for buf in _update_reads(func) if buf.name.startswith("g"))
    assert a.name != "g" and int(a.shape[1]) == 8 * 512  # rows flattened: no div per k step
    rng = np.random.default_rng(1)
    gn = rng.standard_normal((8, 512, 256)).astype("float32")
    xn = rng.standard_normal((8, 512, 64)).astype("float32")
    want = gn.reshape(-1, 256).T.astype(np.float64) @ xn.reshape(-1, 64).astype(np.float64)
    out = tvm.nd.array(np.zeros((256, 64), "float32"))
    tvm.build(tvm.IRModule({"main": func}), target="llvm")(tvm.nd.array(gn), tvm.nd.array(xn), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-4 * 64)
