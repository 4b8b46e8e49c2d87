"""dl.cpu.ElementWise on a block that reads an input transposed (a weight gradient's optimizer
update, a permute_dims copy): tiles of TILE_ROWS x TILE_LANES with the vector along the output
row, results equal numpy's, and shapes the tile does not divide keep the plain schedule."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.dlight.cpu import default as _ds
from minitvm.dlight.cpu.elementwise_transpose import TILE_LANES, TILE_ROWS
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind


def _sgd_transposed(n, m):
    # the optimizer update of a weight whose gradient arrives transposed
    p = te.placeholder((n, m), name="p")
    g = te.placeholder((m, n), name="g")
    out = te.compute(
        (n, m), lambda i, j: p[i, j] - g[j, i] * tir.const(0.01, "float32"), name="p_new"
    )
    return [p, g, out], (lambda p_, g_: p_ - g_.T * np.float32(0.01))


def _transpose(n, m):
    a = te.placeholder((m, n), name="A")
    out = te.compute((n, m), lambda i, j: a[j, i], name="T_transpose")
    return [a, out], (lambda a_: a_.T.copy())


def _transpose_middle(b, n, m):
    # i in the first loop, a loop between i and j: out[i, k, j] = A[j, k, i]
    a = te.placeholder((m, b, n), name="A")
    out = te.compute((n, b, m), lambda i, k, j: a[j, k, i] + a[j, k, i], name="T")
    return [a, out], (lambda a_: (a_ + a_).transpose(2, 1, 0).copy())


def _vector_loops(func):
    found = []
    post_order_visit(
        func.body,
        lambda n: found.append(n) if isinstance(n, For) and n.kind == ForKind.VECTORIZED else None,
    )
    return found


def _run(tensors, ref, func):
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    out_shape = [int(d) for d in tensors[-1].shape]
    out = tvm.nd.array(np.zeros(out_shape, "float32"))
    tvm.build(func, target="llvm")(*[tvm.nd.array(x) for x in ins], out)
    np.testing.assert_allclose(out.numpy(), ref(*ins), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "make, shape",
    [
        (_sgd_transposed, (1024, 256)),
        (_sgd_transposed, (256, 1024)),
        (_transpose, (64, 32)),
        (_transpose_middle, (3, 32, 48)),
    ],
)
def test_transposed_read_is_tiled_and_matches_numpy(make, shape) -> None:
    tensors, ref = make(*shape)
    func = _ds.default_schedule_func(te.create_prim_func(tensors))
    vectors = _vector_loops(func)
    assert [int(v.extent) for v in vectors] == [TILE_LANES], func.script()
    rows = [
        n for n in _loops(func) if n.kind == ForKind.SERIAL and int_or_none(n.extent) == TILE_ROWS
    ]
    assert rows, func.script()
    _run(tensors, ref, func)


@pytest.mark.parametrize(
    "make, shape", [(_sgd_transposed, (100, 250)), (_transpose, (24, 40)), (_transpose, (64, 12))]
)
def test_untileable_transposed_read_keeps_the_plain_schedule(make, shape) -> None:
    # rows not a multiple of TILE_ROWS, or a row under two vectors: no guarded tile
    tensors, ref = make(*shape)
    func = _ds.default_schedule_func(te.create_prim_func(tensors))
    assert all(int(v.extent) != TILE_LANES for v in _vector_loops(func)), func.script()
    _run(tensors, ref, func)


def test_contiguous_elementwise_keeps_sixteen_lanes() -> None:
    p = te.placeholder((64, 256), name="p")
    g = te.placeholder((64, 256), name="g")
    out = te.compute((64, 256), lambda i, j: p[i, j] - g[i, j], name="out")
    func = _ds.default_schedule_func(te.create_prim_func([p, g, out]))
    assert [int(v.extent) for v in _vector_loops(func)] == [16], func.script()
    _run([p, g, out], lambda p_, g_: p_ - g_, func)


def test_symbolic_rows_keep_the_plain_schedule_and_match_numpy() -> None:
    n = te.var("n")
    a = te.placeholder((256, n), name="A")
    out = te.compute((n, 256), lambda i, j: a[j, i], name="T_transpose")
    func = _ds.default_schedule_func(te.create_prim_func([a, out]))
    assert all(int(v.extent) != TILE_LANES for v in _vector_loops(func)), func.script()
    x = np.random.default_rng(1).standard_normal((256, 48)).astype("float32")
    got = tvm.nd.array(np.zeros((48, 256), "float32"))
    tvm.build(func, target="llvm")(tvm.nd.array(x), got)
    np.testing.assert_array_equal(got.numpy(), x.T)


def _loops(func):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, For) else None)
    return found


def int_or_none(e):
    try:
        return int(e)
    except TypeError:
        return None


def _split_heads(n_var):
    # a reshape across a symbolic batch n: rows `c * n * 128 + t * n + b` read back as
    # (c, t, b), the form a fused qkv split takes; its index divides by n
    n = n_var
    a = te.placeholder((n * 128, 48), name="A")
    out = te.compute(
        (3, 128, n, 16),
        lambda c, t, b, d: a[
            (c * n * 128 + t * n + b) // n % 128 * n + (t * n + b) % n, c * 16 + d
        ],
        name="T_split",
    )
    return [a, out]


def test_symbolic_division_keeps_row_loops_unfused_and_matches_numpy() -> None:
    n = te.var("n", dtype="int64")
    a, out = _split_heads(n)
    func = _ds.default_schedule_func(te.create_prim_func([a, out]))
    parallel = [lp for lp in _loops(func) if lp.kind == ForKind.PARALLEL]
    # the static (3, 128) rows run in parallel, fused; n and the vector loop stay inside
    assert len(parallel) == 1 and int_or_none(parallel[0].extent) == 3 * 128, func.script()
    assert [int(v.extent) for v in _vector_loops(func)] == [16], func.script()
    x = np.random.default_rng(2).standard_normal((5 * 128, 48)).astype("float32")
    got = tvm.nd.array(np.zeros((3, 128, 5, 16), "float32"))
    tvm.build(func, target="llvm")(tvm.nd.array(x), got)
    rows = x.reshape(128, 5, 48)
    want = np.stack([rows[:, :, c * 16 : (c + 1) * 16] for c in range(3)])
    np.testing.assert_array_equal(got.numpy(), want)
