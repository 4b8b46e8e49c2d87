"""relax.nn.batch_norm's two modes (TVM's semantics), its gradient in training mode, and the torch
importer for models exported in train mode: checked against numpy and torch."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, OpAttributeInvalid, OpAttributeUnImplemented
from minitvm.relax import op as R
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.transform.gradient import gradient


def _numpy_bn(x, gamma, beta, mean, var, axis, eps, momentum, training):
    """TVM's documented batch norm in float64: batch stats (biased variance) when training."""
    x64 = x.astype("float64")
    axis = axis % x.ndim
    others = tuple(k for k in range(x.ndim) if k != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    if training:
        use_mean = x64.mean(axis=others)
        use_var = x64.var(axis=others)  # ddof=0: biased, as TVM
        new_mean = (1 - momentum) * mean + momentum * use_mean
        new_var = (1 - momentum) * var + momentum * use_var
    else:
        use_mean, use_var, new_mean, new_var = mean, var, mean, var
    out = (x64 - use_mean.reshape(shape)) / np.sqrt(use_var.reshape(shape) + eps)
    out = out * gamma.reshape(shape) + beta.reshape(shape)
    return out, new_mean, new_var


def _bn_module(shape, dtype, **kwargs):
    x = relax.Var("x", relax.TensorStructInfo(shape, dtype))
    c = shape[kwargs.get("axis", 1)]
    ps = [relax.Var(n, relax.TensorStructInfo((c,), dtype)) for n in ("g", "b", "m", "v")]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ps]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(R.nn.batch_norm(x, *ps, **kwargs)))
        bb.emit_func_output(out)
    return bb.get()


def _run_legalized(mod, args):
    ex = relax.build(relax.transform.LegalizeOps()(mod), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return [r.numpy() for r in vm["main"](*[tvm.nd.array(a) for a in args])]


def _bn_inputs(shape, axis, dtype, seed=0):
    rng = np.random.default_rng(seed)
    c = shape[axis]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    gamma, beta, mean = (rng.standard_normal(c).astype(dtype) for _ in range(3))
    var = rng.uniform(0.5, 2.0, c).astype(dtype)
    return [x, gamma, beta, mean, var]


@pytest.mark.parametrize(
    "shape, axis, dtype, momentum, training",
    [
        ((4, 3, 5, 2), 1, "float32", 0.1, True),
        ((4, 3, 5, 2), 1, "float32", 0.1, False),
        ((6, 4), 1, "float64", 0.37, True),
        ((2, 3, 7), -1, "float32", 1.0, True),
        ((5, 3, 4), 0, "float64", 0.0, True),
        ((2, 3, 7), -1, "float64", 0.5, False),
    ],
)
def test_legalized_batch_norm_matches_numpy(shape, axis, dtype, momentum, training):
    args = _bn_inputs(shape, axis, dtype)
    mod = _bn_module(shape, dtype, axis=axis, momentum=momentum, training=training)
    got = _run_legalized(mod, args)
    want = _numpy_bn(*args, axis=axis, eps=1e-5, momentum=momentum, training=training)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for name, g, w in zip(("output", "new moving_mean", "new moving_var"), got, want):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=name)


def test_batch_norm_defaults_to_training_as_tvm():
    shape = (4, 3, 5)
    args = _bn_inputs(shape, 1, "float32", seed=3)
    mod = _bn_module(shape, "float32", axis=1)
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.attrs["training"] is True and call.attrs["momentum"] == 0.1
    got = _run_legalized(mod, args)
    want = _numpy_bn(*args, axis=1, eps=1e-5, momentum=0.1, training=True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    # a batch-normalised output has zero mean per channel; the moving stats would not give it
    np.testing.assert_allclose(
        ((got[0] - args[2][None, :, None]) / args[1][None, :, None]).mean(axis=(0, 2)),
        0,
        atol=1e-5,
    )


def test_batch_norm_script_round_trip_keeps_mode():
    mod = _bn_module((2, 3), "float32", axis=1, momentum=0.25, training=False)
    again = tvm.script.from_source(mod.script())
    tvm.ir.assert_structural_equal(mod, again)
    assert "training=False" in mod.script()


def test_batch_norm_momentum_out_of_range_is_refused():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    p = relax.Var("p", relax.TensorStructInfo((3,), "float32"))
    with pytest.raises(ArgumentError, match=r"momentum=1.5 is outside \[0, 1\]"):
        R.nn.batch_norm(x, p, p, p, p, axis=1, momentum=1.5)


# ----------------------------------------------------------------------------- gradient

torch_cases = [
    # (shape, axis, loss reads the new moving stats, center/scale)
    ((4, 3, 5, 2), 1, False, True),
    ((6, 4), -1, True, True),
    ((3, 5, 4), 2, True, False),
]


@pytest.mark.parametrize("shape, axis, with_stats, affine", torch_cases)
def test_training_gradient_matches_torch_autograd(shape, axis, with_stats, affine):
    torch = pytest.importorskip("torch")
    momentum, eps = 0.3, 1e-5
    inputs = _bn_inputs(shape, axis, "float32", seed=7)
    rng = np.random.default_rng(11)
    ax = axis % len(shape)
    others = [k for k in range(len(shape)) if k != ax]
    perm = [ax] + others  # torch's batch_norm wants channels at dim 1: move them there

    def torch_fn(x, g, b, m, v):
        xt = x.permute(*perm).reshape(shape[ax], -1).t()  # (N, C)
        out = torch.nn.functional.batch_norm(
            xt, None, None, g if affine else None, b if affine else None, True, eps=eps
        )
        out = out.t().reshape([shape[k] for k in perm]).permute(*np.argsort(perm).tolist())
        new_m = (1 - momentum) * m + momentum * x.mean(others)
        new_v = (1 - momentum) * v + momentum * x.var(others, unbiased=False)
        return [out, new_m, new_v] if with_stats else [out]

    tin = [torch.tensor(a, requires_grad=True) for a in inputs]
    touts = torch_fn(*tin)
    weights = [rng.standard_normal(tuple(t.shape)).astype("float32") for t in touts]
    loss = sum((t * torch.tensor(w)).sum() for t, w in zip(touts, weights))
    wrt = [0, 1, 2, 3, 4] if affine else [0, 3, 4]
    expected = torch.autograd.grad(loss, [tin[k] for k in wrt], allow_unused=True)

    params = [
        relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, "float32")) for k, a in enumerate(inputs)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            bn = bb.emit(
                R.nn.batch_norm(*params, axis=axis, momentum=momentum, center=affine, scale=affine)
            )
            total = None
            for i, w in enumerate(weights):
                term = bb.emit(
                    R.sum(R.multiply(bb.emit(relax.TupleGetItem(bn, i)), relax.const(w)))
                )
                total = term if total is None else bb.emit(R.add(total, term))
            total = bb.emit_output(total)
        bb.emit_func_output(total)
    adj = gradient(bb.get(), "main", [params[k] for k in wrt])
    _, grads = evaluate(adj, *inputs, func_name="main_adjoint")
    for k, got, want in zip(wrt, grads, expected):
        want = np.zeros_like(inputs[k]) if want is None else want.numpy()
        got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"grad of input {k}")


