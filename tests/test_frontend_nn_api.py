"""relax.frontend.nn's module API around the exporter: spec kinds, param modes, jit, dtype
conversion, state dicts, calls of TE / TIR / packed functions, and the errors of bad use."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, topi
from minitvm.error import ArgumentError, DTypeError, MiniTVMError, ShapeError
from minitvm.relax.frontend import nn
from minitvm.script import tir as T

RNG = np.random.default_rng(1)


def _vm(mod):
    return relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())


class Scale(nn.Module):
    def __init__(self):
        self.w = nn.Parameter((4,))

    def forward(self, x, n):
        return x * self.w, nn.op.zeros([n, 2])


def test_int_spec_is_a_symbolic_size_and_packed_params_are_one_tuple():
    model = Scale()
    spec = {"x": nn.spec.Tensor(("m", 4), "float32"), "n": int, "$": {"param_mode": "packed"}}
    mod, _ = model.export_tvm({"forward": spec})
    func = mod["forward"]
    assert func.attrs["num_input"] == 2 and len(func.params) == 3  # x, n, packed params
    assert isinstance(func.params[2].struct_info, relax.TupleStructInfo)
    w = RNG.standard_normal(4).astype("float32")
    x = RNG.standard_normal((5, 4)).astype("float32")
    out, zeros = _vm(mod)["forward"](tvm.runtime.tensor(x), (3,), [tvm.runtime.tensor(w)])
    np.testing.assert_allclose(out.numpy(), x * w, rtol=1e-6)
    assert zeros.numpy().shape == (3, 2) and not zeros.numpy().any()


class Pair(nn.Module):
    def forward(self, xs):
        a, b = xs
        return nn.op.add(a, b)


def test_tuple_input_is_one_tuple_argument():
    spec = {"xs": [nn.spec.Tensor((2,), "float32"), nn.spec.Tensor((2,), "float32")]}
    mod, _ = Pair().export_tvm({"forward": spec})
    a, b = np.array([1, 2], "float32"), np.array([10, 20], "float32")
    out = _vm(mod)["forward"]([tvm.runtime.tensor(a), tvm.runtime.tensor(b)])
    np.testing.assert_array_equal(out.numpy(), a + b)


class Two(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(3, 2, bias=False)

    def forward(self, x):
        return self.fc(x)

    def double(self, x):
        return self.fc(x) * 2.0


def test_jit_runs_each_method_on_torch_tensors():
    torch = pytest.importorskip("torch")
    model = Two()
    w = RNG.standard_normal((2, 3)).astype("float32")
    model.fc.weight.data = torch.from_numpy(w)
    spec = {"forward": {"x": nn.spec.Tensor((1, 3), "float32")}}
    spec["double"] = {"x": nn.spec.Tensor((1, 3), "float32")}
    jm = model.jit(spec)
    x = torch.from_numpy(RNG.standard_normal((1, 3)).astype("float32"))
    np.testing.assert_allclose(jm["forward"](x).numpy(), x.numpy() @ w.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jm.double(x).numpy(), 2 * x.numpy() @ w.T, rtol=1e-5, atol=1e-6)
    with pytest.raises(ArgumentError, match="was not compiled"):
        jm["backward"]
    with pytest.raises(ArgumentError, match="expected 1 arguments"):
        jm["forward"](x, x)


def test_jit_refuses_parameters_without_data():
    with pytest.raises(ArgumentError, match=r"\['fc.weight'\] hold no data"):
        Two().jit({"forward": {"x": nn.spec.Tensor((1, 3), "float32")}})


def test_to_dtype_changes_parameters_and_export():
    model = Two()
    model.to("float16")
    assert model.fc.weight.dtype == "float16"
    mod, _ = model.export_tvm({"forward": {"x": nn.spec.Tensor((1, 3), "float16")}})
    assert str(mod["forward"].params[1].struct_info.dtype) == "float16"
    model.fc.weight.data = np.ones((2, 3), "float16")
    with pytest.raises(DTypeError, match="holds data"):
        model.to("float32")


def test_state_dict_and_load_state_dict():
    a, b = Two(), Two()
    w = RNG.standard_normal((2, 3)).astype("float32")
    a.fc.weight.data = w
    assert list(a.state_dict()) == ["fc.weight"] and a.state_dict()["fc.weight"] is a.fc.weight
    assert b.load_state_dict(a.state_dict()) == ([], [])
    np.testing.assert_array_equal(b.fc.weight.data.numpy(), w)
    with pytest.raises(KeyError, match="unexpected keys"):
        b.load_state_dict({"fc.weight": w, "other": w})
    assert len(list(a.parameters())) == 1


def test_parameter_data_is_checked():
    p = nn.Parameter((2, 3))
    with pytest.raises(ShapeError, match=r"shape \(3, 2\) does not match"):
        p.data = np.zeros((3, 2), "float32")
    with pytest.raises(DTypeError, match="dtype int32"):
        p.data = np.zeros((2, 3), "int32")


@T.prim_func
def add_one(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 4), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    for i, j in T.grid(n, 4):
        with T.block("add"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)


@tvm.register_func("test_nn.double_into", override=True)
def _double_into(x, out):
    out.copyfrom(x.numpy() * 2)


class Custom(nn.Module):
    def forward(self, x):
        n = x.shape[0]
        y = nn.op.tensor_expr_op(topi.nn.relu, "my_relu", [x])
        y = nn.op.tensor_ir_op(
            add_one, "add_one", [y], out=nn.Tensor.placeholder((n, 4), "float32")
        )
        return nn.op.extern(
            "test_nn.double_into", [y], out=nn.Tensor.placeholder((n, 4), "float32")
        )


def test_tensor_expr_tensor_ir_and_extern_calls():
    mod, _ = Custom().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 4), "float32")}})
    assert "my_relu" in [gv.name_hint for gv, _ in mod.functions_items()]
    x = RNG.standard_normal((3, 4)).astype("float32")
    out = _vm(mod)["forward"](tvm.runtime.tensor(x)).numpy()
    np.testing.assert_allclose(out, (np.maximum(x, 0) + 1) * 2, rtol=1e-6)


def test_spec_errors_name_the_argument():
    with pytest.raises(ArgumentError, match="argument 'x' has no spec"):
        Two().export_tvm({"forward": {}})
    with pytest.raises(ArgumentError, match=r"\['y'\] are not arguments"):
        Two().export_tvm({"forward": {"x": nn.spec.Tensor((1, 3), "float32"), "y": int}})
    with pytest.raises(ArgumentError, match="has no method 'fwd'"):
        Two().export_tvm({"fwd": {"x": nn.spec.Tensor((1, 3), "float32")}})
    with pytest.raises(ArgumentError, match="non-negative int or a name"):
        nn.spec.Tensor((1.5, 3), "float32")


def test_ops_outside_export_say_how_to_use_them():
    t = nn.Tensor.placeholder((2,), "float32")
    with pytest.raises(MiniTVMError, match="export_tvm"):
        nn.op.relu(t)


def test_effects_are_refused_clearly():
    class WithEffect(nn.Module):
        def __init__(self):
            self.cache = nn.Effect()

        def forward(self, x):
            return x

    with pytest.raises(MiniTVMError, match="effects"):
        WithEffect().export_tvm({"forward": {"x": nn.spec.Tensor((1,), "float32")}})


def test_from_const_makes_a_constant_operand():
    class Const(nn.Module):
        def forward(self, x):
            return x + nn.Tensor.from_const(np.arange(3, dtype="float32")) * 2

    mod, _ = Const().export_tvm({"forward": {"x": nn.spec.Tensor((3,), "float32")}})
    x = np.ones(3, "float32")
    np.testing.assert_array_equal(
        _vm(mod)["forward"](tvm.runtime.tensor(x)).numpy(), x + np.arange(3) * 2
    )
