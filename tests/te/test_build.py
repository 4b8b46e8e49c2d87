"""TE workloads compiled through the driver (`minitvm.driver.build`) against numpy.

Each workload runs with static sizes and, built once with symbolic dims (te.var), on several
sizes including 1 and primes. The reference interpreter runs the same PrimFuncs too, so a
failure here that the interpreter does not share points below TE.
"""

import functools

import numpy as np
import pytest
import te_workloads as W
from hypothesis import given, settings
from hypothesis import strategies as st
from minitvm.testing import run_prim_func

from minitvm import te

driver = pytest.importorskip("minitvm.driver")
nd = pytest.importorskip("minitvm.runtime.ndarray")

SIZES = [
    {"n": 1, "m": 1, "k": 1},
    {"n": 2, "m": 3, "k": 5},
    {"n": 7, "m": 13, "k": 3},
    {"n": 13, "m": 2, "k": 11},
]


def _out_init(shape, dtype):
    # Garbage in the output catches elements the kernel forgets to write.
    return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else 7, dtype=dtype)


def _check(module, wl, sizes, seed=0):
    inputs = wl.inputs(sizes, seed)
    want = wl.reference(*inputs)
    out_dtype = wl.args[-1].dtype
    arrays = [nd.array(x) for x in inputs] + [nd.array(_out_init(want.shape, out_dtype))]
    module(*arrays)
    got = arrays[-1].numpy()
    assert got.dtype == np.dtype(out_dtype)
    np.testing.assert_allclose(got, want, rtol=wl.rtol, atol=wl.atol)


def _symbolic():
    return te.var("n"), te.var("m"), te.var("k")


MATMUL_CASES = [(ta, tb) for ta in (False, True) for tb in (False, True)]


@pytest.mark.parametrize("trans_a,trans_b", MATMUL_CASES)
def test_matmul_static(trans_a, trans_b):
    wl = W.matmul(5, 7, 3, trans_a, trans_b)
    mod = driver.build(wl.args, target="llvm", name="mm")
    _check(mod, wl, {})


@pytest.mark.parametrize("trans_a,trans_b", MATMUL_CASES)
def test_matmul_symbolic(trans_a, trans_b):
    n, m, k = _symbolic()
    wl = W.matmul(n, m, k, trans_a, trans_b)
    mod = driver.build(wl.args, target="llvm", name="mm")
    for seed, sizes in enumerate(SIZES):
        _check(mod, wl, sizes, seed)


BUILDERS = {
    "softmax": lambda n, m, k: W.softmax(n, m),
    "softmax_cross_entropy": lambda n, m, k: W.softmax_cross_entropy(n, m),
    "bias_add_cast": lambda n, m, k: W.bias_add_cast(n, m),
    "reductions": lambda n, m, k: W.reductions(n, m, k),
    "conv2d_nchw": lambda n, m, k: W.conv2d_nchw(n, m, 5, 3, kernel=3, pad=1),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_workload_static(name):
    wl = BUILDERS[name](3, 4, 5)
    mod = driver.build(wl.args, target="llvm", name=name)
    _check(mod, wl, {})


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_workload_symbolic(name):
    wl = BUILDERS[name](*_symbolic())
    mod = driver.build(wl.args, target="llvm", name=name)
    for seed, sizes in enumerate(SIZES):
        _check(mod, wl, sizes, seed)


def test_conv2d_symbolic_spatial_size():
    """Output dims are expressions of the input's (h + 2*pad - kernel + 1)."""
    h = te.var("h")
    wl = W.conv2d_nchw(2, 3, h, 4, kernel=3, pad=1)
    mod = driver.build(wl.args, target="llvm", name="conv")
    for h_value in (1, 2, 5, 7):
        _check(mod, wl, {"h": h_value})


def test_dlsys_softmax_cross_entropy_shape_is_one():
    wl = W.softmax_cross_entropy(4, 10)
    assert [int(d) for d in wl.args[-1].shape] == [1]
    mod = driver.build(wl.args, target="llvm", name="softmax_cross_entropy")
    _check(mod, wl, {})


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_reference_interpreter_agrees(name):
    """The same PrimFuncs, run by the slow interpreter (independent of the compiler)."""
    wl = BUILDERS[name](*_symbolic())
    func = te.create_prim_func(wl.args)
    sizes = {"n": 2, "m": 3, "k": 2}
    inputs = wl.inputs(sizes)
    want = wl.reference(*inputs)
    out = np.zeros(want.shape, wl.args[-1].dtype)
    run_prim_func(func, *inputs, out)
    np.testing.assert_allclose(out, want, rtol=wl.rtol, atol=wl.atol)


@functools.cache
def _symbolic_module(kind: str):
    wl = (
        W.matmul(*_symbolic(), True, False)
        if kind == "matmul"
        else W.bias_add_cast(*_symbolic()[:2])
    )
    return wl, driver.build(wl.args, target="llvm", name=kind)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 17), m=st.integers(1, 17), k=st.integers(1, 17), seed=st.integers(0, 99))
