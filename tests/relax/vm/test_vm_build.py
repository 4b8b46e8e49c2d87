"""relax.build + VirtualMachine: the MLC end-to-end MLP (call_tir, call_dps_packed to numpy and
torch functions, BindParams), symbolic batch dims, profiling, and the error paths."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.error import ArgumentError, BuildError, DTypeError, MiniTVMError, ShapeError
from minitvm.relax.vm import Executable, VirtualMachine, build


# --------------------------------------------------------------------------- the MLC module
def _linear0():
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    X = te.placeholder((1, m), "float32", name="X")
    W = te.placeholder((n, m), "float32", name="W")
    B = te.placeholder((n,), "float32", name="B")
    k = te.reduce_axis((0, m), name="k")
    Y = te.compute((1, n), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    Z = te.compute((1, n), lambda i, j: Y[i, j] + B[j], name="Z")
    return te.create_prim_func([X, W, B, Z])


def _relu0():
    n = tir.Var("n", "int64")
    X = te.placeholder((1, n), "float32", name="X")
    Y = te.compute((1, n), lambda i, j: te.max(X[i, j], tir.const(0, "float32")), name="Y")
    return te.create_prim_func([X, Y])


def _params(rng, sizes=(784, 128, 10)):
    m, n, k = sizes
    return {
        "w0": rng.standard_normal((n, m)).astype("float32") * 0.05,
        "b0": rng.standard_normal(n).astype("float32"),
        "w1": rng.standard_normal((k, n)).astype("float32") * 0.05,
        "b1": rng.standard_normal(k).astype("float32"),
    }


def numpy_mlp(data, w0, b0, w1, b1):
    lv0 = data @ w0.T + b0
    return np.maximum(lv0, 0) @ w1.T + b1


def _mlc_module(first: str = "tir", second: str = "tir"):
    """main(x, w0, b0, w1, b1) as in the MLC course: linear0 → relu0 → linear0; each linear is
    `call_tir` of the PrimFunc ('tir'), `call_dps_packed` of it by name ('by_name') or of the
    registered 'env.linear' ('env')."""
    m, n, k = (tir.Var(c, "int64") for c in "mnk")
    x = relax.Var("x", relax.TensorStructInfo((1, m), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((n, m), "float32"))
    b0 = relax.Var("b0", relax.TensorStructInfo((n,), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((k, n), "float32"))
    b1 = relax.Var("b1", relax.TensorStructInfo((k,), "float32"))
    bb = relax.BlockBuilder()
    linear0, relu0 = bb.add_func(_linear0(), "linear0"), bb.add_func(_relu0(), "relu0")

    def linear(how, args, out):
        if how == "tir":
            return relax.call_tir(linear0, args, out)
        return relax.call_dps_packed("linear0" if how == "by_name" else "env.linear", args, out)

    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit(linear(first, (x, w0, b0), relax.TensorStructInfo((1, n), "float32")))
            lv1 = bb.emit(relax.call_tir(relu0, (lv0,), relax.TensorStructInfo((1, n), "float32")))
            out = bb.emit(linear(second, (lv1, w1, b1), relax.TensorStructInfo((1, k), "float32")))
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


@pytest.fixture(scope="module")
def mlc_exe() -> Executable:
    with tvm.transform.PassContext(opt_level=0):  # no fusion: the kernels keep their names
        return build(_mlc_module(), target="llvm")


def test_mlc_mlp_default_pipeline_matches_numpy():
    rng = np.random.default_rng(10)
    p = _params(rng)
    data = rng.standard_normal((1, 784)).astype("float32")
    out = VirtualMachine(build(_mlc_module()), tvm.cpu())["main"](data, *p.values())
    np.testing.assert_allclose(out.numpy(), numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)


def test_mlc_mlp_with_call_tir_matches_numpy(mlc_exe):
    rng = np.random.default_rng(0)
    p = _params(rng)
    data = rng.standard_normal((1, 784)).astype("float32")
    vm = VirtualMachine(mlc_exe, tvm.cpu())
    nd_params = [tvm.nd.array(p[k]) for k in ("w0", "b0", "w1", "b1")]
    out = vm["main"](tvm.nd.array(data), *nd_params)
    assert isinstance(out, tvm.nd.NDArray)
    np.testing.assert_allclose(out.numpy(), numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)
    # numpy arguments work too, and a second call (cached frame, unchecked kernels) agrees
    again = vm["main"](data, *(p[k] for k in ("w0", "b0", "w1", "b1")))
    np.testing.assert_allclose(again.numpy(), out.numpy())
    assert len(mlc_exe.mod.func_infos) == 2  # linear0 and relu0 in ONE native module


def test_call_dps_packed_of_a_primfunc_by_name():
    rng = np.random.default_rng(1)
    p = _params(rng, (32, 16, 4))
    data = rng.standard_normal((1, 32)).astype("float32")
    vm = VirtualMachine(build(_mlc_module("by_name", "by_name")), tvm.cpu())
    out = vm["main"](data, p["w0"], p["b0"], p["w1"], p["b1"])
    np.testing.assert_allclose(out.numpy(), numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)


def test_call_dps_packed_to_a_registered_numpy_function():
    calls = []

    @tvm.register_func("env.linear", override=True)
    def numpy_linear(x, w, b, out):
        assert isinstance(out, tvm.nd.NDArray)
        xs, ws, bs, os_ = (np.from_dlpack(t) for t in (x, w, b, out))
        np.matmul(xs, ws.T, out=os_)  # writes into the VM's buffer (zero-copy)
        os_ += bs
        calls.append(x.shape)

    rng = np.random.default_rng(2)
    p = _params(rng, (32, 16, 4))
    data = rng.standard_normal((1, 32)).astype("float32")
    vm = VirtualMachine(build(_mlc_module("tir", "env")), tvm.cpu())
    out = vm["main"](data, p["w0"], p["b0"], p["w1"], p["b1"])
    np.testing.assert_allclose(out.numpy(), numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)
    assert calls == [(1, 16)]


def test_call_dps_packed_to_a_registered_torch_function():
    torch = pytest.importorskip("torch")

    @tvm.register_func("env.linear", override=True)
    def torch_linear(x, w, b, out):
        x_t, w_t, b_t, out_t = (torch.from_dlpack(t) for t in (x, w, b, out))
        torch.mm(x_t, w_t.T, out=out_t)
        torch.add(out_t, b_t, out=out_t)

    rng = np.random.default_rng(3)
    p = _params(rng, (32, 16, 4))
    data = rng.standard_normal((1, 32)).astype("float32")
    vm = VirtualMachine(build(_mlc_module("env", "tir")), tvm.cpu())
    out = vm["main"](data, p["w0"], p["b0"], p["w1"], p["b1"])
    np.testing.assert_allclose(out.numpy(), numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)


def test_bind_params_makes_weights_constants():
    rng = np.random.default_rng(4)
    p = _params(rng)
    data = rng.standard_normal((1, 784)).astype("float32")
    bound = relax.transform.BindParams("main", {k: tvm.nd.array(v) for k, v in p.items()})(
        _mlc_module()
    )
    ex = build(bound)
    assert len(ex.constants) == 4 and ex.program["functions"]["main"]["params"] == ["x"]
    out = VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(data))
    np.testing.assert_allclose(out.numpy(), numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)
    # build(params=...) binds the same way
    out2 = VirtualMachine(build(_mlc_module(), params=p), tvm.cpu())["main"](data)
    np.testing.assert_allclose(out2.numpy(), out.numpy())


# --------------------------------------------------------------------------- symbolic batch
def _batched_mlp():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 8), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((8, 6), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((6, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, w1]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(relax.op.matmul(x, w0)))
            out = bb.emit_output(relax.op.add(relax.op.matmul(h, w1), relax.const(1.0)))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("opt_level", [0, 2])
def test_symbolic_batch_runs_on_batch_1_3_64(opt_level):
    with tvm.transform.PassContext(opt_level=opt_level):
        ex = build(_batched_mlp())
    vm = VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((8, 6)).astype("float32")
    w1 = rng.standard_normal((6, 3)).astype("float32")
    for batch in (1, 3, 64, 3):
        x = rng.standard_normal((batch, 8)).astype("float32")
        out = vm["main"](x, w0, w1)
        np.testing.assert_allclose(
            out.numpy(), np.maximum(x @ w0, 0) @ w1 + 1, rtol=1e-4, atol=1e-5
        )
    assert ex.memory_stats("main", n=64)["intermediate_bytes"] > 0


def test_tuple_results_and_shape_values():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(relax.op.add(x, x))
        b = bb.emit(relax.op.multiply(a, x))
        bb.emit_func_output(relax.Tuple((a, b, relax.ShapeExpr((n * 2, 4)))))
    vm = VirtualMachine(build(bb.get()), tvm.cpu())
    xs = np.arange(8, dtype="float32").reshape(2, 4)
    a, b, shape = vm["main"](xs)
    np.testing.assert_allclose(a.numpy(), xs + xs)
    np.testing.assert_allclose(b.numpy(), (xs + xs) * xs)
    assert shape == (4, 4)


def test_calls_between_relax_functions():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("double", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, x)))
    gv = bb.get().get_global_var("double")
    y = relax.Var("y", relax.TensorStructInfo((2,), "float32"))
    with bb.function("main", [y]):
        z = bb.emit(relax.Call(gv, (y,)))
        bb.emit_func_output(bb.emit(relax.op.multiply(z, y)))
    vm = VirtualMachine(build(bb.get()), tvm.cpu())
    np.testing.assert_allclose(vm["main"](np.array([1, 2], "float32")).numpy(), [2, 8])
    np.testing.assert_allclose(vm["double"](np.array([1, 2], "float32")).numpy(), [2, 4])


# --------------------------------------------------------------------------- inspection
def test_as_text_stats_and_profile(mlc_exe):
    text = mlc_exe.as_text()
    assert "function main(x, w0, b0, w1, b1)" in text
    assert 'MatchTensor 0, "x", "float32", 2, [1, ["bind", 0]], "param"' in text
    assert 'CallTIR "linear0"' in text and 'CallTIR "relu0"' in text and "Ret" in text
    assert "planned bytes" in mlc_exe.stats() and "unplanned bytes" in mlc_exe.stats()
    rng = np.random.default_rng(6)
    p = _params(rng)
    vm = VirtualMachine(mlc_exe, tvm.cpu())
    args = [rng.standard_normal((1, 784)).astype("float32")] + [
        p[k] for k in ("w0", "b0", "w1", "b1")
    ]
    report = vm.profile("main", *args, number=3)
    table = str(report)
    assert table.splitlines()[1].split() == ["name", "calls", "total", "us", "percent"]
    rows = {r[0]: r for r in report.rows}
    assert rows["linear0"][1] == 6 and rows["relu0"][1] == 3  # calls over 3 runs
    totals = [r[2] for r in report.rows]
    assert totals == sorted(totals, reverse=True)
    assert "linear0" in table and "%" in table
    timing = vm.time_evaluator("main", tvm.cpu(), number=3, repeat=2)(*args)
    assert isinstance(timing, tvm.runtime.ProfileResult) and len(timing.results) == 2
    assert timing.mean > 0


# --------------------------------------------------------------------------- errors
def test_wrong_number_of_arguments(mlc_exe):
    vm = VirtualMachine(mlc_exe, tvm.cpu())
    with pytest.raises(
        ArgumentError,
        match=r"relax function 'main': expected 5 arguments \(x, w0, b0, w1, b1\), got 1",
    ):
        vm["main"](np.zeros((1, 784), "float32"))


def test_wrong_shape_names_the_param_and_dim(mlc_exe):
    vm = VirtualMachine(mlc_exe, tvm.cpu())
    rng = np.random.default_rng(7)
    p = _params(rng)
    args = [p[k] for k in ("w0", "b0", "w1", "b1")]
    with pytest.raises(
        ShapeError, match=r"argument 'x' \(position 0\) has shape \(2, 784\): dim 0 must be 1"
    ):
        vm["main"](np.zeros((2, 784), "float32"), *args)
    with pytest.raises(
        ShapeError,
        match=r"argument 'w0' \(position 1\) has shape \(128, 783\): dim 1 must be 784 \(= m\)",
    ):
        vm["main"](np.zeros((1, 784), "float32"), p["w0"][:, :783].copy(), *args[1:])
    with pytest.raises(
        ShapeError,
        match=r"argument 'b0' \(position 2\) has shape \(7,\): dim 0 must be 128 \(= n\)",
    ):
        vm["main"](np.zeros((1, 784), "float32"), p["w0"], np.zeros(7, "float32"), *args[2:])
    with pytest.raises(
        DTypeError, match=r"argument 'x' \(position 0\) has dtype float64, expected float32"
    ):
        vm["main"](np.zeros((1, 784)), *args)
    with pytest.raises(
        ShapeError, match=r"argument 'x' \(position 0\) has shape \(784,\), expected 2 dimensions"
    ):
        vm["main"](np.zeros(784, "float32"), *args)
    with pytest.raises(ArgumentError, match=r"argument 'x' \(position 0\) is a str"):
        vm["main"]("x", *args)


def test_unknown_function_and_missing_packed_function():
    ex = build(_mlc_module("tir", "env"))
    vm = VirtualMachine(ex, tvm.cpu())
    with pytest.raises(MiniTVMError, match=r"no relax function 'predict'; it has \['main'\]"):
        vm["predict"]
    if tvm.get_global_func("env.linear", allow_missing=True) is not None:
        tvm.runtime.remove_global_func("env.linear")
    vm = VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(8)
    p = _params(rng, (784, 128, 10))
    with pytest.raises(
        MiniTVMError, match=r"no global function named 'env.linear' for call_dps_packed"
    ):
        vm["main"](np.zeros((1, 784), "float32"), p["w0"], p["b0"], p["w1"], p["b1"])


def test_unlegalized_op_and_bad_exec_mode_are_build_errors():
    with pytest.raises(BuildError, match="exec_mode 'jit' is not one of TVM's modes"):
        build(_batched_mlp(), exec_mode="jit")
    no_legalize = tvm.transform.PassContext(disabled_pass=["LegalizeOps"])
    unlegalized = r"cannot run relax\.matmul directly; lower high-level ops"
    with no_legalize, pytest.raises(BuildError, match=unlegalized):
        build(_batched_mlp())


def test_match_cast_binds_dims_at_run_time():
    m = tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.match_cast(x, relax.TensorStructInfo((m, 4), "float32"))
        a = bb.emit(relax.op.add(y, y))
        b = bb.emit(relax.op.multiply(a, a))
        bb.emit_func_output(bb.emit(relax.op.add(b, y)))
    with tvm.transform.PassContext(opt_level=0):
        ex = build(bb.get())
    vm = VirtualMachine(ex, tvm.cpu())
    for rows in (2, 5, 2):
        xs = np.random.default_rng(rows).standard_normal((rows, 4)).astype("float32")
        np.testing.assert_allclose(vm["main"](xs).numpy(), 4 * xs * xs + xs, rtol=1e-5)
    with pytest.raises(ShapeError, match=r"match_cast 'gv' has shape \(3, 5\): dim 1 must be 4"):
        vm["main"](np.zeros((3, 5), "float32"))


def test_if_runs_the_branch_the_condition_picks():
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    c = relax.Var("c", relax.TensorStructInfo((), "bool"))
    bb = relax.BlockBuilder()

    def branch(value):
        v = relax.Var("v", relax.TensorStructInfo((3,), "float32"))
        return relax.SeqExpr((relax.BindingBlock((relax.VarBinding(v, value),)),), v)

    with bb.function("main", [c, x]):
        r = bb.emit(relax.If(c, branch(relax.op.add(x, x)), branch(relax.op.multiply(x, x))))
        bb.emit_func_output(bb.emit(relax.op.add(r, x)))
    vm = VirtualMachine(build(bb.get()), tvm.cpu())
    xs = np.array([1, 2, 3], "float32")
    np.testing.assert_allclose(vm["main"](np.array(True), xs).numpy(), 3 * xs)
    np.testing.assert_allclose(vm["main"](np.array(False), xs).numpy(), xs * xs + xs)
    assert "If" in vm.exe.as_text() and "Goto" in vm.exe.as_text()


def test_call_tir_with_tir_vars_passes_scalars():
    n, s = tir.Var("n", "int64"), tir.Var("s", "int64")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + s.astype("float32"), name="B")
    m = tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo((m,), "float32"))
    bb = relax.BlockBuilder()
    shift = bb.add_func(te.create_prim_func([A, B, s]), "shift")
    with bb.function("main", [x]):
        out = relax.TensorStructInfo((m,), "float32")
        y = bb.emit(relax.call_tir(shift, (x,), out, tir_vars=[m * 2]))
        bb.emit_func_output(bb.emit(relax.op.add(y, x)))
    ex = build(bb.get())
    assert 'CallTIR "shift", [0, 1], ["(h[0] * 2)"]' in ex.as_text()
    vm = VirtualMachine(ex, tvm.cpu())
    for size in (3, 5, 3):
        xs = np.arange(size, dtype="float32")
        np.testing.assert_allclose(vm["main"](xs).numpy(), 2 * xs + 2 * size)


def test_compiled_exec_mode_is_the_bytecode_executable():
    """TVM's exec_mode="compiled" is accepted and runs the same program (numpy is the oracle)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype("float32")
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.multiply(relax.op.add(xv, xv), xv))
        bb.emit_func_output(out)
    results = []
    for mode in ("bytecode", "compiled"):
        vm = relax.VirtualMachine(build(bb.get(), exec_mode=mode), tvm.cpu())
        results.append(vm["main"](x).numpy())
    np.testing.assert_allclose(results[1], (x + x) * x, rtol=1e-6)
    np.testing.assert_array_equal(results[0], results[1])
