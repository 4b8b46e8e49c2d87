"""`minitvm run model.tar --input data=image.npy --output out.npy`."""

from __future__ import annotations

import argparse
import sys
import zipfile
from typing import Any

import numpy as np

from . import _stats
from ._common import UsageError, model_inputs, parse_inputs, writable_path
from ._device import DEVICES

EPILOG = """\
examples:
  minitvm run model.tar --input data=image.npy --output out.npy
  minitvm run model.tar --input inputs.npz --output outs.npz    # .npz: arrays by input name
  minitvm run model.tar --random                                 # random inputs, print a summary
  minitvm run model.tar --random --repeat 20 --format json       # plus latency statistics
  minitvm run model_cl.tar --random --device opencl              # compiled with --target opencl
Inputs are named as in `minitvm show model.tar` (the ONNX input names work too). Files are read
with numpy.load(allow_pickle=False). Several outputs need an .npz --output, where each output
has its name in the ONNX model (output_0, output_1, ... when the model names none).
"""


DESCRIPTION = "Run the artifact's entry function once and save or summarise its outputs."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("artifact", metavar="MODEL.tar", help="a file written by `minitvm compile`")
    add_input_options(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write the outputs (.npy or .npz)")
    p.add_argument(
        "--repeat", type=int, default=1, help="time this many runs after the first (default 1)"
    )
    p.add_argument("--print-time", action="store_true", help="print latency statistics")
    _stats.add_format_option(p)


def add_input_options(p: argparse.ArgumentParser) -> None:
    """--input / --random / --seed / --device, shared with `bench`."""
    p.add_argument(
        "--input", action="append", metavar="NAME=FILE", help="NAME=FILE.npy, or FILE.npz"
    )
    p.add_argument("--random", action="store_true", help="random data for inputs not given")
    p.add_argument("--seed", type=int, default=0, help="seed of --random (default 0)")
    p.add_argument(
        "--device",
        choices=DEVICES,
        default=None,
        help="where to run (default: the device of the artifact's --target)",
    )


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


def output_names(art: Any, count: int) -> list[str]:
    """The outputs' names in the source model, or output_0, output_1, ... when it named none
    (or a different number of them)."""
    names = art.output_names
    return names if len(names) == count else [f"output_{k}" for k in range(count)]


class Session:
    """A VirtualMachine over the artifact on the --device, and a timed call of its entry."""

    def __init__(self, art: Any, device_name: str | None, profile: bool = False) -> None:
        from .. import relax
        from ._device import open_device

        self.device = open_device(art, device_name)
        self.vm = relax.VirtualMachine(art.exe, self.device, profile=profile)
        self.entry = art.meta["entry"]
        self.fn = self.vm[self.entry]

    def place(self, args: list[np.ndarray]) -> list[Any]:
        """The arguments in the device's memory (copied once, not on every timed call)."""
        if not self.device.is_gpu:
            return args
        from ..runtime import ndarray

        return [ndarray.array(a, self.device) for a in args]

    def call(self, args: list[Any]) -> Any:
        """The entry's result, finished on the device (so a timing of it is the real one)."""
        result = self.fn(*args)
        if self.device.is_gpu:
            self.device.sync()
        return result


def run(args: argparse.Namespace) -> int:
    if args.output and not args.output.endswith((".npy", ".npz")):
        raise UsageError(f"--output '{args.output}': use a .npy (one output) or .npz file name")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be >= 1, got {args.repeat}")
    if args.output:
        writable_path(args.output, "--output")
    art, inputs = load_with_inputs(args)
    session = Session(art, args.device)
    placed = session.place(inputs)
    outs = outputs_of(session.call(placed))
    names = output_names(art, len(outs))
    timing = None
    if args.print_time or args.repeat > 1:
        timing = _stats.latency_stats(
            _stats.latencies(lambda: session.call(placed), 0, args.repeat)
        )
    if args.output:
        _save(args.output, dict(zip(names, outs)))
    _report(args, art, names, outs, timing, session.device.name)
    return 0


def _summary(name: str, o: np.ndarray) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "shape": list(o.shape), "dtype": str(o.dtype)}
    if o.size and o.dtype.kind in "biuf":
        row.update(min=float(o.min()), max=float(o.max()), mean=float(o.mean()))
    return row


def _report(args, art, names, outs, timing, device: str) -> None:
    """The outputs' summaries (and latency statistics) in the --format asked for."""
    out = sys.stdout
    rows = [_summary(n, o) for n, o in zip(names, outs)]
    if args.format == "json":
        _stats.write_json(
            out,
            {
                "artifact": art.path,
                "device": device,
                "outputs": rows,
                "latency_ms": timing,
                "saved_to": args.output,
            },
        )
        return
    if args.format == "csv":
        columns = ["kind", "name", "shape", "dtype", "min", "max", "mean", *_stats.csv_columns()]
        table = [{"kind": "output", **r, "shape": "x".join(map(str, r["shape"]))} for r in rows]
        if timing is not None:
            table.append({"kind": "latency", "name": "minitvm", **_stats.csv_cells(timing)})
        _stats.write_csv(out, columns, table)
        return
    named = bool(art.output_names) and names == art.output_names
    for k, (r, o) in enumerate(zip(rows, outs)):
        label = f"'{r['name']}'" if named else str(k)
        summary = (
            f"min {r['min']:.6g} max {r['max']:.6g} mean {r['mean']:.6g}" if "min" in r else ""
        )
        out.write(f"output {label}: shape {tuple(o.shape)} {o.dtype}  {summary or 'empty'}\n")
    if timing is not None:
        out.write(_stats.text_table({"minitvm": timing}))
    if args.output:
        out.write(f"wrote {len(outs)} output(s) to '{args.output}'\n")


def _save(path: str, outs: dict[str, np.ndarray]) -> None:
    """One output to .npy, any number to .npz, each under its name."""
    if path.endswith(".npy") and len(outs) != 1:
        raise UsageError(f"--output '{path}': the model has {len(outs)} outputs; use an .npz file")
    try:
        if path.endswith(".npy"):
            with open(path, "wb") as f:
                np.save(f, next(iter(outs.values())), allow_pickle=False)
            return
        # written member by member (np.savez takes names as keyword arguments: an output
        # named 'file' would clash with its parameter)
        with zipfile.ZipFile(path, "w") as zf:
            for name, a in outs.items():
                with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, np.asanyarray(a), allow_pickle=False)
    except OSError as err:
        raise UsageError(f"--output '{path}': cannot write it ({err.strerror})") from err