def test_one_symbolic_build_runs_any_size(n, m, k, seed):
    for kind in ("matmul", "bias_add_cast"):
        wl, mod = _symbolic_module(kind)
        _check(mod, wl, {"n": n, "m": m, "k": k}, seed)


def _build_and_run(args, name, inputs, out_shapes_dtypes):
    mod = driver.build(args, target="llvm", name=name)
    outs = [_out_init(s, d) for s, d in out_shapes_dtypes]
    arrays = [nd.array(x) for x in inputs + outs]
    mod(*arrays)
    return [a.numpy() for a in arrays[len(inputs) :]]


def test_gather_argmax_where_init_compile():
    """Data-dependent indices, a tuple reducer (LetStmt update), where= and init=."""

    def fcombine(x, y):
        take_x = x[1] >= y[1]
        return te.select(take_x, x[0], y[0]), te.select(take_x, x[1], y[1])

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)))
    n = te.var("n")
    A = te.placeholder((n, 6), name="A")
    idx = te.placeholder((4,), "int32", name="idx")
    G = te.compute((4, 6), lambda i, j: A[idx[i], j], name="G")
    k = te.reduce_axis((0, 6), name="k")
    am_i, am_v = te.compute((4,), lambda i: argmax((k, G[i, k]), axis=k), name="am")
    k2 = te.reduce_axis((0, 6), name="k2")
    pos = te.compute((4,), lambda i: te.sum(G[i, k2], axis=k2, where=G[i, k2] > 0.0, init=1.0))
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 6)).astype("float32")
    ix = np.array([6, 0, 3, 3], "int32")
    got_i, got_v, got_p = _build_and_run(
        [A, idx, am_i, am_v, pos], "gather", [a, ix],
        [((4,), "int32"), ((4,), "float32"), ((4,), "float32")],
    )  # fmt: skip
    g = a[ix]
    np.testing.assert_array_equal(got_i, g.argmax(axis=1))
    np.testing.assert_array_equal(got_v, g.max(axis=1))
    np.testing.assert_allclose(got_p, np.where(g > 0, g, 0).sum(axis=1) + 1, rtol=1e-6)


def test_dlsys_style_kernels():
    """The TE forms of the dlsys assignment: `A(k, *i)`, `*i[1:]`, te.select, te.max(x, 0)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 5)).astype("float32")
    A = te.placeholder((3, 5), name="A")
    k = te.reduce_axis((0, 3), name="k")
    col_sum = te.compute((5,), lambda *i: te.sum(A(k, *i), axis=k), name="col_sum")
    V = te.placeholder((5,), name="V")
    bcast = te.compute((4, 5), lambda *i: V(*i[1:]), name="bcast")
    relu = te.compute((3, 5), lambda *i: te.max(A(*i), te.const(0, A.dtype)), name="relu")
    G = te.placeholder((3, 5), name="G")
    relu_grad = te.compute(
        (3, 5), lambda *i: te.select(A(*i) > 0, G(*i), te.const(0, A.dtype)), name="relu_grad"
    )
    g = rng.standard_normal((3, 5)).astype("float32")
    cases = [
        ([A, col_sum], [a], a.sum(axis=0)),
        ([V, bcast], [a[0]], np.broadcast_to(a[0], (4, 5))),
        ([A, relu], [a], np.maximum(a, 0)),
        ([A, G, relu_grad], [a, g], np.where(a > 0, g, 0)),
    ]
    for args, inputs, want in cases:
        [got] = _build_and_run(args, args[-1].name, inputs, [(want.shape, "float32")])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
