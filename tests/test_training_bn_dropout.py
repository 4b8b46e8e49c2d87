"""Training mode: batch norm carries its running statistics between compiled steps, dropout
draws a seeded mask (checked against torch eager and torch.autograd with the same mask)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError
from minitvm.relax import op as R
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.op.random import _np_mask
from minitvm.relax.transform.gradient import gradient
from minitvm.testing.torch_reference import resnet18, train_steps
from minitvm.training import TorchTrainer, torch_backbone


def _batches(shape, classes, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(shape, generator=g), torch.randint(0, classes, (shape[0],), generator=g))
        for _ in range(n)
    ]


def _bn_cnn():
    """No bias before a batch norm (as in ResNets): its gradient is zero up to rounding, and
    Adam would amplify that rounding noise into updates of size lr."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, bias=False),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 5 * 5, 5, bias=False),
        nn.BatchNorm1d(5, momentum=0.3),
    )


def _assert_state_matches(ours: dict, ref_model, rtol=1e-4, atol=1e-6):
    for name, value in ref_model.state_dict().items():
        np.testing.assert_allclose(ours[name], value.numpy(), rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize(
    "spec, make_opt",
    [
        (("sgd", {"lr": 0.1}), lambda ps: torch.optim.SGD(ps, lr=0.1)),
        (("adam", {"lr": 1e-2}), lambda ps: torch.optim.Adam(ps, lr=1e-2)),
    ],
    ids=["sgd", "adam"],
)
def test_train_mode_batch_norm_matches_torch(spec, make_opt):
    model, ref = _bn_cnn(), _bn_cnn()
    batches = _batches((6, 3, 7, 7), 5, n=6)
    trainer = TorchTrainer(model, batches[0], nn.CrossEntropyLoss(), spec)
    # building the trainer leaves the torch model's running statistics as they were
    assert float(model[1].num_batches_tracked) == 0
    ours = [trainer.step(x, y) for x, y in batches]
    theirs = train_steps(ref, batches, make_opt)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)
    state = trainer.state_dict()
    _assert_state_matches(state, ref)  # parameters, running_mean/var, num_batches_tracked
    assert int(state["1.num_batches_tracked"]) == len(batches)
    assert not np.allclose(state["1.running_var"], 1.0)  # the statistics did move
    ref.eval()  # predict: running statistics
    x = batches[0][0]
    np.testing.assert_allclose(trainer.predict(x), ref(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    model.load_state_dict(trainer.state_dict(as_torch=True))
    model.eval()
    np.testing.assert_allclose(
        model(x).detach().numpy(), ref(x).detach().numpy(), rtol=1e-4, atol=1e-5
    )


def test_setup_trainer_carries_batch_norm_states():
    from minitvm.relax.training import SGD, SetupTrainer, Trainer
    from minitvm.relax.training.loss import CrossEntropyLoss

    model, ref = _bn_cnn(), _bn_cnn()
    batches = _batches((6, 3, 7, 7), 5, n=5, seed=3)
    mod, params, states = torch_backbone(model, batches[0][0])
    assert int(mod.attrs["state_num"]) == len(states) == 6
    train_mod = SetupTrainer(
        CrossEntropyLoss(),
        SGD(0.1),
        [relax.TensorStructInfo((6, 5), "float32"), relax.TensorStructInfo((6,), "int64")],
    )(mod)
    vm = relax.VirtualMachine(relax.build(train_mod, "llvm"), tvm.cpu())
    trainer = Trainer(train_mod, vm, tvm.cpu())
    trainer.load_params(params)
    trainer.load_states(states)
    ours = [float(trainer.update([x.numpy()], [y.numpy()]).numpy()) for x, y in batches]
    theirs = train_steps(ref, batches, lambda ps: torch.optim.SGD(ps, lr=0.1))
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)
    got = [p.numpy() for p in trainer.export_params().values()]
    got += [s.numpy() for s in trainer.export_states().values()]
    want = [p.detach().numpy() for p in ref.parameters()] + [b.numpy() for b in ref.buffers()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
    ref.eval()
    x = batches[0][0]
    out = trainer.predict(x.numpy())
    np.testing.assert_allclose(out.numpy(), ref(x).detach().numpy(), rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- dropout


def _mask_program(shape, rate, stream=0, reduce=True):
    key = relax.Var("key", relax.TensorStructInfo((2,), "int64"))
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, key]):
        with bb.dataflow():
            m = bb.emit(R.random.dropout_mask(key, shape, rate, stream=stream))
            y = bb.emit(R.multiply(x, m))
            y = R.multiply(y, relax.const(np.float32(3.0)))
            out = bb.emit_output(R.sum(y) if reduce else y)
        bb.emit_func_output(out)
    return bb.get()


def test_dropout_mask_kernel_statistics_and_reproducibility():
    shape, p = (200, 500), 0.3
    mod = _mask_program(shape, p, reduce=False)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    ones = np.ones(shape, "float32")
    masks = {}
    for key in ((7, 0), (7, 1), (8, 0), (7, 0)):
        got = vm["main"](ones, np.array(key, "int64")).numpy()
        ref = _np_mask(np.array(key), shape, p, "float32", 0)
        np.testing.assert_array_equal(got, 3.0 * ref)  # the compiled kernel is the reference
        masks.setdefault(key, ref)
    m = masks[(7, 0)]
    kept = m != 0
    n = m.size
    assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
    assert np.all(m[kept] == np.float32(1 / (1 - p)))  # kept values scaled by 1/(1-p)
    assert not np.array_equal(masks[(7, 1)], m) and not np.array_equal(masks[(8, 0)], m)
    # a new step's mask is not correlated with the last one's
    both = (masks[(7, 1)] != 0) & kept
    assert abs(both.mean() - (1 - p) ** 2) < 5 * np.sqrt(p * (1 - p) / n)
    assert np.all(_np_mask(np.array([7, 0]), (4, 5), 0.0, "float32", 0) == 1)
    assert np.all(_np_mask(np.array([7, 0]), (4, 5), 1.0, "float32", 0) == 0)
    with pytest.raises(ArgumentError, match="rate must be in"):
        R.random.dropout_mask(relax.Var("k", relax.TensorStructInfo((2,), "int64")), (2,), 1.5)


def test_dropout_gradient_is_zero_where_the_mask_is():
    shape, p = (6, 7), 0.5
    mod = _mask_program(shape, p, stream=2)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    key = np.array([3, 4], "int64")
    adj = gradient(mod, "main", [mod["main"].params[0]])
    _, (grad,) = evaluate(adj, x, key, func_name="main_adjoint")
    grad = grad.numpy() if hasattr(grad, "numpy") else np.asarray(grad)
    mask = _np_mask(key, shape, p, "float32", 2)
    xt = torch.tensor(x, requires_grad=True)
    (3.0 * xt * torch.tensor(mask)).sum().backward()
    np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-6)
    assert np.all(grad[mask == 0] == 0) and np.all(grad[mask != 0] != 0)


