"""minitvm.training (the library behind `minitvm train`): any number of classes, checkpoints
that resume bit for bit, `--save` / `--resume`, and the old module names as aliases."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from minitvm.cli import main
from minitvm.relax.training.checkpoint import CheckpointError, load_checkpoint


def test_old_names_are_the_same_module_object():
    import minitvm
    import minitvm.cli.training as cli_training
    import minitvm.train as old
    from minitvm import training

    assert old is training and cli_training is training and minitvm.training is training
    for name in ("train", "TrainingProgram", "Dense", "load_dataset", "TrainError", "NUM_CLASSES"):
        assert hasattr(old, name), name


def _three_class_digits():
    from minitvm import training as tr

    data = tr.load_dataset("digits")
    keep_tr, keep_val = data.y_train < 3, data.y_val < 3
    return dataclasses.replace(
        data,
        x_train=data.x_train[keep_tr], y_train=data.y_train[keep_tr],
        x_val=data.x_val[keep_val], y_val=data.y_val[keep_val],
    )  # fmt: skip


def test_a_three_class_head_trains():
    from minitvm import training as tr

    data = _three_class_digits()
    assert data.num_classes == 3
    layers = tr.build_model("mlp", data.image_shape, data.num_classes)
    assert layers[-1] == tr.Dense(64, 3)
    result = tr.train(layers, data, tr.TrainConfig(epochs=2, batch_size=32, lr=0.1))
    assert result.program.num_classes == 3
    assert result.history[-1].loss < result.history[0].loss
    assert result.val_acc > 0.9  # chance is 1/3
    logits = result.program.predict(data.x_val[:5], result.params)
    assert logits.shape == (5, 3)


def test_labels_outside_the_head_are_refused():
    from minitvm import training as tr

    data = tr.load_dataset("digits")
    layers = tr.build_model("logreg", data.image_shape, 3)
    with pytest.raises(tr.TrainError, match="model has 3 outputs; build it with num_classes=10"):
        tr.train(layers, data, tr.TrainConfig(epochs=1))
    with pytest.raises(tr.TrainError, match="num_classes must be an integer >= 2"):
        tr.build_model("mlp", data.image_shape, 1)


def test_resume_gives_bit_identical_losses_and_params(tmp_path):
    """Adam: the optimizer state (step count, both moments) must come back exactly too."""
    from minitvm import training as tr

    data = _three_class_digits()
    layers = tr.build_model("logreg", data.image_shape, 3)
    config = tr.TrainConfig(epochs=3, batch_size=64, lr=0.05, optimizer="adam", seed=2)
    program = tr.TrainingProgram(layers, (64,), 64, "adam", 0.05)
    straight = tr.train(layers, data, config, program=program)
    path = tmp_path / "run.npz"
    tr.train(layers, data, dataclasses.replace(config, epochs=1), checkpoint=path, program=program)
    arrays, meta = load_checkpoint(path)
    assert meta["epoch"] == 1 and set(arrays) == {"0.w", "0.b", "optim.0", "optim.1",
                                                  "optim.2", "optim.3", "optim.4"}  # fmt: skip
    resumed = tr.train(layers, data, config, checkpoint=path, resume=path, program=program)
    assert [s.loss for s in resumed.history] == [s.loss for s in straight.history]
    for a, b in zip(resumed.params, straight.params):
        assert a.numpy().tobytes() == b.numpy().tobytes()
    for a, b in zip(resumed.states, straight.states):
        assert a.numpy().tobytes() == b.numpy().tobytes()
    assert load_checkpoint(path)[1]["epoch"] == 3
    with pytest.raises(CheckpointError, match="trained with --seed 2, this run asks for 3"):
        tr.train(layers, data, dataclasses.replace(config, seed=3), resume=path, program=program)
    with pytest.raises(tr.TrainError, match="compiled for other layers"):
        tr.train(layers, data, dataclasses.replace(config, lr=0.1), program=program)


def test_cli_save_then_resume(tmp_path, capsys):
    path = str(tmp_path / "ckpt.npz")
    base = ["train", "--model", "logreg", "--batch-size", "64", "--save", path]
    assert main([*base, "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert f"saved the checkpoint to {path}" in out and "epoch 1/1" in out
    assert main([*base, "--epochs", "2", "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"resuming from the checkpoint {path}" in out
    assert "epoch 2/2" in out and "epoch 1/2" not in out  # epoch 1 came from the checkpoint
    assert load_checkpoint(path)[1]["epoch"] == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--resume"], "--resume without a PATH resumes from the --save PATH"),
        (["--save", "model.pkl"], "unknown file kind '.pkl'"),
        (["--resume", "missing.npz"], "'missing.npz' does not exist"),
    ],
)
def test_cli_checkpoint_errors_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--model", "logreg", "--epochs", "1", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written before the error


def test_checkpoint_with_pickled_arrays_is_refused(tmp_path):
    from minitvm import training as tr

    path = tmp_path / "evil.npz"
    np.savez(path, **{"0.w": np.array([object()], dtype=object)})
    data = tr.load_dataset("digits")
    layers = tr.build_model("logreg", data.image_shape)
    with pytest.raises(CheckpointError, match="refused"):
        tr.train(layers, data, tr.TrainConfig(epochs=1, batch_size=64, lr=0.2), resume=path)
