"""`python -m minitvm train` and `python -m minitvm demo`: output, accuracy, data sets, errors."""

from __future__ import annotations

import gzip
import re
import struct
import sys

import numpy as np
import pytest

from minitvm.cli import main
from minitvm.testing.datasets import synthetic_mnist

EPOCH_LINE = re.compile(
    r"^epoch +(\d+)/(\d+)  loss (\d+\.\d+)  train acc +(\d+\.\d+)%  (val|test) acc +(\d+\.\d+)%  "
    r"time \d+\.\d+ s$",
    re.MULTILINE,
)
FINAL = re.compile(r"^final (validation|test) accuracy (\d+\.\d+)% \((\d+) epochs in", re.MULTILINE)


def _run(capsys, *argv: str) -> tuple[int, str, str, float]:
    code = main(["train", *argv])
    out, err = capsys.readouterr()
    final = FINAL.search(out)
    return code, out, err, float(final.group(2)) if final else -1.0


def test_logreg_on_digits_prints_header_epochs_and_final_accuracy(capsys):
    code, out, err, acc = _run(capsys, "--model", "logreg", "--epochs", "2", "--batch-size", "64")
    assert code == 0, err
    assert out.startswith("model logreg (64-10) on digits: 1438 train / 359 validation samples\n")
    assert "optimizer sgd, lr 0.2, batch size 64, 2 epochs, seed 0" in out
    assert re.search(r"^compiled the training step in \d+\.\d+ s$", out, re.MULTILINE)
    epochs = EPOCH_LINE.findall(out)
    assert [e[:2] for e in epochs] == [("1", "2"), ("2", "2")]
    assert float(epochs[1][2]) < float(epochs[0][2])  # the loss goes down
    assert acc > 50.0  # chance is 10%
    assert err == ""  # not a terminal: no progress bar


def test_mlp_on_digits_one_epoch_with_adam(capsys):
    code, out, err, acc = _run(
        capsys, "--model", "mlp", "--epochs", "1", "--optimizer", "adam", "--lr", "0.003"
    )
    assert code == 0, err
    assert "model mlp (64-128-64-10 relu)" in out and "optimizer adam, lr 0.003" in out
    assert len(EPOCH_LINE.findall(out)) == 1
    assert acc > 50.0


def test_mlp_default_command_reaches_95_percent_on_digits(capsys):
    # `python -m minitvm train` with its defaults: --model mlp --data digits
    code, out, err, acc = _run(capsys)
    assert code == 0, err
    assert "model mlp" in out and "20 epochs" in out
    assert acc >= 95.0, out


def test_cnn_on_digits_one_epoch(capsys):
    code, out, err, acc = _run(capsys, "--model", "cnn", "--epochs", "1", "--seed", "1")
    assert code == 0, err
    assert "conv3x3(1->8) -> relu -> maxpool2 -> conv3x3(8->16)" in out
    assert acc > 30.0


def _idx(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def _write_mnist(folder, n_train: int, n_test: int) -> None:
    for prefix, n, seed in (("train", n_train, 0), ("t10k", n_test, 1)):
        x, y = synthetic_mnist(n, seed=seed)
        images = np.round(x * 255).reshape(n, 28, 28)
        (folder / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(images)))
        (folder / f"{prefix}-labels-idx1-ubyte").write_bytes(_idx(y))  # plain, not gzipped


def test_mnist_path_reads_idx_files_and_validates_on_the_test_set(tmp_path, capsys):
    _write_mnist(tmp_path, 300, 100)
    code, out, err, acc = _run(
        capsys, "--model", "logreg", "--data", f"mnist:{tmp_path}", "--epochs", "2",
        "--batch-size", "50",
    )  # fmt: skip
    assert code == 0, err
    assert "model logreg (784-10) on mnist: 300 train / 100 test samples" in out
    assert re.search(r"test acc", out) and FINAL.search(out).group(1) == "test"
    assert acc > 50.0


def test_synthetic_data_with_a_size(capsys):
    code, out, err, acc = _run(
        capsys, "--model", "logreg", "--data", "synthetic:400", "--epochs", "1",
        "--batch-size", "100", "--optimizer", "momentum",
    )  # fmt: skip
    assert code == 0, err
    assert "on synthetic: 400 train / 66 validation samples" in out
    assert acc > 30.0


def test_unknown_model_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--model", "resnet"])
    assert exc.value.code == 2
    assert "invalid choice: 'resnet'" in capsys.readouterr().err


def test_unknown_optimizer_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--optimizer", "rmsprop"])
    assert exc.value.code == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--data", "mnist:"], r"mnist:PATH needs the folder with the four MNIST IDX files"),
        (["--data", "mnist"], r"mnist:PATH needs the folder"),
        (["--data", "imagenet"], r"unknown data set 'imagenet'; use digits, mnist:PATH"),
        (["--data", "digits:5"], r"--data digits takes no argument"),
        (["--data", "synthetic:1"], r"synthetic:N needs N >= 2"),
        (["--data", "synthetic:many"], r"--data 'synthetic:many': invalid literal"),
        (["--epochs", "0"], r"--epochs must be positive, got 0"),
        (["--batch-size", "0"], r"--batch-size must be between 1 and the 1438 training samples"),
        (["--batch-size", "5000"], r"--batch-size must be between 1 and the 1438 training"),
        (["--lr", "-1"], r"--lr must be positive, got -1"),
    ],
)
def test_bad_arguments_give_a_clear_error_and_exit_code_2(capsys, argv, message):
    code = main(["train", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"^error: .*" + message, err), err


def test_missing_mnist_folder_names_the_path(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["train", "--data", f"mnist:{missing}"]) == 2
    err = capsys.readouterr().err
    assert f"'{missing}' does not exist" in err


def test_mnist_folder_without_the_files_says_which_is_missing(tmp_path, capsys):
    assert main(["train", "--data", f"mnist:{tmp_path}"]) == 2
    assert "train-images-idx3-ubyte" in capsys.readouterr().err


def test_diverging_loss_is_reported(capsys):
    code = main(["train", "--model", "mlp", "--epochs", "1", "--lr", "1e6"])
    assert code == 2
    assert re.search(r"the loss became (nan|inf) .* lower --lr", capsys.readouterr().err)


def test_plot_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "curves.png"
    code, out, err, _ = _run(capsys, "--model", "logreg", "--epochs", "2", "--plot", str(path))
    assert code == 0, err
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote loss and accuracy curves to {path}" in out


def test_plot_without_matplotlib_fails_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code = main(["train", "--model", "logreg", "--plot", str(tmp_path / "c.png")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "--plot needs matplotlib, which is not installed; `pip install matplotlib`" in err


def test_demo_trains_the_mlp_then_times_kernels(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    acc = float(re.search(r"validation accuracy (\d+\.\d+)%", out).group(1))
    assert acc >= 95.0
    assert re.search(r"time \d+\.\d+ s \(compile", out)
    assert out.index("training mlp") < out.index("matmul 512x512x512")
