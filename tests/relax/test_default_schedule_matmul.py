"""DefaultSchedule on matmul, dense and batch matmul: B is copied into column panels when the
rows are many (always for a weight in [N, K] layout, whose vector loop would gather), the
register tile reads the panels, and every shape matches numpy."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.tir.function import PrimFunc

_ds = importlib.import_module("minitvm.dlight.cpu")


def matmul_te(m, k, n, batch=None, transposed=False):
    """C = A @ B (B given as [N, K] when `transposed`), optionally batched."""
    lead = () if batch is None else (batch,)
    A = te.placeholder((*lead, m, k), name="A")
    B = te.placeholder((*lead, n, k) if transposed else (*lead, k, n), name="B")
    r = te.reduce_axis((0, k), "k")

    def body(*idx):
        *b, i, j = idx
        bv = B[(*b, j, r)] if transposed else B[(*b, r, j)]
        return te.sum(A[(*b, i, r)] * bv, axis=r)

    return A, B, te.compute((*lead, m, n), body, name="C")


def scheduled(tensors) -> PrimFunc:
    return _ds.default_schedule_func(te.create_prim_func(list(tensors)))


def allocs(func: PrimFunc) -> dict[str, tuple]:
    return {
        b.name: (b.scope(), tuple(d if isinstance(d, tir.Var) else int(d) for d in b.shape))
        for b in func.body.block.alloc_buffers
    }


def check(tensors, func, sizes: dict, transposed: bool, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    shape = lambda t: [sizes.get(d.name, 0) if isinstance(d, tir.Var) else int(d) for d in t.shape]
    a, b = (rng.standard_normal(shape(t)).astype("float32") for t in tensors[:2])
    c = tvm.nd.array(np.zeros(shape(tensors[2]), "float32"))
    tvm.build(func, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), c)
    ref = a @ (np.swapaxes(b, -1, -2) if transposed else b)
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transposed", [False, True], ids=["KN", "NK"])
@pytest.mark.parametrize(
    "m, k, n, batch",
    [(64, 64, 256, None), (37, 29, 200, None), (96, 7, 96, 3), (41, 1, 384, None)],
)
def test_many_rows_pack_b_into_column_panels(m, k, n, batch, transposed, monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    # small shapes, same rule
    monkeypatch.setattr("minitvm.dlight.cpu.matmul.MATMUL_PACK_MIN_ROWS", 32)
    monkeypatch.setattr("minitvm.dlight.cpu.matmul.MATMUL_PACK_MIN_B_BYTES", 0)
    tensors = matmul_te(m, k, n, batch, transposed)
    func = scheduled(tensors)
    tile = _ds.matmul_tile(m, n, k)
    lead = () if batch is None else (batch,)
    found = allocs(func)
    assert found["B_global"] == ("global", (*lead, n // tile.cols, k, tile.cols))
    assert found["C_local"][0] == "local"
    # the panels are copied once, before the tiles, not under a tile loop
    top = func.body.block.body.seq
    assert 'T.block("B_global")' in top[0].script() and "C_update" not in top[0].script()
    check(tensors, func, {}, transposed)


def test_few_rows_stream_b_unpacked_and_a_transposed_weight_gets_dot_products() -> None:
    # B [K, N] is packed from MATMUL_PACK_MIN_ROWS rows and a B beyond L2 on (a copy each
    # call must pay)
    assert set(allocs(scheduled(matmul_te(256, 1024, 1024)))) == {"C_local"}
    assert set(allocs(scheduled(matmul_te(512, 512, 512)))) == {"C_local"}
    assert set(allocs(scheduled(matmul_te(512, 1024, 1024)))) == {"B_global", "C_local"}
    func = scheduled(matmul_te(8, 64, 256))
    assert set(allocs(func)) == {"C_local"}  # register tile, B read in place
    func = scheduled(matmul_te(8, 64, 256, transposed=True))
    # no copy of W for 8 rows: each output a dot product of two contiguous rows, a vector of
    # partial sums (rfactor) then the lanes added up
    assert set(allocs(func)) == {"C_rf"}
    check(matmul_te(8, 64, 256, transposed=True), func, {}, True)


def test_blocked_conv_weights_are_not_packed_again() -> None:
    # B[k, j] whose rows are one panel wide already (16 columns): nothing to gain
    func = scheduled(matmul_te(256, 64, 16))
    assert set(allocs(func)) == {"C_local"}


def test_symbolic_batch_linear_packs_the_weight_and_works_for_any_batch(monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    n = tir.Var("n", "int32")
    tensors = matmul_te(n, 24, 64, transposed=True)
    func = scheduled(tensors)
    assert allocs(func)["B_global"] == ("global", (1, 24, 64))
    for rows in (1, 5, 40):
        check(tensors, func, {"n": rows}, True, seed=rows)


def test_panel_copy_writes_each_panel_in_order() -> None:
    func = scheduled(matmul_te(64, 32, 128, transposed=True))
    script = func.script()
    # loops (j // 64, k, j % 64): the panel row is the vectorized innermost loop
    assert "B_global[v0 // 64, v1, v0 % 64] = B[v0, v1]" in script
    assert "T.vectorized(64)" in script


def _outer_loops(func: PrimFunc) -> list:
    """(loop var name, extent, kind) of the loops around the matmul's update block."""
    from minitvm.tir.functor import post_order_visit
    from minitvm.tir.stmt import For

    nest: list = []

    def visit(n):
        if isinstance(n, For) and "C_update" in n.script() and "C_local" in n.script():
            nest.append((n.loop_var.name, int(n.extent), n.kind.name))

    post_order_visit(func.body, visit)
    return nest[::-1]  # post order: innermost first


