"""topi operators built through the driver against numpy, plus the numpy references against
naive loop implementations (so the oracle itself is checked)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitvm import te, topi
from minitvm.driver import build
from minitvm.error import ShapeError, TEError
from minitvm.topi import reference as ref

RNG = np.random.default_rng(0)


def run(outs_fn, *arrays, dtypes=None, symbolic=()):
    """Build `outs_fn(*placeholders)` and run it on `arrays`; dims listed in `symbolic` are te.vars."""
    phs = []
    for k, a in enumerate(arrays):
        shape = [
            te.var(f"d{k}_{i}", "int64") if (k, i) in symbolic else s for i, s in enumerate(a.shape)
        ]
        phs.append(te.placeholder(shape, str(a.dtype), name=f"a{k}"))
    outs = outs_fn(*phs)
    outs = outs if isinstance(outs, list) else [outs]
    func = build(te.create_prim_func(phs + outs), target="llvm", name="f")
    results = []
    for o in outs:
        shape = []
        for d in o.shape:
            shape.append(d if isinstance(d, int) else _eval(d, phs, arrays))
        results.append(np.empty(shape, dtype=o.dtype))
    func["f"](*arrays, *results)
    return results if len(results) > 1 else results[0]


def _eval(d, phs, arrays):
    from minitvm.relax.eval_ref import eval_dim
    from minitvm.tir import Var

    env = {}
    for p, a in zip(phs, arrays):
        for dim, n in zip(p.shape, a.shape):
            if isinstance(dim, Var):
                env[dim] = n
    return eval_dim(d, env)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ----------------------------------------------------------------------------- references vs loops


def _conv_naive(x, w, s, p, d, g):
    x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - d * (kh - 1) - 1) // s + 1, (wd - d * (kw - 1) - 1) // s + 1
    out = np.zeros((n, o, oh, ow))
    for b, f, y, xx in itertools.product(range(n), range(o), range(oh), range(ow)):
        grp = f // (o // g)
        for ci, i, j in itertools.product(range(cg), range(kh), range(kw)):
            out[b, f, y, xx] += x[b, grp * cg + ci, y * s + i * d, xx * s + j * d] * w[f, ci, i, j]
    return out


@pytest.mark.parametrize("s,p,d,g", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2)])
def test_conv2d_reference_matches_loops(s, p, d, g):
    x, w = randn(1, 4, 7, 7), randn(4, 4 // g, 3, 3)
    np.testing.assert_allclose(
        ref.conv2d_nchw(x, w, s, p, d, g), _conv_naive(x, w, s, p, d, g), rtol=1e-4, atol=1e-4
    )


def test_pool_reference_matches_loops():
    x = randn(1, 1, 5, 5)
    got = ref.pool2d(x, 3, 2, 1, 1, "avg", count_include_pad=False)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    want = np.array(
        [
            [np.nanmean(xp[0, 0, i * 2 : i * 2 + 3, j * 2 : j * 2 + 3]) for j in range(3)]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-5)
    got = ref.pool2d(x, 3, 2, 1, 1, "max")
    want = np.array(
        [
            [np.nanmax(xp[0, 0, i * 2 : i * 2 + 3, j * 2 : j * 2 + 3]) for j in range(3)]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(got[0, 0], want)


# ----------------------------------------------------------------------------- compiled vs numpy


def test_conv2d_nchw_compiled_matches_numpy_with_symbolic_batch():
    x, w = randn(2, 4, 8, 8), randn(6, 2, 3, 3)
    out = run(lambda a, b: topi.nn.conv2d_nchw(a, b, 1, 1, 1, groups=2), x, w, symbolic={(0, 0)})
    np.testing.assert_allclose(out, ref.conv2d_nchw(x, w, 1, 1, 1, 2), rtol=1e-4, atol=1e-4)


def test_pool2d_compiled_matches_numpy():
    x = randn(1, 2, 9, 9)
    for kind in ("max", "avg"):
        out = run(lambda a, kind=kind: topi.nn.pool2d(a, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), kind), x)
        np.testing.assert_allclose(out, ref.pool2d(x, 3, 2, 1, 1, kind), rtol=1e-5, atol=1e-6)


def test_matmul_symbolic_and_transposed():
    a, b = randn(5, 3), randn(4, 3)
    out = run(lambda x, y: topi.matmul(x, y, transpose_b=True), a, b, symbolic={(0, 0)})
    np.testing.assert_allclose(out, a @ b.T, rtol=1e-5, atol=1e-5)


def test_dense_with_bias():
    x, w, b = randn(3, 6), randn(4, 6), randn(4)
    np.testing.assert_allclose(run(topi.nn.dense, x, w, b), x @ w.T + b, rtol=1e-5, atol=1e-5)


def test_softmax_is_numerically_stable_for_large_logits():
    x = (randn(2, 5) * 50 + 1000).astype("float32")
    out = run(topi.nn.softmax, x)
    np.testing.assert_allclose(out, ref.softmax(x), rtol=1e-5, atol=1e-7)
    assert np.isfinite(out).all()


def test_softmax_is_separate_computes_not_a_nested_reduction():
    x = te.placeholder((2, 3), "float32", name="x")
    out = topi.nn.softmax(x)
    names, todo = [], [out]
    while todo:
        t = todo.pop()
        names.append(t.op.name)
        todo.extend(t.op.input_tensors)
    assert {"T_softmax_maxelem", "T_softmax_expsum", "T_softmax_exp", "T_softmax_norm"} <= set(
        names
    )


def test_reshape_transpose_concat_split_take():
    x = randn(2, 3, 4)
    np.testing.assert_array_equal(run(lambda a: topi.reshape(a, (4, -1)), x), x.reshape(4, -1))
    np.testing.assert_array_equal(
        run(lambda a: topi.transpose(a, (1, 2, 0)), x), x.transpose(1, 2, 0)
    )
    y = randn(2, 1, 4)
    np.testing.assert_array_equal(
        run(lambda a, b: topi.concatenate([a, b], 1), x, y), np.concatenate([x, y], 1)
    )
    parts = run(lambda a: topi.split(a, [1, 3], axis=2), x)
    for got, want in zip(parts, np.split(x, [1, 3], axis=2)):
        np.testing.assert_array_equal(got, want)
    idx = np.array([[0, 2], [5, -3]], dtype="int32")
    np.testing.assert_array_equal(
        run(lambda a, i: topi.take(a, i, axis=1), x, idx), np.take(x, idx, axis=1, mode="clip")
    )


def test_layer_norm_and_batch_norm():
    x, g, b = randn(2, 3, 4), randn(3, 4), randn(3, 4)
    np.testing.assert_allclose(
        run(lambda *a: topi.nn.layer_norm(*a, axis=(1, 2)), x, g, b),
        ref.layer_norm(x, g, b, (1, 2)),
        rtol=1e-4,
        atol=1e-5,
    )
    x = randn(2, 3, 2)
    m, v = randn(3), np.abs(randn(3)) + 0.5
    outs = run(lambda *a: topi.nn.batch_norm(*a), x, randn(3), randn(3), m, v)
    assert len(outs) == 3
    np.testing.assert_array_equal(outs[1], m)


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=3),
    st.lists(st.sampled_from([1, 3]), min_size=0, max_size=3),
)
def test_broadcast_shape_matches_numpy(sa, sb):
    try:
        want = np.broadcast_shapes(tuple(sa), tuple(sb))
    except ValueError:
        with pytest.raises(TEError, match="do not broadcast"):
            topi.broadcast_shape(tuple(sa), tuple(sb))
        return
    got = topi.broadcast_shape(tuple(sa), tuple(sb))
    assert tuple(int(d) for d in got) == want


def test_topi_errors():
    a = te.placeholder((2, 3), "float32", name="a")
    with pytest.raises(
        TEError, match=r"topi.matmul: inner dims differ: a has shape \(2, 3\), b has shape \(2, 3\)"
    ):
        topi.matmul(a, a)
    with pytest.raises(
        TEError, match=r"topi.add: shapes \(2, 3\) and \(None, 2\) do not broadcast at dim 1"
    ):
        topi.add(a, te.placeholder((2,), "float32"))
    with pytest.raises(ShapeError, match=r"topi.reshape: cannot reshape \(2, 3\) into \(4,\)"):
        topi.reshape(a, (4,))
    with pytest.raises(TEError, match="kernel dim 1 \\(2\\) must equal in_channels / groups"):
        topi.nn.conv2d_nchw(te.placeholder((1, 3, 4, 4)), te.placeholder((2, 2, 1, 1)))
    with pytest.raises(TEError, match="pool_type must be 'max' or 'avg'"):
        topi.nn.pool2d(te.placeholder((1, 1, 4, 4)), 2, pool_type="sum")


def test_identity_is_a_copy_of_any_dtype():
    """TVM's topi.identity (verify_gpu_code's redundant-kernel test uses it on bools)."""
    import minitvm as tvm
    from minitvm import te, topi

    for dtype, data in [("float32", np.linspace(-1, 1, 6)), ("int8", np.arange(-3, 3))]:
        A = te.placeholder((2, 3), name="A", dtype=dtype)
        B = topi.identity(A)
        assert B.dtype == dtype and B.op.tag == "elemwise"
        f = tvm.build(te.create_schedule(B.op), [A, B], "llvm")
        a = tvm.nd.array(data.astype(dtype).reshape(2, 3))
        b = tvm.nd.empty((2, 3), dtype)
        f(a, b)
        np.testing.assert_array_equal(b.numpy(), a.numpy())
