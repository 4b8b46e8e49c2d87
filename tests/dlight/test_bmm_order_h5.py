"""Batched products whose operands each read their own batch slice (attention's q @ k.T and
attn @ V, any bmm) keep their batch loops outermost in the default CPU schedule: fused with
the row tiles (or the column panels) below them into one parallel loop, so each head's B is
read once per head instead of once per row tile. Products whose B is shared (a dense over a
3-D input, a conv) keep the widest loop outermost."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.dlight.cpu import default_schedule_func
from minitvm.dlight.cpu.matmul import _batch_outer, _independent_batches
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Block, BlockRealize, For, ForKind


def bmm_te(batch: tuple, m: int, k: int, n: int, trans_b: bool = False):
    """A [*batch, m, k] @ B [*batch, k, n] (B given as [*batch, n, k] when `trans_b`)."""
    a = te.placeholder((*batch, m, k), name="A")
    b = te.placeholder((*batch, n, k) if trans_b else (*batch, k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    nb = len(batch)

    def body(*ix):
        bi, i, j = ix[:nb], ix[nb], ix[nb + 1]
        rhs = b[(*bi, j, r)] if trans_b else b[(*bi, r, j)]
        return te.sum(a[(*bi, i, r)] * rhs, axis=r)

    return [a, b, te.compute((*batch, m, n), body, name="C")]


def dense_te(batch: int, m: int, k: int, n: int):
    """x [batch, m, k] @ W [k, n]: one W for every batch."""
    x = te.placeholder((batch, m, k), name="x")
    w = te.placeholder((k, n), name="W")
    r = te.reduce_axis((0, k), name="r")
    out = te.compute((batch, m, n), lambda b, i, j: te.sum(x[b, i, r] * w[r, j], axis=r), name="C")
    return [x, w, out]


def _scheduled(tensors):
    func = te.create_prim_func(tensors).with_attr("global_symbol", "main")
    return default_schedule_func(func)


def _run(func, shapes, trans_b: bool, seed: int):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(s).astype("float32") for s in shapes)
    bn = np.swapaxes(b, -1, -2) if trans_b else b
    want = a.astype(np.float64) @ bn.astype(np.float64)
    out = tvm.nd.array(np.zeros(want.shape, "float32"))
    tvm.build(tvm.IRModule({"main": func}), target="llvm")(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-4 * np.sqrt(a.shape[-1]))


CASES = [  # (batch, m, k, n, trans_b)
    ((8,), 197, 197, 64, False),  # ViT's attn @ V, heads folded into the batch
    ((8, 4), 197, 197, 64, False),  # ViT's attn @ V
    ((8, 4), 197, 64, 197, True),  # ViT's q @ k.T
    ((32,), 128, 64, 128, False),  # BERT's q @ k.T, k given transposed
    ((32,), 128, 64, 128, True),
    ((1,), 7, 5, 3, False),
    ((3, 2), 17, 9, 33, True),
]


@pytest.mark.parametrize("batch, m, k, n, trans_b", CASES)
def test_batched_product_matches_numpy(batch, m, k, n, trans_b):
    func = _scheduled(bmm_te(batch, m, k, n, trans_b))
    b_shape = (*batch, n, k) if trans_b else (*batch, k, n)
    _run(func, [(*batch, m, k), b_shape], trans_b, seed=m + 3 * k + 7 * n)


@pytest.mark.parametrize("trans_b", [False, True], ids=["KN", "NK"])
@pytest.mark.parametrize("size", [1, 3, 8])
def test_batched_product_with_a_symbolic_batch_matches_numpy(size, trans_b):
    nb = tir.Var("n", "int64")  # a training batch
    func = _scheduled(bmm_te((nb, 4), 65, 64, 197, trans_b))
    b_shape = (size, 4, 197, 64) if trans_b else (size, 4, 64, 197)
    _run(func, [(size, 4, 65, 64), b_shape], trans_b, seed=size)


def _block_names(stmt) -> list[str]:
    names: list[str] = []
    post_order_visit(stmt, lambda n: names.append(n.name_hint) if isinstance(n, Block) else None)
    return names


def _outermost_loop(func, name: str = "C_update") -> For:
    """The outermost loop of the nest holding block `name` (a packed copy of B may come first)."""
    body = func.body.block.body
    for stmt in getattr(body, "seq", (body,)):
        if name in _block_names(stmt):
            assert isinstance(stmt, For), type(stmt)
            return stmt
    raise AssertionError(f"no loop nest holds block '{name}'")


def _bindings(func, name: str) -> list:
    found = []
    post_order_visit(
        func.body,
        lambda n: (
            found.append(n) if isinstance(n, BlockRealize) and n.block.name_hint == name else None
        ),
    )
    (realize,) = found
    return list(realize.iter_values)


def _loop_vars(expr) -> set:
    found = set()
    post_order_visit(expr, lambda n: found.add(n) if isinstance(n, tir.Var) else None)
    return found


@pytest.mark.parametrize("trans_b", [False, True], ids=["attn_v", "q_kt"])
def test_attention_product_runs_batch_and_heads_outermost_in_parallel(trans_b):
    # the old order ran the 50 row tiles of attn @ V outermost, all 32 heads inside
    m, k, n = (197, 64, 197) if trans_b else (197, 197, 64)
    func = _scheduled(bmm_te((8, 4), m, k, n, trans_b))
    outer = _outermost_loop(func)
    assert outer.kind == ForKind.PARALLEL, func.script()
    assert int(outer.extent) % 32 == 0, outer.extent  # batch x heads fused in it
    batch, heads = _bindings(func, "C_update")[:2]
    assert _loop_vars(batch) | _loop_vars(heads) == {outer.loop_var}, func.script()


def _update_block(func) -> Block:
    found = []
    post_order_visit(
        func.body,
        lambda n: found.append(n) if isinstance(n, Block) and n.name_hint == "C" else None,
    )
    return found[0]


def test_only_products_with_per_batch_operands_count_as_independent_batches():
    plain = lambda tensors: _update_block(te.create_prim_func(tensors))
    assert _independent_batches(plain(bmm_te((8, 4), 197, 197, 64)))
    assert _independent_batches(plain(bmm_te((8, 4), 197, 64, 197, trans_b=True)))
    assert not _independent_batches(plain(dense_te(8, 197, 256, 256)))  # W shared
    assert not _independent_batches(plain(bmm_te((1,), 7, 5, 3)))  # no batch to order
    # batch-outer where all heads' B is beyond L2 and the heads keep the threads busy
    assert _batch_outer(plain(bmm_te((8, 4), 197, 197, 64)))  # 1.6 MB of V
    assert not _batch_outer(plain(bmm_te((1, 4), 197, 197, 64)))  # 200 KB: order is moot
    assert not _batch_outer(plain(bmm_te((2,), 512, 512, 1024)))  # 2 batches: 2 threads
    assert _batch_outer(plain(bmm_te((tir.Var("n", "int64"), 4), 128, 64, 128)))


def test_dense_over_a_3d_input_keeps_its_widest_loop_outermost():
    func = _scheduled(dense_te(8, 197, 256, 256))
    outer = _outermost_loop(func)
    assert outer.kind == ForKind.PARALLEL and int(outer.extent) == 50, func.script()


@pytest.mark.parametrize(
    "m, k, n, trans_b, extent",
    [
        (197, 197, 64, False, 32),  # 197 rows: the guarded row tiles stay a loop of their own
        (197, 64, 197, True, 32),  # 197 columns: so do the guarded column panels
        (128, 128, 64, False, 32 * 32),  # 32 row tiles of 4, no guard: they join the batch
    ],
)
def test_only_guard_free_tile_loops_join_the_parallel_batch_loop(m, k, n, trans_b, extent):
    # fused into the parallel loop, a guard is no longer affine in a loop of its own and
    # loop_partition leaves it in the hot loop (ViT's q @ k.T ran 0.56x)
    func = _scheduled(bmm_te((8, 4), m, k, n, trans_b))
    outer = _outermost_loop(func)
    assert outer.kind == ForKind.PARALLEL and int(outer.extent) == extent, func.script()
