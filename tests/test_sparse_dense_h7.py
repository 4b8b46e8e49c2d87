"""relay.nn.sparse_dense / topi.nn.sparse_dense and relay.data_dep_optimization (issue 27)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, te, topi
from minitvm.contrib import graph_executor
from minitvm.error import ArgumentError, ShapeError, TEError
from minitvm.relay import data_dep_optimization as ddo
from minitvm.relay.data_dep_optimization.bsr_dense import to_bsr


def _sparse_weight(rng, n, k, density=0.2, block=(1, 1)):
    br, bc = block
    mask = rng.random((n // br, k // bc)) < density
    w = rng.standard_normal((n, k)).astype("float32")
    w *= np.kron(mask, np.ones(block)).astype("float32")
    w[:br] = 0  # an empty block row
    return w


def _run_relay(func, params, inputs):
    lib = relay.build(tvm.IRModule.from_expr(func), "llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    return m.get_output(0).numpy()


def test_to_bsr_matches_the_dense_matrix():
    rng = np.random.default_rng(0)
    w = _sparse_weight(rng, 12, 16, block=(2, 4))
    data, indices, indptr = to_bsr(w, (2, 4))
    rebuilt = np.zeros((6, 2, 4, 4), "float32")
    for r in range(6):
        for b in range(indptr[r], indptr[r + 1]):
            rebuilt[r, :, indices[b], :] = data[b]
    np.testing.assert_array_equal(rebuilt.reshape(12, 16), w)
    assert indptr[0] == indptr[1] == 0 and indices.dtype == indptr.dtype == np.int32


@pytest.mark.parametrize("block", [(1, 1), (2, 4), (4, 1)])
@pytest.mark.parametrize("sparse_lhs", [False, True])
@pytest.mark.parametrize("max_row_nnz", [None, "exact"])
def test_topi_sparse_dense_matches_numpy(block, sparse_lhs, max_row_nnz):
    rng = np.random.default_rng(1)
    m, k, n = 5, 16, 12
    w = _sparse_weight(rng, n, k, block=block)
    data, indices, indptr = to_bsr(w, block)
    if block == (1, 1):
        data = data.reshape(-1)  # CSR form
    bound = int(np.diff(indptr).max()) if max_row_nnz == "exact" else None
    x = rng.standard_normal((m, k)).astype("float32")
    X = te.placeholder(x.shape, name="x")
    D = te.placeholder(data.shape, name="w_data")
    I = te.placeholder(indices.shape, "int32", name="w_indices")
    P = te.placeholder(indptr.shape, "int32", name="w_indptr")
    out = topi.nn.sparse_dense(X, D, I, P, sparse_lhs=sparse_lhs, max_row_nnz=bound)
    f = tvm.build(te.create_prim_func([X, D, I, P, out]), target="llvm")
    result = tvm.nd.empty(tuple(int(s) for s in out.shape), "float32")
    f(*(tvm.nd.array(a) for a in (x, data, indices, indptr)), result)
    expected = (w @ x.T) if sparse_lhs else (x @ w.T)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_default_schedule_compiles_sparse_dense():
    rng = np.random.default_rng(2)
    w = _sparse_weight(rng, 24, 32, block=(4, 2))
    data, indices, indptr = to_bsr(w, (4, 2))
    x = rng.standard_normal((8, 32)).astype("float32")
    bb = relax.BlockBuilder()
    args = [relax.Var(n, relax.TensorStructInfo(a.shape, str(a.dtype)))
            for n, a in (("x", x), ("d", data), ("i", indices), ("p", indptr))]  # fmt: skip
    with bb.function("main", args):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(topi.nn.sparse_dense, *args, max_row_nnz=8))
        bb.emit_func_output(gv)
    mod = relax.transform.DefaultSchedule()(bb.get())
    prims = [f for _, f in mod.functions_items() if not isinstance(f, relax.Function)]
    assert len(prims) == 1 and prims[0].attrs.get("tir.is_scheduled")
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*(tvm.nd.array(a) for a in (x, data, indices, indptr))).numpy()
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("as_constants", [True, False])
def test_relay_sparse_dense_constant_and_param_weights(as_constants):
    rng = np.random.default_rng(3)
    w = _sparse_weight(rng, 24, 32, block=(4, 2))
    data, indices, indptr = to_bsr(w, (4, 2))
    x = relay.var("x", shape=(6, 32))
    if as_constants:
        sparse, params = (relay.const(data), relay.const(indices), relay.const(indptr)), {}
    else:
        names = ("w.data", "w.indices", "w.indptr")
        arrays = (data, indices, indptr)
        sparse = tuple(
            relay.var(n, shape=a.shape, dtype=str(a.dtype)) for n, a in zip(names, arrays)
        )
        params = dict(zip(names, arrays))
    y = relay.nn.relu(relay.nn.sparse_dense(x, sparse))
    func = relay.Function(relay.analysis.free_vars(y), y)
    xv = rng.standard_normal((6, 32)).astype("float32")
    out = _run_relay(func, params, {"x": xv})
    np.testing.assert_allclose(out, np.maximum(xv @ w.T, 0), rtol=1e-5, atol=1e-5)


def test_relay_sparse_dense_records_the_row_bound_of_constant_weights():
    w = np.eye(8, dtype="float32")
    w[3, :5] = 1  # row 3 holds 5 entries, the most of any row
    data, indices, indptr = to_bsr(w, (1, 1))
    x = relay.var("x", shape=(2, 8))
    y = relay.nn.sparse_dense(x, (relay.const(data), relay.const(indices), relay.const(indptr)))
    rmod = relay.build_module.to_relax(tvm.IRModule.from_expr(relay.Function([x], y)))
    call = rmod["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.nn.sparse_dense"
    assert dict(call.attrs) == {"sparse_lhs": False, "max_row_nnz": 5}


def test_relay_sparse_dense_type_and_errors():
    x = relay.var("x", shape=(3, 8))
    d, i = relay.var("d", shape=(5,)), relay.var("i", shape=(5,), dtype="int32")
    p = relay.var("p", shape=(5,), dtype="int32")
    y = relay.nn.sparse_dense(x, (d, i, p), sparse_lhs=True)
    func = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, d, i, p], y)))
    assert tuple(func["main"].body.checked_type.shape) == (4, 3)
    with pytest.raises(ShapeError, match="sparse_mat must be \\(data, indices, indptr\\)"):
        relay.nn.sparse_dense(x, (d, i))
    with pytest.raises(TEError, match="K=6 is not a multiple of the block width 4"):
        topi.nn.sparse_dense(
            te.placeholder((2, 6)),
            te.placeholder((1, 2, 4)),
            te.placeholder((1,), "int32"),
            te.placeholder((2,), "int32"),
        )


def _mlp(rng):
    x = relay.var("x", shape=(2, 3, 32))
    w1, w2 = relay.var("w1", shape=(24, 32)), relay.var("w2", shape=(24, 16))
    y = relay.nn.dense(relay.nn.relu(relay.nn.dense(x, w1)), relay.transpose(w2))
    params = {"w1": tvm.nd.array(_sparse_weight(rng, 24, 32, 0.1, (4, 1))),
              "w2": tvm.nd.array(_sparse_weight(rng, 24, 16, 0.1, (4, 1)))}  # fmt: skip
    return relay.Function([x, w1, w2], y), params


def test_data_dep_optimization_converts_sparse_dense_layers_keeping_results():
    rng = np.random.default_rng(5)
    func, params = _mlp(rng)
    xv = rng.standard_normal((2, 3, 32)).astype("float32")
    expected = _run_relay(func, params, {"x": xv})
    f2, p2 = ddo.simplify_fc_transpose.convert(func, params)
    assert "w2.T" in p2 and np.array_equal(p2["w2.T"].numpy(), params["w2"].numpy().T)
    f3, p3 = ddo.bsr_dense.convert(f2, p2, (4, 1), sparsity_threshold=0.8)
    text = str(f3)
    assert text.count("nn.sparse_dense") == 2 and "nn.dense" not in text
    assert {"w1.data", "w1.indices", "w1.indptr"} <= set(p3)
    np.testing.assert_allclose(_run_relay(f3, p3, {"x": xv}), expected, rtol=1e-4, atol=1e-4)


def test_bsr_dense_leaves_dense_weights_below_the_threshold():
    func, params = _mlp(np.random.default_rng(6))
    f2, p2 = ddo.bsr_dense.convert(func, params, (4, 1), sparsity_threshold=0.99)
    assert "nn.sparse_dense" not in str(f2) and set(p2) == set(params)
    f3, _ = ddo.bsr_dense.convert(func, params, (5, 1), sparsity_threshold=0.5)  # 24 % 5 != 0
    assert "nn.sparse_dense" not in str(f3)


def test_bsr_dense_all_zero_weight_gives_zeros():
    x, w = relay.var("x", shape=(2, 8)), relay.var("w", shape=(4, 8))
    params = {"w": np.zeros((4, 8), "float32")}
    f2, p2 = ddo.bsr_dense.convert(relay.Function([x, w], relay.nn.dense(x, w)), params, (2, 1))
    assert "nn.sparse_dense" in str(f2)
    out = _run_relay(f2, p2, {"x": np.ones((2, 8), "float32")})
    np.testing.assert_array_equal(out, np.zeros((2, 4), "float32"))


def test_bsr_dense_bad_blocksize_and_input():
    func, params = _mlp(np.random.default_rng(7))
    with pytest.raises(ArgumentError, match="blocksize must be \\(bs_r, bs_c\\), both >= 1"):
        ddo.bsr_dense.convert(func, params, (0, 1))
    with pytest.raises(ArgumentError, match="expected a relay Function"):
        ddo.bsr_dense.convert("main", params, (1, 1))
