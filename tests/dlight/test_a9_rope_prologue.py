"""A matmul whose B is a stage reading its input transposed (attention's q @ rope(k).T with
grouped KV heads, as Llama's kernel arrives from torch.export): the stage is computed into
B's packed panels, once per panel, and the result matches numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.dlight.cpu import default_schedule_func
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Block, For

HEADS, KV_HEADS, DIM = 4, 2, 64


def rope_qk_te(batch: int, seq: int):
    """q [b, h, s, d]; k [b, s, kv * d] rotated by (cos, sin) [s, d], its KV head shared by
    HEADS // KV_HEADS query heads; out = q @ rope(k).T * 0.125."""
    q = te.placeholder((batch, HEADS, seq, DIM), name="q")
    k = te.placeholder((batch, seq, KV_HEADS * DIM), name="k")
    cos = te.placeholder((seq, DIM), name="cos")
    sin = te.placeholder((seq, DIM), name="sin")
    half, group = DIM // 2, HEADS // KV_HEADS

    def rotated(b, h, d, s):
        col = h // group * DIM + d
        rot = tir.if_then_else(d < half, -k[b, s, col + half], k[b, s, col - half])
        return k[b, s, col] * cos[s, d] + rot * sin[s, d]

    kt = te.compute((batch, HEADS, DIM, seq), rotated, name="k_rope_t")
    r = te.reduce_axis((0, DIM), name="r")
    mm = te.compute(
        (batch, HEADS, seq, seq),
        lambda b, h, i, j: te.sum(q[b, h, i, r] * kt[b, h, r, j], axis=r),
        name="qk",
    )
    out = te.compute(mm.shape, lambda *ix: mm(*ix) * 0.125, name="scores")
    return [q, k, cos, sin, out]


def rope_qk_numpy(q, k, cos, sin):
    b, s, _ = k.shape
    kh = k.reshape(b, s, KV_HEADS, DIM).transpose(0, 2, 1, 3)  # [b, kv, s, d]
    half = DIM // 2
    rot = np.concatenate([-kh[..., half:], kh[..., :half]], axis=-1)
    kr = kh * cos + rot * sin
    kr = np.repeat(kr, HEADS // KV_HEADS, axis=1)  # [b, h, s, d]
    return (q.astype(np.float64) @ kr.transpose(0, 1, 3, 2).astype(np.float64)) * 0.125


def _blocks_and_loops(func):
    blocks, loops = [], []

    def visit(node):
        if isinstance(node, Block):
            blocks.append(node.name_hint)
        elif isinstance(node, For):
            loops.append(node)

    post_order_visit(func.body, visit)
    return blocks, loops


def _run(func, shapes, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype("float32") for s in shapes]
    mod = tvm.build(func, target="llvm")
    out = tvm.nd.empty(shapes[-1], "float32")
    mod(*[tvm.nd.array(a) for a in arrays[:-1]], out)
    return arrays[:-1], out.numpy()


@pytest.mark.parametrize("batch, seq", [(1, 128), (3, 128), (2, 40), (1, 200)])
def test_rope_key_stage_matches_numpy(batch, seq) -> None:
    tensors = rope_qk_te(batch, seq)
    func = default_schedule_func(te.create_prim_func(tensors))
    shapes = [tuple(int(d) for d in t.shape) for t in tensors]
    (q, k, cos, sin), got = _run(func, shapes, seed=batch * 1000 + seq)
    np.testing.assert_allclose(got, rope_qk_numpy(q, k, cos, sin), rtol=1e-5, atol=1e-5)


def test_rope_key_is_computed_into_the_panels_not_staged_with_gathers() -> None:
    func = default_schedule_func(te.create_prim_func(rope_qk_te(8, 128)))
    blocks, _ = _blocks_and_loops(func)
    # the rotation is inlined into the panel copy: no separate transposed stage is written
    assert "k_rope_t" not in blocks, func.script()
    assert "k_rope_t_global" in blocks, func.script()
    text = func.script()
    # the copy runs under the parallel panel loop, just before the row tiles that read it
    par = text.index("T.parallel")
    assert par < text.index('T.block("k_rope_t_global")') < text.index('T.block("qk_update")')
    # and reads the key along its rows: no vectorized loop around the copy
    copy_loops = text[par : text.index('T.block("k_rope_t_global")')]
    assert "T.vectorized" not in copy_loops, text


def test_few_rows_keep_the_rope_stage() -> None:
    # a decode-like 8-row product: packing is not worth it (`MATMUL_PACK_MIN_ROWS_TRANSPOSED`)
    q = te.placeholder((1, 8, 64), name="q")
    k = te.placeholder((1, 512, 64), name="k")
    kt = te.compute((1, 64, 512), lambda b, d, s: k[b, s, d] * 2.0, name="kt")
    r = te.reduce_axis((0, 64), name="r")
    mm = te.compute(
        (1, 8, 512), lambda b, i, j: te.sum(q[b, i, r] * kt[b, r, j], axis=r), name="mm"
    )
    func = default_schedule_func(te.create_prim_func([q, k, mm]))
    assert "kt_global" not in _blocks_and_loops(func)[0], func.script()
    (qa, ka), got = _run(func, [(1, 8, 64), (1, 512, 64), (1, 8, 512)], seed=3)
    want = qa.astype(np.float64) @ (2.0 * ka.astype(np.float64)).transpose(0, 2, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
