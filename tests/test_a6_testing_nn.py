"""relax.testing.nn (TVM's layer API for building relax workloads): a model built with it runs
and matches numpy; define_subroutine makes TVM's private functions; init_params gives zeros."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, MiniTVMError
from minitvm.relax.testing import nn
from minitvm.script import ir as I
from minitvm.script import relax as R


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in args]).numpy()


def test_mlp_of_linear_relu_logsoftmax_matches_numpy():
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3), nn.LogSoftmax())
    bb = relax.BlockBuilder()
    with bb.function("main"):
        x = nn.Placeholder((4, 6), name="data")
        bb.emit_func_output(model(x), [x, *model.parameters()])
    mod = bb.get()
    assert [p.name_hint for p in mod["main"].params] == [
        "data", "linear_weight", "linear_bias", "linear_weight", "linear_bias",
    ]  # fmt: skip
    zeros = nn.init_params(mod)
    assert [a.shape for a in zeros] == [(6, 5), (5,), (5, 3), (3,)]
    assert all(not a.numpy().any() for a in zeros)
    rng = np.random.default_rng(0)
    x, w1, b1, w2, b2 = (rng.standard_normal(s).astype("float32") for s in
                         [(4, 6), (6, 5), (5,), (5, 3), (3,)])  # fmt: skip
    h = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    want = h - h.max(1, keepdims=True)
    want = want - np.log(np.exp(want).sum(1, keepdims=True))
    np.testing.assert_allclose(_run(mod, x, w1, b1, w2, b2), want, rtol=1e-5, atol=1e-5)


def test_a_module_without_weights_has_no_parameters():
    class Plus1(nn.Module):
        def __init__(self):
            self.one = relax.const(1, "float32")

        def forward(self, x):
            return nn.emit(relax.op.add(x, self.one))

    assert Plus1().parameters() == []
    assert nn.Linear(2, 3, bias=False).parameters()[0].struct_info.shape[1].value == 3


class _Activation(nn.Module):
    define_subroutine = True

    def forward(self, state):
        return relax.op.nn.relu(state)


class _Layer(nn.Module):
    define_subroutine = True

    def __init__(self):
        self.weights = nn.Parameter((4, 3), name="weights")
        self.activation = _Activation()

    def forward(self, x):
        return self.activation(relax.op.matmul(x, self.weights))


def test_define_subroutine_emits_private_functions_taking_inputs_then_weights():
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 4), "float32"), weights: R.Tensor((4, 3), "float32")):
            y: R.Tensor((2, 3), "float32") = Expected._layer(x, weights)
            return y

        @R.function(private=True)
        def _layer(x: R.Tensor((2, 4), "float32"), weights: R.Tensor((4, 3), "float32")):
            s = R.matmul(x, weights)
            t: R.Tensor((2, 3), "float32") = Expected._activation(s)
            return t

        @R.function(private=True)
        def _activation(state: R.Tensor((2, 3), "float32")):
            r = R.nn.relu(state)
            return r

    model = _Layer()
    x = nn.Placeholder((2, 4), name="x")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *model.parameters()]):
        bb.emit_func_output(model(x))
    mod = bb.get()
    tvm.ir.assert_structural_equal(mod, Expected)
    assert model.weights is model.parameters()[0]  # the swap for the subroutine is undone
    rng = np.random.default_rng(1)
    xv, wv = rng.standard_normal((2, 4)).astype("float32"), rng.standard_normal((4, 3))
    wv = wv.astype("float32")
    np.testing.assert_allclose(_run(mod, xv, wv), np.maximum(xv @ wv, 0), rtol=1e-5)


def test_init_params_refuses_a_symbolic_shape_and_layers_need_a_builder():
    n = tvm.tir.Var("n", "int64")
    bb = relax.BlockBuilder()
    with bb.function("main"):
        x = nn.Placeholder((2, 3), name="data")
        w = nn.Parameter((3, n), name="w")
        bb.emit_func_output(bb.emit(relax.op.matmul(x, w)), [x, w])
    with pytest.raises(ArgumentError, match="parameter 'w' has shape"):
        nn.init_params(bb.get())
    with pytest.raises(MiniTVMError, match="no BlockBuilder is active"):
        nn.ReLU()(x)
    with pytest.raises(ArgumentError, match="shape must be a list or tuple"):
        nn.Parameter(3)
    with pytest.raises(MiniTVMError, match="no BlockBuilder is active"):
        nn.emit_checkpoint(lambda v: v, x)