# ----------------------------------------------------------------------------- torch import


def _bn_model(torch, bn, momentum=0.3, affine=True):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.bn = bn(4, momentum=momentum, affine=affine)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-1, 1)
        net.bn.running_var.uniform_(0.5, 2)
        if affine:
            net.bn.weight.uniform_(0.5, 2)
            net.bn.bias.uniform_(-1, 1)
    return net


@pytest.mark.parametrize("affine", [True, False])
def test_train_mode_import_returns_output_and_updated_running_stats(affine):
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program

    net = _bn_model(torch, torch.nn.BatchNorm2d, affine=affine).train()
    x = torch.randn(2, 3, 6, 6)
    mod = from_exported_program(torch.export.export(net, (x,)))
    assert mod["main"].attrs["buffer_mutations"] == (
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
    )
    ref = copy.deepcopy(net)
    with torch.no_grad():
        want = ref(x)
    got = _run_legalized(mod, [x.numpy()])
    assert len(got) == 4
    np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], ref.bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    # torch's running_var blends the unbiased batch variance: the importer corrects for it
    np.testing.assert_allclose(got[2], ref.bn.running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert got[3] == ref.bn.num_batches_tracked.numpy()


def test_eval_mode_import_is_unchanged():
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program

    net = _bn_model(torch, torch.nn.BatchNorm2d).eval()
    x = torch.randn(2, 3, 6, 6)
    mod = from_exported_program(torch.export.export(net, (x,)))
    assert "buffer_mutations" not in (mod["main"].attrs or {})
    assert "training=False" in mod.script()
    with torch.no_grad():
        want = net(x).numpy()
    got = _run_legalized(mod, [x.numpy()])
    assert len(got) == 1
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)


def test_train_mode_batch_norm_1d_import():
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3)).train()
    x = torch.randn(8, 5)
    mod = from_exported_program(torch.export.export(net, (x,)))
    ref = copy.deepcopy(net)
    with torch.no_grad():
        want = ref(x)
    got = _run_legalized(mod, [x.numpy()])
    np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], ref[1].running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], ref[1].running_var.numpy(), rtol=1e-5, atol=1e-6)


def test_train_mode_import_without_decomposition_is_refused():
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program

    net = _bn_model(torch, torch.nn.BatchNorm2d).train()
    ep = torch.export.export(net, (torch.randn(2, 3, 6, 6),))
    with pytest.raises(OpAttributeUnImplemented, match="run_ep_decomposition=True"):
        from_exported_program(ep, run_ep_decomposition=False)


def test_train_mode_import_with_a_symbolic_batch_is_refused():
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program

    net = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3)).train()
    batch = torch.export.Dim("batch", min=2, max=64)
    ep = torch.export.export(net, (torch.randn(8, 5),), dynamic_shapes=({0: batch},))
    with pytest.raises(OpAttributeUnImplemented, match="symbolic dims.*static shapes"):
        from_exported_program(ep)


def test_one_value_per_channel_is_refused():
    # torch.export refuses such a train-mode batch itself; a hand-made graph reaches the check
    pytest.importorskip("torch")
    from minitvm.relax.frontend.torch._nn import _batch_count

    x = relax.Var("x", relax.TensorStructInfo((1, 3, 1, 1), "float32"))
    with pytest.raises(OpAttributeInvalid, match="1 value per channel"):
        _batch_count(x, "_native_batch_norm_legit_functional")