class _Drop(nn.Module):
    def __init__(self, p):
        super().__init__()
        torch.manual_seed(4)
        self.fc1, self.drop, self.fc2 = nn.Linear(8, 16), nn.Dropout(p), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.drop(self.fc1(x))))


class _MaskedDrop(_Drop):
    """The same model with the dropout mask given: what minitvm's step k must compute."""

    mask = None

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x) * self.mask))


def test_dropout_p0_equals_torch_and_eval_is_identity():
    batches = _batches((5, 8), 3, n=4, seed=1)
    trainer = TorchTrainer(_Drop(0.0), batches[0], nn.CrossEntropyLoss(), ("sgd", {"lr": 0.2}))
    ours = [trainer.step(x, y) for x, y in batches]
    ref = _Drop(0.0)
    np.testing.assert_allclose(
        ours, train_steps(ref, batches, lambda ps: torch.optim.SGD(ps, lr=0.2)), rtol=1e-4
    )
    trained = TorchTrainer(_Drop(0.5), batches[0], nn.CrossEntropyLoss())
    x = batches[0][0]
    ref = _Drop(0.5).eval()
    np.testing.assert_allclose(trained.predict(x), ref(x).detach().numpy(), rtol=1e-5)


def test_dropout_training_uses_the_seeded_mask_in_forward_and_backward():
    p, seed = 0.4, 11
    batches = _batches((5, 8), 3, n=4, seed=2)
    trainer = TorchTrainer(
        _Drop(p), batches[0], nn.CrossEntropyLoss(), ("sgd", {"lr": 0.2}), seed=seed
    )
    ours = [trainer.step(x, y) for x, y in batches]
    # torch.autograd with the same masks: the mask of step k is drawn from the key (seed, k)
    ref = _MaskedDrop(p)
    opt = torch.optim.SGD(ref.parameters(), lr=0.2)
    theirs = []
    for k, (x, y) in enumerate(batches):
        ref.mask = torch.tensor(_np_mask(np.array([seed, k]), (5, 16), p, "float32", 0))
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(ref(x), y)
        loss.backward()
        opt.step()
        theirs.append(loss.item())
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)
    for q, w in zip(trainer.parameters(), ref.parameters()):
        np.testing.assert_allclose(q, w.detach().numpy(), rtol=1e-4, atol=1e-6)
    again = TorchTrainer(
        _Drop(p), batches[0], nn.CrossEntropyLoss(), ("sgd", {"lr": 0.2}), seed=seed
    )
    assert [again.step(x, y) for x, y in batches] == ours  # same seed: identical losses
    other = TorchTrainer(_Drop(p), batches[0], nn.CrossEntropyLoss(), ("sgd", {"lr": 0.2}))
    assert [other.step(x, y) for x, y in batches] != ours


# ----------------------------------------------------------------------------- ResNet-18


@pytest.mark.slow
def test_resnet18_train_mode_matches_torch():
    """Issue 25's target at test size: CIFAR-size input, batch 8 (the benchmark: 32), SGD with
    momentum, train-mode batch norm; losses, parameters and running statistics as torch's.

    Three steps: on random data this network is chaotic under float32 rounding. torch against
    itself with the weights scaled by 1 + 1e-6 * noise differs by ~1e-6 at step 1, ~1e-4 at
    step 2 and ~1e-2 by step 4 (batch 8 or 32, lr 1e-3..1e-2), so no implementation can match
    to 1e-4 much past step 2."""
    torch.set_num_threads(1)
    batches = _batches((8, 3, 32, 32), 10, n=3, seed=5)
    spec = ("sgd", {"lr": 0.01, "momentum": 0.9})
    model, ref = resnet18(), resnet18()
    trainer = TorchTrainer(model, batches[0], nn.CrossEntropyLoss(), spec)
    opt = torch.optim.SGD(ref.parameters(), lr=0.01, momentum=0.9)
    ours = [trainer.step(*batches[0])]
    theirs = train_steps(ref, batches[:1], lambda ps: opt)
    # after one step: every parameter and running statistic (the gradient of every layer)
    _assert_state_matches(trainer.state_dict(), ref, rtol=1e-4, atol=1e-6)
    ours += [trainer.step(x, y) for x, y in batches[1:]]
    theirs += train_steps(ref, batches[1:], lambda ps: opt)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
