"""One MNIST-shaped training epoch: minitvm vs hand-written numpy vs PyTorch eager, same run.

60 000 samples of `synthetic_mnist`, batch 1000, 784-256-100-10 with relu (and logistic
regression 784-10), mean softmax cross-entropy, plain SGD, all from the same initial weights.
minitvm runs one compiled relax function per step (forward + backward + update) on the VM; its
compile time is reported too. The three epochs are run in turn `--repeat` times (the machine is
shared) and the best and median times are reported.

    python benchmarks/mlp_train.py                  # full epoch, both models
    python benchmarks/mlp_train.py --samples 6000   # quicker
    python benchmarks/mlp_train.py --profile        # plus the VM's per-kernel profile of a step
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from minitvm import train as tr
from minitvm.testing.datasets import synthetic_mnist

LR = 0.1
EYE = np.eye(10, dtype=np.float32)


def _batches(x: np.ndarray, y: np.ndarray, batch: int):
    for start in range(0, len(x) - len(x) % batch, batch):
        yield x[start : start + batch], y[start : start + batch]


def setup_minitvm(layers, x, y, batch):
    """(epoch function, compile seconds, program): the step is compiled here, once."""
    program = tr.TrainingProgram(layers, (784,), batch, "sgd", LR)
    program.step(x[:batch], EYE[y[:batch]], tr.init_params(layers, 0), [])  # warm-up

    def epoch() -> float:
        params, states = tr.init_params(layers, 0), program.initial_states()
        for xb, yb in _batches(x, y, batch):
            loss, _, params, states = program.step(xb, EYE[yb], params, states)
        return loss

    return epoch, program.compile_seconds, program


def setup_numpy(layers, x, y, batch):
    """Forward and backward written by hand, float32, the same math as the compiled step."""

    def epoch() -> float:
        params = tr.init_params(layers, 0)
        ws, bs = params[0::2], params[1::2]
        n = len(ws)
        for xb, yb in _batches(x, y, batch):
            onehot = EYE[yb]
            acts = [xb]
            for i in range(n):
                z = acts[-1] @ ws[i] + bs[i]
                acts.append(np.maximum(z, 0) if i < n - 1 else z)
            shifted = acts[-1] - acts[-1].max(axis=1, keepdims=True)
            e = np.exp(shifted)
            total = e.sum(axis=1, keepdims=True)
            loss = -np.sum(onehot * (shifted - np.log(total))) / batch
            g = (e / total - onehot) / np.float32(batch)
            for i in reversed(range(n)):
                gw, gb = acts[i].T @ g, g.sum(axis=0)
                if i > 0:
                    g = (g @ ws[i].T) * (acts[i] > 0)
                ws[i] -= np.float32(LR) * gw
                bs[i] -= np.float32(LR) * gb
        return float(loss)

    return epoch


def setup_torch(layers, x, y, batch):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def epoch() -> float:
        params = [torch.tensor(p, requires_grad=True) for p in tr.init_params(layers, 0)]
        ws, bs = params[0::2], params[1::2]
        for s in range(0, len(x) - len(x) % batch, batch):
            h = xt[s : s + batch]
            for i in range(len(ws)):
                h = h @ ws[i] + bs[i]
                if i < len(ws) - 1:
                    h = torch.relu(h)
            loss = torch.nn.functional.cross_entropy(h, yt[s : s + batch])
            for p in params:
                p.grad = None
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p -= LR * p.grad
        return loss.item()

    return epoch


def _timed(fn: Callable[[], float]) -> tuple[float, float]:
    start = time.perf_counter()
    loss = fn()
    return time.perf_counter() - start, loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="epochs per framework, in turn")
    parser.add_argument("--profile", action="store_true", help="print vm.profile of one step")
    args = parser.parse_args()
    x, y = synthetic_mnist(args.samples, seed=0)
    models = {
        "mlp 784-256-100-10 relu": (
            tr.Dense(784, 256), tr.Relu(), tr.Dense(256, 100), tr.Relu(), tr.Dense(100, 10),
        ),
        "logreg 784-10": (tr.Dense(784, 10),),
    }  # fmt: skip
    print(
        f"one epoch: {args.samples} samples, batch {args.batch}, SGD lr {LR}; "
        f"best (median) of {args.repeat}"
    )
    for name, layers in models.items():
        ours, compile_s, program = setup_minitvm(layers, x, y, args.batch)
        runs = {"minitvm": ours, "numpy": setup_numpy(layers, x, y, args.batch)}
        torch_epoch = setup_torch(layers, x, y, args.batch)
        if torch_epoch is not None:
            runs["torch"] = torch_epoch
        times: dict[str, list[float]] = {k: [] for k in runs}
        losses: dict[str, float] = {}
        for _ in range(args.repeat):
            for k, fn in runs.items():
                t, losses[k] = _timed(fn)
                times[k].append(t)
        best = {k: min(v) for k, v in times.items()}
        lines = [f"{name}   (minitvm training graph: relax.build {compile_s:.2f} s)"]
        for k in runs:
            extra = "   (eager, 2 threads)" if k == "torch" else ""
            lines.append(
                f"  {k:<8} epoch {best[k]:7.3f} s ({statistics.median(times[k]):7.3f} s)  "
                f"final loss {losses[k]:.4f}{extra}"
            )
        ratios = [f"minitvm/{k} {best['minitvm'] / best[k]:.2f}" for k in runs if k != "minitvm"]
        lines.append("  ratio " + "   ".join(ratios) + ("" if "torch" in runs else "   (no torch)"))
        if args.profile:
            xb, ob = x[: args.batch], EYE[y[: args.batch]]
            params = tr.init_params(layers, 0)
            lines.append(str(program.vm.profile("train_step", xb, ob, *params, number=3)))
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
