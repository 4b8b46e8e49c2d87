"""Training through relax.training vs PyTorch, same run and thread count, plus data-parallel
scaling over torch.distributed (gloo).

1. One MLP epoch on digits-like synthetic data (1440 samples of 8x8 = 64 features, 10 classes,
   batch 32, 64-128-64-10 relu, SGD lr 0.1).
2. One training step of a small CNN (conv3x3 8 - relu - maxpool - conv3x3 16 - relu - maxpool -
   linear, 1x28x28 inputs, batch 32, SGD).
3. `--resnet18`: torchvision-style ResNet-18 (BatchNorm in train mode), 3x32x32, batch 32, SGD
   momentum, through minitvm.training.TorchTrainer: seconds per step vs torch eager, and how far
   the first `--resnet18-steps` losses are from torch's (beside torch against itself with the
   weights scaled by 1 + 1e-6 noise: this network is chaotic under float32 rounding).
4. Data parallel: samples/s of an MNIST-shaped MLP (784-256-100-10, 64 samples per process per
   step) with 1 process x 1 thread (plain Trainer.update) vs 2 processes x 1 thread
   (DataParallel.step: gradients, one gloo all-reduce, update).

Both frameworks train the same torch module: minitvm imports its forward with
`from_exported_program(keep_params_as_input=True)` and builds the step with SetupTrainer.
PyTorch runs eager, and torch.compile'd when a C++ compiler is on PATH. Times are the minimum
over `--repeat` runs; ratios above 1 mean minitvm is faster.

    python benchmarks/train.py                     # 1 thread each, 3 repeats
    python benchmarks/train.py --threads 2 --no-compile --no-dp
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CLASSES, LR = 10, 0.1


def torch_mlp(sizes):
    from torch import nn

    layers = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def torch_cnn():
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, CLASSES),
    )  # fmt: skip


def relax_trainer(model, example):
    """A relax.training Trainer for `model` (its forward imported from torch.export) with
    CrossEntropyLoss and SGD(LR), starting from the module's own weights."""
    import torch

    import minitvm as tvm
    from minitvm import relax
    from minitvm.ir import IRModule
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.relax.training import SetupTrainer, Trainer
    from minitvm.relax.training.loss import CrossEntropyLoss
    from minitvm.relax.training.optimizer import SGD

    ep = torch.export.export(model, (torch.from_numpy(example),))
    main = from_exported_program(ep, keep_params_as_input=True, unwrap_unit_return_tuple=True)[
        "main"
    ]
    values = main.attrs["params"]
    backbone = IRModule({"backbone": main.with_attr("global_symbol", "backbone")})
    backbone = backbone.with_attr("param_num", len(values)).with_attr("state_num", 0)
    batch = example.shape[0]
    loss_args = [
        relax.TensorStructInfo((batch, CLASSES), "float32"),
        relax.TensorStructInfo((batch,), "int64"),
    ]
    train_mod = SetupTrainer(CrossEntropyLoss(), SGD(LR), loss_args)(backbone)
    vm = relax.VirtualMachine(relax.build(train_mod, "llvm"), tvm.cpu())
    trainer = Trainer(train_mod, vm, tvm.cpu())
    trainer.load_params([v.numpy() for v in values])
    return trainer


def torch_step_fn(model, compiled: bool):
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.functional.cross_entropy

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return torch.compile(step) if compiled else step


