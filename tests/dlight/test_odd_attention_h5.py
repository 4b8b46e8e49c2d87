"""Batched products whose output rows no vector width divides (ViT's attention at 197 tokens):
the default CPU schedule gives them full-width register tiles with a guarded last one over
padded panels of B, and they match numpy, with and without a transposed B and a fused
`* scale + mask` epilogue."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.dlight.cpu import default_schedule_func, matmul_tile
from minitvm.dlight.cpu.matmul import MatmulTile
from minitvm.dlight.cpu.matmul_remainder import remainder_cols
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import BlockRealize, For, ForKind

BATCH, HEADS = 2, 2


def attention_te(m: int, k: int, n: int, head_split_b: bool, epilogue: bool):
    """q [b, h, m, k] @ B [b, h, k, n]; B is given, or is the transpose of a head-split
    x [b, n, h * k] (`x[b, j, h * k + r]`, as ViT's q @ k.T arrives); the epilogue is
    `* 0.125 + mask[b, 0, i, j]`."""
    q = te.placeholder((BATCH, HEADS, m, k), name="q")
    if head_split_b:
        x = te.placeholder((BATCH, n, HEADS * k), name="x")
        b = te.compute((BATCH, HEADS, k, n), lambda bi, h, r, j: x[bi, j, h * k + r], name="kt")
        inputs = [q, x]
    else:
        b = x = te.placeholder((BATCH, HEADS, k, n), name="b")
        inputs = [q, b]
    r = te.reduce_axis((0, k), name="r")
    out = te.compute(
        (BATCH, HEADS, m, n),
        lambda bi, h, i, j: te.sum(q[bi, h, i, r] * b[bi, h, r, j], axis=r),
        name="qk",
    )
    if epilogue:
        mask = te.placeholder((BATCH, 1, m, n), name="mask")
        prod = out
        out = te.compute(
            prod.shape, lambda bi, h, i, j: prod[bi, h, i, j] * 0.125 + mask[bi, 0, i, j], name="s"
        )
        inputs.append(mask)
    return [*inputs, out]


def _reference(args, head_split_b: bool, epilogue: bool, k: int):
    q, b = (a.astype(np.float64) for a in args[:2])
    if head_split_b:
        n = b.shape[1]
        b = b.reshape(BATCH, n, HEADS, k).transpose(0, 2, 3, 1)
    out = q @ b
    return out * 0.125 + args[2] if epilogue else out


def _scheduled(m, k, n, head_split_b, epilogue):
    func = te.create_prim_func(attention_te(m, k, n, head_split_b, epilogue))
    return default_schedule_func(func.with_attr("global_symbol", "main"))


def _run(func, seed: int):
    rng = np.random.default_rng(seed)
    bufs = [func.buffer_map[p] for p in func.params]
    args = [rng.standard_normal([int(d) for d in b.shape]).astype("float32") for b in bufs[:-1]]
    out = tvm.nd.array(np.zeros([int(d) for d in bufs[-1].shape], "float32"))
    tvm.build(tvm.IRModule({"main": func}), target="llvm")(*map(tvm.nd.array, args), out)
    return args, out.numpy()


SHAPES = [  # (m, k, n)
    (197, 64, 197),  # ViT's q @ k.T
    (197, 197, 64),  # ViT's attn @ v
    (77, 64, 77),  # CLIP's text tokens
    (7, 197, 1000),
    (197, 7, 131),
    (50, 64, 50),
    (1, 64, 197),
    (197, 64, 1),
]


@pytest.mark.parametrize("epilogue", [False, True], ids=["plain", "scale_mask"])
@pytest.mark.parametrize("head_split_b", [False, True], ids=["b", "head_split_kt"])
@pytest.mark.parametrize("m, k, n", SHAPES)
def test_batched_product_with_odd_extents_matches_numpy(m, k, n, head_split_b, epilogue):
    func = _scheduled(m, k, n, head_split_b, epilogue)
    args, got = _run(func, seed=m * 31 + k * 7 + n)
    want = _reference(args, head_split_b, epilogue, k)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4 * np.sqrt(k))


def _update_tile(func):
    """{loop kind: sorted extents} of the unrolled and vectorized loops around the reduction's
    update block (the register tile: k steps and rows unrolled, columns vectorized)."""
    found = {ForKind.UNROLLED: [], ForKind.VECTORIZED: []}

    def visit(node):
        if isinstance(node, For) and node.kind in found:
            inner = []
            post_order_visit(
                node.body, lambda n: inner.append(n) if isinstance(n, BlockRealize) else None
            )
            if any(r.block.name_hint == "qk_update" for r in inner):
                found[node.kind].append(int(node.extent))

    post_order_visit(func.body, visit)
    return {kind: sorted(extents) for kind, extents in found.items()}


@pytest.mark.parametrize("head_split_b", [False, True], ids=["b", "head_split_kt"])
@pytest.mark.parametrize("epilogue", [False, True], ids=["plain", "scale_mask"])
def test_197_column_product_gets_a_tile_wider_than_one_vector(head_split_b, epilogue):
    # the generic 4 x 16 tiling kept 4 accumulators and ran latency bound
    func = _scheduled(197, 64, 197, head_split_b, epilogue)
    tile = _update_tile(func)
    assert tile == {ForKind.UNROLLED: [4, 8], ForKind.VECTORIZED: [32]}, tile  # 8 x 32, k by 4
    # B is packed into 7 panels of 32 columns, the last padded (read whole, never written)
    panels = [
        b for b in func.body.block.alloc_buffers if b.name.endswith("_global") and len(b.shape) == 5
    ]
    assert panels and [int(d) for d in panels[0].shape[-3::2]] == [7, 32], panels


def test_remainder_width_falls_back_to_the_least_padded_when_no_width_is_guard_free():
    assert remainder_cols(197) == 32  # 64 would pad 59 lanes, 32 pads 27
    assert remainder_cols(1000) == 64  # within MATMUL_REMAINDER_MAX_PAD: as before
    assert remainder_cols(200) is None  # its 8-lane guard-free tiles keep
    assert remainder_cols(77) is None  # one tile of the whole row
    # a 32-wide guarded tile over guarded rows keeps 16 accumulators: 8 rows
    assert matmul_tile(197, 197, 64, remainder=True) == MatmulTile(8, 32, 4)
    assert matmul_tile(None, 197, 64, remainder=True) == MatmulTile(8, 32, 4)
    assert matmul_tile(197, 1000, 64, remainder=True) == MatmulTile(4, 64, 4)
    assert matmul_tile(197, 197, 64) is None  # remainder not asked: the generic tiling