@pytest.mark.parametrize("m, k, n", [(37, 512, 576), (1, 520, 576), (128, 768, 768)])
def test_unpacked_b_beyond_l2_walks_column_strips_outermost(m, k, n, monkeypatch) -> None:
    # B [K, N] of over 1 MB and too few rows to pack: the column-strip loop is outermost and
    # parallel, the row tiles inside, so one strip of B stays in L2 across the row tiles
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    tensors = matmul_te(m, k, n)
    func = scheduled(tensors)
    assert set(allocs(func)) == {"C_local"}
    tile = _ds.matmul_tile(m, n, k)
    first = _outer_loops(func)[0]
    assert first[1:] == (n // tile.cols, "PARALLEL"), _outer_loops(func)
    check(tensors, func, {}, False)


def test_unpacked_b_within_l2_keeps_row_tiles_outermost(monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    tensors = matmul_te(40, 64, 256)
    func = scheduled(tensors)
    first = _outer_loops(func)[0]
    assert first[1] == 40 // _ds.matmul_tile(40, 256, 64).rows, _outer_loops(func)
    check(tensors, func, {}, False)


@pytest.mark.parametrize(
    "n, cols", [(48, 16), (144, 16), (240, 16), (768, 64), (96, 32), (100, 100)]
)
def test_register_tile_width_is_a_multiple_of_whole_vectors_that_measured_fast(n, cols) -> None:
    # three-vector (48-wide) tiles ran 6x slower than 16-wide ones; a short row that no
    # vector width divides is one tile
    assert _ds.matmul_tile(64, n, 32).cols == cols


@pytest.mark.parametrize("m, k, n", [(29, 37, 144), (8, 16, 48)])
def test_matmul_with_a_multiple_of_48_columns_matches_numpy(m, k, n, monkeypatch) -> None:
    monkeypatch.setattr("minitvm.dlight.cpu.utils.PARALLEL_MIN_WORK", 1)
    tensors = matmul_te(m, k, n)
    func = scheduled(tensors)
    assert allocs(func)["C_local"][0] == "local"
    check(tensors, func, {}, False)