def best_of(fn, repeat: int) -> float:
    fn()  # warm-up (first-call allocation, torch.compile's compilation)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def compare(name, make_model, x, y, batch, repeat, use_compile, steps=None):
    """Rows for one workload: seconds per epoch (steps=None) or per step, each framework."""
    import torch

    torch.manual_seed(0)
    model = make_model()
    t0 = time.perf_counter()
    trainer = relax_trainer(model, x[:batch])
    build_s = time.perf_counter() - t0
    nsteps = len(x) // batch if steps is None else steps
    xb = [x[(k % (len(x) // batch)) * batch :][:batch] for k in range(nsteps)]
    yb = [y[(k % (len(x) // batch)) * batch :][:batch] for k in range(nsteps)]
    txb, tyb = [torch.from_numpy(a) for a in xb], [torch.from_numpy(a) for a in yb]

    def ours():
        for a, b in zip(xb, yb):
            trainer.update([a], [b])

    def theirs(step):
        def run():
            for a, b in zip(txb, tyb):
                step(a, b)

        return run

    rows = {"minitvm": best_of(ours, repeat)}
    rows["torch eager"] = best_of(theirs(torch_step_fn(make_model(), False)), repeat)
    if use_compile:
        try:
            rows["torch.compile"] = best_of(theirs(torch_step_fn(make_model(), True)), repeat)
        except Exception as err:  # noqa: BLE001 (report why torch.compile is missing, go on)
            print(f"  torch.compile failed: {type(err).__name__}: {str(err)[:200]}")
    unit = "epoch" if steps is None else "step"
    print(f"\n{name}: seconds per {unit} (min of {repeat}); minitvm build {build_s:.1f} s")
    for k, v in rows.items():
        per = v if steps is None else v / nsteps
        ratio = "" if k == "minitvm" else f"   {k} / minitvm = {v / rows['minitvm']:.2f}"
        print(f"  {k:14s} {per * 1e3:9.2f} ms{ratio}")
    return rows


# ------------------------------------------------------------------ ResNet-18, train mode
def torch_resnet18(classes: int = CLASSES):
    """torchvision's ResNet-18 layout, trainable (minitvm.testing.torch_reference)."""
    from minitvm.testing.torch_reference import resnet18

    return resnet18(classes)


def resnet18_case(steps: int, repeat: int, batch: int = 32, lr: float = 0.01) -> None:
    import torch

    from minitvm.testing.torch_reference import train_steps
    from minitvm.training import TorchTrainer

    rng = np.random.default_rng(0)
    xs = torch.from_numpy(rng.standard_normal((steps, batch, 3, 32, 32)).astype("float32"))
    ys = torch.from_numpy(rng.integers(0, CLASSES, (steps, batch)).astype("int64"))
    loss_fn = torch.nn.CrossEntropyLoss()

    def torch_run(model):
        make_opt = lambda ps: torch.optim.SGD(ps, lr=lr, momentum=0.9)
        return train_steps(model, zip(xs, ys), make_opt, loss_fn)

    t0 = time.perf_counter()
    trainer = TorchTrainer(
        torch_resnet18(), (xs[0], ys[0]), loss_fn, ("sgd", {"lr": lr, "momentum": 0.9})
    )
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = [trainer.step(x, y) for x, y in zip(xs, ys)]
    ours_s = (time.perf_counter() - t0) / steps
    theirs_s = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        theirs = torch_run(torch_resnet18())
        theirs_s = min(theirs_s, (time.perf_counter() - t0) / steps)
    noisy = torch_resnet18()
    with torch.no_grad():
        for p in noisy.parameters():
            p.mul_(1 + 1e-6 * torch.randn_like(p))
    self_diff = np.abs(np.array(torch_run(noisy)) / np.array(theirs) - 1)
    diff = np.abs(np.array(ours) / np.array(theirs) - 1)
    print(
        f"\nResNet-18 train mode (BatchNorm), 3x32x32, batch {batch}, SGD momentum, {steps} steps"
    )
    print(f"  minitvm build {build_s:.1f} s")
    print(f"  minitvm        {ours_s * 1e3:9.1f} ms/step")
    print(
        f"  torch eager    {theirs_s * 1e3:9.1f} ms/step   torch eager / minitvm = {theirs_s / ours_s:.2f}"
    )
    print("  loss rel. diff vs torch, per step:         " + " ".join(f"{d:.0e}" for d in diff))
    print(
        "  torch vs torch(weights * (1 + 1e-6 noise)): " + " ".join(f"{d:.0e}" for d in self_diff)
    )


# ------------------------------------------------------------------ data parallel
DP_SIZES, DP_BATCH = (784, 256, 100, 10), 64


def dp_worker(out: str, steps: int, repeat: int) -> None:
    """One process of the scaling run (started by `launch`): times `steps` steps `repeat` times."""
    import torch

    from minitvm.training.distributed import DataParallel

    torch.set_num_threads(1)
    world = int(os.environ["WORLD_SIZE"])
    rank = int(os.environ["RANK"])
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((steps, DP_BATCH, DP_SIZES[0])).astype("float32")
    y = rng.integers(0, CLASSES, (steps, DP_BATCH)).astype("int64")
    torch.manual_seed(0)
    trainer = relax_trainer(torch_mlp(DP_SIZES), x[0])
    if world == 1:  # the baseline: no all-reduce at all

        def step(a, b):
            trainer.update([a], [b])

        sync = lambda: None
    else:
        dp = DataParallel(trainer)
        step, sync = dp.step, dp.barrier
    for k in range(3):
        step(x[k], y[k])
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        for k in range(steps):
            step(x[k], y[k])
        sync()
        times.append(time.perf_counter() - start)
    if rank == 0:
        samples = steps * DP_BATCH * world
        Path(out).write_text(json.dumps({"seconds": min(times), "samples": samples}))


def dp_scaling(steps: int, repeat: int, rounds: int) -> float:
    from minitvm.training.distributed import is_available, launch

    if not is_available("gloo"):
        print("\ndata parallel: skipped, torch.distributed with gloo is unavailable")
        return 0.0
    # the machine is shared: alternate the two configurations `rounds` times, keep each's best
    rates = {1: 0.0, 2: 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for nproc in (1, 2):
                out = os.path.join(tmp, f"dp{nproc}.json")
                argv = [__file__, "--dp-worker", out, "--dp-steps", str(steps)]
                launch([*argv, "--repeat", str(repeat)], nproc, num_threads=1, timeout_s=600)
                res = json.loads(Path(out).read_text())
                rates[nproc] = max(rates[nproc], res["samples"] / res["seconds"])
    speedup = rates[2] / rates[1]
    print(
        f"\ndata parallel, MLP {'-'.join(map(str, DP_SIZES))}, {DP_BATCH} samples per process "
        f"per step, {steps} steps, best of {repeat} x {rounds} rounds:\n"
        f"  1 process  x 1 thread  {rates[1]:9.0f} samples/s\n"
        f"  2 processes x 1 thread {rates[2]:9.0f} samples/s   speed-up {speedup:.2f}x "
        "(target >= 1.7x)"
    )
    return speedup


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--no-dp", action="store_true", help="skip the data-parallel scaling run")
    p.add_argument("--dp-only", action="store_true", help="only the data-parallel scaling run")
    p.add_argument("--dp-steps", type=int, default=30)
    p.add_argument("--dp-rounds", type=int, default=2, help="alternations of 1 and 2 processes")
    p.add_argument("--dp-worker", metavar="OUT", help=argparse.SUPPRESS)
    p.add_argument("--resnet18", action="store_true", help="only the ResNet-18 train-mode case")
    p.add_argument("--resnet18-steps", type=int, default=20)
    args = p.parse_args()
    if args.dp_worker:
        return dp_worker(args.dp_worker, args.dp_steps, args.repeat)

    sys.path.insert(0, str(Path(__file__).parent))
    from _common import machine_lines, set_threads

    threads = set_threads(args.threads)
    print("\n".join(machine_lines(threads)))
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    use_compile = not args.no_compile and compiler is not None
    print(f"C++ compiler: {compiler or 'none: torch.compile skipped'}")

    if args.dp_only:
        dp_scaling(args.dp_steps, args.repeat, args.dp_rounds)
        return None
    if args.resnet18:
        resnet18_case(args.resnet18_steps, args.repeat)
        return None
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((CLASSES, 64)).astype("float32")
    y = rng.integers(0, CLASSES, 1440).astype("int64")
    x = (centers[y] + 0.7 * rng.standard_normal((1440, 64))).astype("float32")
    compare("MLP 64-128-64-10, one epoch (1440 samples, batch 32)",
            lambda: torch_mlp((64, 128, 64, 10)), x, y, 32, args.repeat, use_compile)  # fmt: skip
    xi = rng.standard_normal((320, 1, 28, 28)).astype("float32")
    yi = rng.integers(0, CLASSES, 320).astype("int64")
    compare("small CNN, 1x28x28, batch 32", torch_cnn, xi, yi, 32, args.repeat, use_compile,
            steps=10)  # fmt: skip
    print("load average (1, 5, 15 min) now: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if not args.no_dp:
        dp_scaling(args.dp_steps, args.repeat, args.dp_rounds)


if __name__ == "__main__":
    main()
