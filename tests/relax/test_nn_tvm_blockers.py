"""What TVM's relax.frontend.nn tests needed (issue 26): reshape into symbolic dims, arange with
PrimValue / symbolic bounds, conv2d with a symbolic channel count and R.call_tir_inplace. Each
is built and run against numpy/torch, symbolic shapes included."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir, topi
from minitvm.error import MiniTVMError, ShapeError
from minitvm.relax import op
from minitvm.relax.frontend import nn
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def _vm(mod):
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


# ----------------------------------------------------------------------------- reshape


def test_reshape_into_a_symbolic_dim_builds_and_runs():
    # TVM's nn jit test: (10, 5) into (i, 5, 5), i an int input; counts agree when i = 2
    class Layer(nn.Module):
        def forward(self, x: nn.Tensor, i: tir.Var):
            return nn.op.reshape(nn.op.add(x, x), (i, 5, 5))

    mod, _ = Layer().export_tvm({"forward": {"x": nn.spec.Tensor((10, 5), "float32"), "i": int}})
    x = np.random.default_rng(0).standard_normal((10, 5)).astype("float32")
    vm = _vm(mod)
    out = vm["forward"](tvm.nd.array(x), tvm.runtime.ShapeTuple([2]))
    np.testing.assert_array_equal(out.numpy(), (x + x).reshape(2, 5, 5))
    # i = 3 asks for 75 of 50 elements: the VM's checked reshape refuses, naming the counts
    with pytest.raises(ShapeError, match=r"\(50 elements\) into \(3, 5, 5\) \(75 elements\)"):
        vm["forward"](tvm.nd.array(x), tvm.runtime.ShapeTuple([3]))


def test_topi_reshape_with_counts_unknown_until_run_time_never_reads_past_the_data():
    # a TE user's kernel cannot raise: a call whose counts disagree gives NaN, not a wild read
    n, i = tir.Var("n", "int64"), tir.Var("i", "int64")
    A = te.placeholder((n,), "float32", name="A")
    B = topi.reshape(A, (i, 5))
    f = tvm.build(te.create_prim_func([A, B]), target="llvm")
    a = np.arange(12, dtype="float32")
    ok = tvm.nd.array(np.zeros((2, 5), "float32"))
    f(tvm.nd.array(a[:10]), ok)
    np.testing.assert_array_equal(ok.numpy(), a[:10].reshape(2, 5))
    bad = tvm.nd.array(np.zeros((3, 5), "float32"))
    f(tvm.nd.array(a), bad)
    assert np.isnan(bad.numpy()).all()


def test_reshape_still_refuses_counts_that_provably_differ():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((10, 5), "float32"))
    with pytest.raises(ShapeError, match="cannot reshape"):
        _ = op.reshape(x, (3, 5, 5)).struct_info
    y = relax.Var("y", relax.TensorStructInfo((n, 5), "float32"))
    with pytest.raises(ShapeError, match="cannot reshape"):
        _ = op.reshape(y, (n + 1, 5)).struct_info  # 5n != 5n + 5 for every n
    assert op.reshape(x, (n, 5, 5)).struct_info.shape[0] is n


# ----------------------------------------------------------------------------- arange


def test_arange_takes_prim_values_as_tvm_and_parses_both_spellings():
    call = op.arange(0, 5, 1, "float32")
    assert all(isinstance(a, relax.PrimValue) for a in call.args)
    assert [a.value.dtype for a in call.args] == ["int64"] * 3
    assert dict(call.attrs) == {"dtype": "float32"}

    @R.function
    def f() -> R.Tensor((5,), "float32"):
        a: R.Tensor((5,), "float32") = R.arange(T.int64(0), T.int64(5), T.int64(1), dtype="float32")
        return a

    @R.function
    def g() -> R.Tensor((5,), "float32"):
        a: R.Tensor((5,), "float32") = R.arange(
            R.prim_value(T.int64(0)), R.prim_value(T.int64(5)), R.prim_value(T.int64(1)),
            dtype="float32",
        )  # fmt: skip
        return a

    tvm.ir.assert_structural_equal(f.body, g.body, map_free_vars=True)
    np.testing.assert_array_equal(_vm(tvm.IRModule({"main": f}))["main"]().numpy(), np.arange(5))


@pytest.mark.parametrize(
    "start, stop, step, dtype",
    [("n", None, 1, "int64"), (1, "n", 2, "float32"), ("n", 0, -2, "int64"), (0, "n", 3, "int32")],
)
def test_arange_with_a_symbolic_bound_matches_numpy(start, stop, step, dtype):
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n,), "float32"))
    bounds = [n if b == "n" else b for b in (start, stop, step)]
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(op.arange(*bounds, dtype)))
    vm = _vm(bb.get())
    for size in (0, 1, 7, 10):
        vals = [size if b == "n" else b for b in (start, stop, step)]
        got = vm["main"](tvm.nd.array(np.zeros(size, "float32"))).numpy()
        want = np.arange(*vals, dtype=dtype)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_arange_float_bounds_count_as_numpy():
    got = _vm_const(op.arange(0.0, 1.0, 0.1))
    np.testing.assert_array_equal(got, np.arange(0.0, 1.0, 0.1).astype("float32"))
    np.testing.assert_array_equal(_vm_const(op.arange(10, 0, -3)), np.arange(10, 0, -3))


def _vm_const(call):
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        bb.emit_func_output(bb.emit(call))
    return _vm(bb.get())["main"]().numpy()


def test_nn_arange_is_one_relax_arange_with_a_symbolic_length():
    class M(nn.Module):
        def forward(self, x: nn.Tensor):
            return nn.op.add(x, nn.op.arange(0, x.shape[0], 1, "float32"))

    mod, _ = M().export_tvm({"forward": {"x": nn.spec.Tensor(("n",), "float32")}})
    assert "R.arange(" in mod.script() and "T_arange" not in mod.script()
    x = np.random.default_rng(0).standard_normal(6).astype("float32")
    got = _vm(mod)["forward"](tvm.nd.array(x)).numpy()
    np.testing.assert_allclose(got, x + np.arange(6, dtype="float32"), rtol=1e-6)


def test_arange_refuses_a_zero_step_and_a_non_prim_bound():
    with pytest.raises(ShapeError, match="step must not be 0"):
        op.arange(0, 4, 0)
    with pytest.raises(ShapeError, match="must be a number, a PrimExpr or a PrimValue"):
        op.arange("a", 4)


# ----------------------------------------------------------------------------- conv2d


def test_conv2d_with_symbolic_channels_builds_and_matches_torch():
    torch = pytest.importorskip("torch")
    conv = nn.Conv2D(tir.Var("in_channels", "int64"), 4, 3, bias=True)
    assert isinstance(conv.weight.shape[1], tir.Var)  # groups 1: the bare var, as TVM folds it
    mod, _ = conv.export_tvm({"forward": {"x": nn.spec.Tensor(["n", "c", "h", "w"], "float32")}})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 6, 5)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    got = _vm(mod)["forward"](*(tvm.nd.array(a) for a in (x, w, b))).numpy()
    want = torch.nn.functional.conv2d(*(torch.from_numpy(a) for a in (x, w, b))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # channels that disagree at run time (data 2, weight 3): NaN, never a read past the data
    bad = _vm(mod)["forward"](*(tvm.nd.array(a) for a in (x[:, :2], w, b))).numpy()
    assert np.isnan(bad).all()


def test_conv2d_still_refuses_channels_that_provably_differ():
    c = tir.Var("c", "int64")
    x = relax.Var("x", relax.TensorStructInfo((1, c, 8, 8), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((4, c + 1, 3, 3), "float32"))
    with pytest.raises(ShapeError, match="channels differ"):
        _ = op.nn.conv2d(x, w).struct_info
    x3 = relax.Var("x3", relax.TensorStructInfo((1, 3, 8, 8), "float32"))
    w2 = relax.Var("w2", relax.TensorStructInfo((4, 2, 3, 3), "float32"))
    with pytest.raises(ShapeError, match="channels differ"):
        _ = op.nn.conv2d(x3, w2).struct_info


# ----------------------------------------------------------------------------- call_tir_inplace


@I.ir_module
class Inplace:
    @T.prim_func
    def add_into(a: T.handle, b: T.handle, c: T.handle, off: T.int64):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        C = T.match_buffer(c, (n,), "float32")
        for i in range(n):
            with T.block("add"):
                vi = T.axis.spatial(n, i)
                A[vi] = A[vi] + B[vi] + T.Cast("float32", off)
                C[vi] = A[vi] * T.float32(2)

    @R.function
    def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32"), k: R.Shape(["k"])):
        n = T.int64()
        k = T.int64()
        r = R.call_tir_inplace(
            Inplace.add_into,
            (x, y),
            out_sinfo=[R.Tensor((n,), "float32"), R.Tensor((n,), "float32")],
            inplace_indices=[0, -1],
            tir_vars=R.shape([k]),
        )
        return r


def test_call_tir_inplace_prints_as_tvm_and_parses_back():
    text = Inplace.script()
    assert "R.call_tir_inplace(cls.add_into, (x, y), out_sinfo=[" in text
    assert "inplace_indices=[0, -1], tir_vars=R.shape(" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), Inplace)


def test_call_tir_inplace_runs_on_the_vm_against_numpy():
    rng = np.random.default_rng(0)
    xn, yn = (rng.standard_normal(6).astype("float32") for _ in range(2))
    x = tvm.nd.array(xn)
    out = _vm(Inplace)["main"](x, tvm.nd.array(yn), tvm.runtime.ShapeTuple([3]))
    np.testing.assert_allclose(out[0].numpy(), xn + yn + 3, rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), 2 * (xn + yn + 3), rtol=1e-6)
    # the kernel overwrote a VM copy: the caller's tensor is unchanged (verify.py's rule)
    np.testing.assert_array_equal(x.numpy(), xn)


def test_nn_tensor_ir_inplace_op_exports_one_call_tir_inplace_and_runs():
    @T.prim_func
    def scale_into(a: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 4), "float32")
        for i, j in T.grid(n, 4):
            with T.block("scale"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = A[vi, vj] * T.float32(3)

    class M(nn.Module):
        def forward(self, x: nn.Tensor):
            y = nn.op.add(x, x)
            out = nn.Tensor.placeholder(y.shape, y.dtype)
            return nn.op.tensor_ir_inplace_op(scale_into, "scale_into", [y], [0], out)

    mod, _ = M().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 4), "float32")}})
    assert mod.script().count("R.call_tir_inplace(") == 1
    x = np.random.default_rng(0).standard_normal((5, 4)).astype("float32")
    np.testing.assert_allclose(_vm(mod)["forward"](tvm.nd.array(x)).numpy(), 6 * x, rtol=1e-6)


def test_call_tir_inplace_checks_its_indices_and_aliased_struct_info():
    gv = relax.GlobalVar("f")
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((4,), "int32"))
    with pytest.raises(MiniTVMError, match="has 1 entries but out_sinfo describes 2"):
        op.call_tir_inplace(gv, [x], [0], [x.struct_info, x.struct_info])
    with pytest.raises(MiniTVMError, match="not -1 or an input position below 1"):
        op.call_tir_inplace(gv, [x], [1], x.struct_info)
    with pytest.raises(MiniTVMError, match="must name at least one input"):
        op.call_tir_inplace(gv, [x], [-1], x.struct_info)
    with pytest.raises(MiniTVMError, match="needs that input's struct info"):
        _ = op.call_tir_inplace(gv, [y], [0], x.struct_info).struct_info
