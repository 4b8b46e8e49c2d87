"""minitvm.cli.training (also minitvm.train): the compiled training step against numpy /
PyTorch, models, data, progress."""

from __future__ import annotations

import io

import numpy as np
import pytest

from minitvm.cli import training as tr

EYE = np.eye(10, dtype=np.float32)
SMALL = (tr.Dense(6, 8), tr.Relu(), tr.Dense(8, 10))


def _numpy_grads(layers, params, x, y):
    """(loss, grads) of mean softmax cross-entropy for Dense/Relu stacks, written by hand."""
    ws, bs = params[0::2], params[1::2]
    acts = [x]
    for i in range(len(ws)):
        z = acts[-1] @ ws[i] + bs[i]
        acts.append(np.maximum(z, 0) if i < len(ws) - 1 else z)
    z = acts[-1] - acts[-1].max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    g = (np.exp(logp) - y) / len(x)
    grads = [None] * len(params)
    for i in reversed(range(len(ws))):
        grads[2 * i], grads[2 * i + 1] = acts[i].T @ g, g.sum(0)
        g = (g @ ws[i].T) * (acts[i] > 0)
    return -np.mean(np.sum(y * logp, 1)), grads


def _numpy_update(name, params, grads, state, lr, t):
    if name == "sgd":
        return [p - lr * g for p, g in zip(params, grads)], state
    if name == "momentum":
        vs = [0.9 * v + g for v, g in zip(state, grads)]
        return [p - lr * v for p, v in zip(params, vs)], vs
    ms = [0.9 * m + 0.1 * g for m, g in zip(state[0], grads)]
    vs = [0.999 * v + 0.001 * g * g for v, g in zip(state[1], grads)]
    c1, c2 = 1 - 0.9**t, 1 - 0.999**t
    new = [p - lr * (m / c1) / (np.sqrt(v / c2) + 1e-8) for p, m, v in zip(params, ms, vs)]
    return new, (ms, vs)


@pytest.mark.parametrize("optimizer, lr", [("sgd", 0.5), ("momentum", 0.1), ("adam", 0.01)])
def test_three_steps_match_numpy(optimizer, lr):
    rng = np.random.default_rng(0)
    program = tr.TrainingProgram(SMALL, (6,), 5, optimizer, lr)
    params = tr.init_params(SMALL, seed=3)
    states = program.initial_states()
    ref = [p.astype(np.float64) for p in params]
    ref_state = [np.zeros_like(p) for p in ref] if optimizer == "momentum" else (
        ([np.zeros_like(p) for p in ref], [np.zeros_like(p) for p in ref]) if optimizer == "adam" else None
    )  # fmt: skip
    for t in range(1, 4):  # outputs fed back as inputs: the VM's results must not alias
        x = rng.random((5, 6)).astype(np.float32)
        y = EYE[rng.integers(0, 10, 5)]
        loss, logits, params, states = program.step(x, y, params, states)
        ref_loss, grads = _numpy_grads(SMALL, ref, x, y)
        ref, ref_state = _numpy_update(optimizer, ref, grads, ref_state, lr, t)
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-4)
        assert logits.shape == (5, 10)
    for got, want in zip(params, ref):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_cnn_step_matches_pytorch():
    torch = pytest.importorskip("torch")
    layers = (tr.Conv2d(2, 4), tr.Relu(), tr.MaxPool2d(2), tr.Flatten(), tr.Dense(36, 10))
    program = tr.TrainingProgram(layers, (2, 6, 6), 3, "sgd", 0.1)
    params = tr.init_params(layers, seed=1)
    rng = np.random.default_rng(1)
    x = rng.random((3, 2, 6, 6)).astype(np.float32)
    labels = np.array([1, 7, 3])
    loss, _, new_params, _ = program.step(x, EYE[labels], params, [])

    w1, b1, w2, b2 = (torch.tensor(p, requires_grad=True) for p in params)
    h = torch.nn.functional.conv2d(torch.tensor(x), w1, padding=1) + b1
    h = torch.nn.functional.max_pool2d(torch.relu(h), 2).reshape(3, -1)
    ref = torch.nn.functional.cross_entropy(h @ w2 + b2, torch.tensor(labels))
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    for got, p in zip(new_params, (w1, b1, w2, b2)):
        np.testing.assert_allclose(
            got.numpy(), (p - 0.1 * p.grad).detach().numpy(), rtol=1e-4, atol=1e-6
        )


