"""`minitvm train --model mlp --data digits`: the verb over minitvm/training (the library)."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ..error import MiniTVMError
from ._common import UsageError

EPILOG = """\
examples:
  python -m minitvm train --model mlp --data digits            # bundled 8x8 digits, >= 95%
  python -m minitvm train --model logreg --data mnist:~/mnist --epochs 10 --batch-size 100 --lr 0.5
  python -m minitvm train --model mlp --data mnist:~/mnist --epochs 20 --batch-size 100 --lr 0.1
  python -m minitvm train --model cnn --data synthetic:2000 --epochs 2 --plot curves.png
  python -m minitvm train --model mlp --epochs 5 --save run.npz      # checkpoint after each epoch
  python -m minitvm train --model mlp --epochs 10 --save run.npz --resume   # go on to epoch 10
mnist:PATH is a folder holding train-images-idx3-ubyte(.gz) and the other three IDX files.
"""


DESCRIPTION = "Train logreg / mlp / cnn; one compiled relax function per training step."


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..training import MODELS, OPTIMIZERS

    p.add_argument("--model", choices=list(MODELS), default="mlp")
    p.add_argument("--data", default="digits", help="digits | mnist:PATH | synthetic[:N]")
    p.add_argument("--epochs", type=int, help="default depends on model and data")
    p.add_argument("--batch-size", type=int, help="default depends on model and data")
    p.add_argument("--lr", type=float, help="learning rate; default depends on model and data")
    p.add_argument("--optimizer", choices=list(OPTIMIZERS), help="default: sgd (cnn: momentum)")
    p.add_argument("--seed", type=int, default=0, help="weight init, split and shuffling seed")
    p.add_argument("--plot", metavar="PNG", help="write loss/accuracy curves (needs matplotlib)")
    p.add_argument(
        "--save",
        metavar="PATH",
        help="checkpoint (params + optimizer state) after each epoch: .npz, or .safetensors",
    )
    p.add_argument(
        "--resume",
        nargs="?",
        const=True,
        metavar="PATH",
        help="continue from a checkpoint (default: the --save PATH) with the same options",
    )


def run(args: argparse.Namespace) -> int:
    from .. import training as tr

    try:
        return _train(tr, args)
    except MiniTVMError as err:
        # train reads no model file: its errors (data path, data files, hyper-parameters, a
        # diverging loss) are all fixed by changing the command line, so they exit with 2
        raise UsageError(str(err)) from err


def _train(tr, args: argparse.Namespace) -> int:
    if args.plot:
        tr._import_pyplot()  # fail before training, not after
    data_name = args.data.partition(":")[0]
    default = tr.default_config(args.model, data_name)
    given = {"epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr,
             "optimizer": args.optimizer, "seed": args.seed}  # fmt: skip
    config = dataclasses.replace(default, **{k: v for k, v in given.items() if v is not None})
    epochs, batch, lr, optimizer = config.epochs, config.batch_size, config.lr, config.optimizer
    resume = _resume_path(args)
    data = tr.load_dataset(args.data, seed=args.seed)
    layers = tr.build_model(args.model, data.image_shape, data.num_classes)
    out = sys.stdout
    out.write(
        f"model {args.model} ({tr.describe_model(layers)}) on {data.name}: "
        f"{len(data.x_train)} train / {len(data.x_val)} {data.val_name} samples\n"
        f"optimizer {optimizer}, lr {lr:g}, batch size {batch}, {epochs} epochs, seed {args.seed}\n"
    )
    out.flush()

    def on_compiled(program: tr.TrainingProgram) -> None:
        out.write(f"compiled the training step in {program.compile_seconds:.2f} s\n")
        if resume is not None:
            out.write(f"resuming from the checkpoint {resume}\n")
        out.flush()

    def on_epoch(stats: tr.EpochStats) -> None:
        out.write(stats.line(epochs, data.val_name) + "\n")
        out.flush()

    result = tr.train(
        layers, data, config, on_epoch=on_epoch, on_compiled=on_compiled,
        checkpoint=args.save, resume=resume,
    )  # fmt: skip
    total = sum(s.seconds for s in result.history)
    out.write(
        f"final {data.val_name} accuracy {100 * result.val_acc:.2f}% "
        f"({epochs} epochs in {total:.2f} s, compile {result.program.compile_seconds:.2f} s)\n"
    )
    if args.save:
        out.write(f"saved the checkpoint to {args.save}\n")
    if args.plot:
        path = tr.plot_curves(result.history, args.plot, f"{args.model} on {data.name}")
        out.write(f"wrote loss and accuracy curves to {path}\n")
    return 0


def _resume_path(args: argparse.Namespace) -> str | None:
    if args.resume is None:
        return None
    if args.resume is True:
        if not args.save:
            raise UsageError(
                "--resume without a PATH resumes from the --save PATH; give one of them"
            )
        return args.save
    return args.resume
