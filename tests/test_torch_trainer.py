"""minitvm.training.TorchTrainer against torch eager: same init, same data, same losses and
weights after k steps (forward, loss, backward and update compiled as one program)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from minitvm.error import MiniTVMError
from minitvm.testing.torch_reference import train_steps
from minitvm.training import TorchTrainer, TrainError, make_optimizer

STEPS = 5


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 4))


def _cnn():
    torch.manual_seed(1)
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 4, 3),
    )


def _batches(x_shape, classes, n=STEPS, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(x_shape, generator=g), torch.randint(0, classes, (x_shape[0],), generator=g))
        for _ in range(n)
    ]


def _compare(make_model, batches, loss_fn, spec, make_opt):
    ours_model, ref_model = make_model(), make_model()
    trainer = TorchTrainer(ours_model, batches[0], loss_fn, spec)
    ours = [trainer.step(x, y) for x, y in batches]
    ref = train_steps(ref_model, batches, make_opt, loss_fn)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-6)
    for (name, p), q in zip(ref_model.named_parameters(), trainer.parameters()):
        np.testing.assert_allclose(q, p.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    return trainer, ref_model


SGD_MOMENTUM = (
    ("sgd", {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-3}),
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
)
ADAM = (
    ("adam", {"lr": 1e-2, "weight_decay": 0}),
    lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=0),
)


def _mlp_frozen_bias():
    model = _mlp()
    model[0].bias.requires_grad_(False)
    return model


def test_mlp_sgd_momentum_matches_torch_with_ignore_index_and_frozen_bias():
    batches = _batches((6, 7), 4)
    for _, y in batches:
        y[::3] = -100  # CrossEntropyLoss's default ignore_index
    spec, make_opt = SGD_MOMENTUM
    trainer, ref = _compare(
        _mlp_frozen_bias,
        batches,
        nn.CrossEntropyLoss(),
        spec,
        lambda ps: make_opt([p for p in ps if p.requires_grad]),
    )
    np.testing.assert_array_equal(trainer.state_dict()["0.bias"], _mlp()[0].bias.detach().numpy())
    # the batch dim is symbolic: the step and the forward run on another batch size
    assert trainer.symbolic_batch
    x = torch.randn(3, 7)
    np.testing.assert_allclose(
        trainer.eval_forward(x), ref(x).detach().numpy(), rtol=1e-4, atol=1e-5
    )
    # the trained weights load back into a torch model
    back = _mlp()
    back.load_state_dict(trainer.state_dict(as_torch=True))
    np.testing.assert_allclose(
        back(x).detach().numpy(), ref(x).detach().numpy(), rtol=1e-4, atol=1e-5
    )
    # load_state_dict restores an earlier state: the next loss is the same again
    saved = trainer.state_dict()
    first = trainer.step(x, torch.tensor([0, 1, 2]))
    trainer.load_state_dict({k: torch.from_numpy(v) for k, v in saved.items()})
    assert trainer.step(x, torch.tensor([0, 1, 2])) == pytest.approx(first, rel=1e-6)
    with pytest.raises(TrainError, match="missing"):
        trainer.load_state_dict({})
    bad = dict(saved)
    bad["0.weight"] = np.zeros((2, 2), np.float32)
    with pytest.raises(TrainError, match="'0.weight' is float32"):
        trainer.load_state_dict(bad)


def test_mlp_adam_matches_torch():
    _compare(_mlp, _batches((6, 7), 4, seed=2), nn.CrossEntropyLoss(), *ADAM)


@pytest.mark.parametrize("opt", [SGD_MOMENTUM, ADAM], ids=["sgd_momentum", "adam"])
def test_cnn_matches_torch(opt):
    batches = _batches((5, 2, 6, 8), 3, seed=1)
    _compare(_cnn, batches, F.cross_entropy, *opt)


def test_mse_callable_loss_and_torch_optimizer():
    torch.manual_seed(2)
    make = lambda: nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    g = torch.Generator().manual_seed(3)
    batches = [(torch.randn(4, 3, generator=g), torch.randn(4, 2, generator=g)) for _ in range(3)]

    def loss(out, target):  # any traceable callable
        return F.mse_loss(out, target) + 0.1 * out.abs().mean()

    torch.manual_seed(4)
    m = make()
    torch.manual_seed(4)
    ref = make()
    spec = torch.optim.SGD(m.parameters(), lr=0.05)
    trainer = TorchTrainer(m, batches[0], loss, spec)
    ours = [trainer.step(x, y) for x, y in batches]
    theirs = train_steps(ref, batches, lambda ps: torch.optim.SGD(ps, lr=0.05), loss)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def test_random_ops_other_than_dropout_are_refused():
    """Train-mode batch norm and dropout train (tests/test_training_bn_dropout.py); other
    random draws inside the model have no compiled form."""
    x, y = torch.randn(4, 3), torch.tensor([0, 1, 0, 1])

    class Noisy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x + torch.rand_like(x))

    with pytest.raises(TrainError, match="the model calls rand"):
        TorchTrainer(Noisy(), (x, y), nn.CrossEntropyLoss())
    with pytest.raises(TrainError, match="seed must be a non-negative int"):
        TorchTrainer(_mlp(), (torch.randn(2, 7), torch.tensor([0, 1])), F.cross_entropy, seed=-1)


@pytest.mark.slow
def test_eval_mode_batch_norm_trains_with_frozen_statistics():
    torch.manual_seed(6)
    make = lambda: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    m, ref = make(), make()
    ref.load_state_dict(m.state_dict())
    for model in (m, ref):
        model[1].running_mean.uniform_(-1, 1)
        model[1].eval()
    ref.load_state_dict(m.state_dict())
    batches = _batches((5, 3), 2, n=3, seed=7)
    trainer = TorchTrainer(m, batches[0], nn.CrossEntropyLoss(), ("adam", {"lr": 0.01}))
    ours = [trainer.step(x, y) for x, y in batches]
    theirs = train_steps(
        ref, batches, lambda ps: torch.optim.Adam(ps, lr=0.01), nn.CrossEntropyLoss()
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


def test_bad_arguments_say_what_to_do():
    m, x, y = _mlp(), torch.randn(2, 7), torch.tensor([0, 1])
    with pytest.raises(TrainError, match="unknown optimizer 'rmsprop'"):
        make_optimizer(("rmsprop", {}))
    with pytest.raises(TrainError, match=r"no option\(s\) \['amsgrad'\]"):
        make_optimizer(("adam", {"amsgrad": True}))
    with pytest.raises(TrainError, match="must be a torch.nn.Module"):
        TorchTrainer(object(), (x, y), F.cross_entropy)
    with pytest.raises(TrainError, match="float scalar"):
        TorchTrainer(m, (x, y), lambda out, t: out)
    assert issubclass(TrainError, MiniTVMError)