def test_predict_pads_the_last_partial_batch():
    program = tr.TrainingProgram(SMALL, (6,), 4, "sgd", 0.1)
    params = tr.init_params(SMALL, seed=0)
    x = np.random.default_rng(2).random((10, 6)).astype(np.float32)
    w0, b0, w1, b1 = params
    expected = np.maximum(x @ w0 + b0, 0) @ w1 + b1
    np.testing.assert_allclose(program.predict(x, params), expected, rtol=1e-5, atol=1e-6)
    y = np.argmax(expected, 1)
    assert tr.evaluate(program, params, x, y) == 1.0


def test_init_params_is_seeded_he_for_relu_and_glorot_otherwise():
    layers = (tr.Dense(400, 300), tr.Relu(), tr.Dense(300, 10))
    a, b = tr.init_params(layers, seed=5), tr.init_params(layers, seed=5)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert [p.shape for p in a] == [(400, 300), (300,), (300, 10), (10,)]
    assert a[0].std() == pytest.approx(np.sqrt(2 / 400), rel=0.02)
    assert a[2].std() == pytest.approx(np.sqrt(2 / 310), rel=0.1)
    assert not a[1].any() and not a[3].any()


@pytest.mark.parametrize(
    "model, shape, summary",
    [
        ("logreg", (1, 28, 28), "784-10"),
        ("mlp", (1, 28, 28), "784-256-100-10 relu"),
        ("mlp", (1, 8, 8), "64-128-64-10 relu"),
        ("cnn", (1, 28, 28), ("conv3x3(1->8) -> relu -> maxpool2 -> conv3x3(8->16) -> relu -> "
                              "maxpool2 -> flatten -> linear(784->10)")),
    ],
)  # fmt: skip
def test_models_for_each_input_shape(model, shape, summary):
    assert tr.describe_model(tr.build_model(model, shape)) == summary


def test_unknown_model_and_optimizer_are_named():
    with pytest.raises(tr.TrainError, match=r"unknown model 'vgg'; choose one of logreg, mlp, cnn"):
        tr.build_model("vgg", (1, 8, 8))
    with pytest.raises(
        tr.TrainError, match=r"unknown optimizer 'lbfgs'; choose one of sgd, momentum, adam"
    ):
        tr.TrainingProgram(SMALL, (6,), 4, "lbfgs")


def test_default_config_falls_back_to_any_data_set():
    assert tr.default_config("mlp", "digits") == tr.TrainConfig(20, 32, 0.1, "sgd")
    assert tr.default_config("mlp", "mnist").batch_size == 100


def test_load_dataset_shapes():
    data = tr.load_dataset("digits")
    assert data.x_train.shape == (1438, 64) and data.image_shape == (1, 8, 8)
    synth = tr.load_dataset("synthetic:60", seed=2)
    assert synth.x_train.shape == (60, 784) and len(synth.x_val) == 10


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_only():
    tty, pipe = _Tty(), io.StringIO()
    bars = [tr.ProgressBar(4, "epoch 1/1", stream) for stream in (tty, pipe)]
    for bar in bars:
        for _ in range(4):
            bar.update(1, loss="0.5")
        bar.close()
    assert pipe.getvalue() == ""
    if bars[0]._tqdm is None:
        assert "\repoch 1/1 [" + "#" * 30 + "] 4/4 loss 0.5" in tty.getvalue()
    else:
        assert tty.getvalue()
