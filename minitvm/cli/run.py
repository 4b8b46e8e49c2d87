"""`minitvm run model.tar --input data=image.npy --output out.npy`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from ._common import UsageError, example_parser, model_inputs, parse_inputs, writable_path

EPILOG = """\
examples:
  minitvm run model.tar --input data=image.npy --output out.npy
  minitvm run model.tar --input inputs.npz --output outs.npz    # .npz: arrays by input name
  minitvm run model.tar --random                                 # random inputs, print a summary
Inputs are named as in `minitvm show model.tar` (the ONNX input names work too). Files are read
with numpy.load(allow_pickle=False). Several outputs need an .npz --output (output_0, ...).
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = example_parser(
        sub,
        "run",
        "run a compiled artifact on .npy/.npz inputs",
        "Run the artifact's entry function once and save or summarise its outputs.",
        EPILOG,
    )
    p.add_argument("artifact", metavar="MODEL.tar", help="a file written by `minitvm compile`")
    add_input_options(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write the outputs (.npy or .npz)")
    p.set_defaults(run=run)


def add_input_options(p: argparse.ArgumentParser) -> None:
    """--input / --random / --seed, shared with `bench`."""
    p.add_argument(
        "--input", action="append", metavar="NAME=FILE", help="NAME=FILE.npy, or FILE.npz"
    )
    p.add_argument("--random", action="store_true", help="random data for inputs not given")
    p.add_argument("--seed", type=int, default=0, help="seed of --random (default 0)")


def load_with_inputs(args: argparse.Namespace) -> tuple[Any, list[np.ndarray]]:
    """The artifact and its arguments from --input/--random."""
    from . import artifact

    art = artifact.load(args.artifact)
    names = [i["name"] for i in art.inputs]
    given = parse_inputs(args.input, names)
    return art, model_inputs(art.inputs, given, args.random, args.seed)


def outputs_of(result: Any) -> list[np.ndarray]:
    """A VM result (NDArray or nested tuples of them) as a flat list of numpy arrays."""
    if isinstance(result, tuple | list):
        return [a for r in result for a in outputs_of(r)]
    return [result.numpy() if hasattr(result, "numpy") else np.asarray(result)]


def call(art: Any, args: list[np.ndarray], profile: bool = False) -> tuple[Any, Any]:
    """A VirtualMachine over the artifact and the entry's result on `args`."""
    from .. import relax, runtime

    vm = relax.VirtualMachine(art.exe, runtime.cpu(0), profile=profile)
    return vm, vm[art.meta["entry"]](*args)


def run(args: argparse.Namespace) -> int:
    if args.output and not args.output.endswith((".npy", ".npz")):
        raise UsageError(f"--output '{args.output}': use a .npy (one output) or .npz file name")
    if args.output:
        writable_path(args.output, "--output")
    art, inputs = load_with_inputs(args)
    _, result = call(art, inputs)
    outs = outputs_of(result)
    if args.output:
        _save(args.output, outs)
    for k, o in enumerate(outs):
        summary = f"min {o.min():.6g} max {o.max():.6g} mean {o.mean():.6g}" if o.size else "empty"
        sys.stdout.write(f"output {k}: shape {tuple(o.shape)} {o.dtype}  {summary}\n")
    if args.output:
        sys.stdout.write(f"wrote {len(outs)} output(s) to '{args.output}'\n")
    return 0


def _save(path: str, outs: list[np.ndarray]) -> None:
    """One output to .npy, any number to .npz (output_0, output_1, ...)."""
    if path.endswith(".npy") and len(outs) != 1:
        raise UsageError(f"--output '{path}': the model has {len(outs)} outputs; use an .npz file")
    try:
        with open(path, "wb") as f:
            if path.endswith(".npy"):
                np.save(f, outs[0], allow_pickle=False)
            else:
                np.savez(f, **{f"output_{k}": o for k, o in enumerate(outs)})
    except OSError as err:
        raise UsageError(f"--output '{path}': cannot write it ({err.strerror})") from err
