"""`minitvm compile MODEL.onnx --input-shapes data:1,3,224,224 -o model.tar`."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from ..instrument import PassInstrument
from . import _records, artifact
from ._common import (
    SHAPES_SYNTAX,
    add_model_arguments,
    parse_input_shapes,
    sha256_file,
    shape_text,
    writable_path,
)
from ._device import compilable_kinds, parse_target

EPILOG = f"""\
examples:
  minitvm compile resnet18.onnx --input-shapes data:1,3,224,224 -o resnet18.tar
  minitvm compile bert.onnx --input-shapes "input_ids:1,128 attention_mask:1,128" -o bert.tar
  minitvm compile mlp.onnx --tuning-records tune_mlp -o mlp.tar     # with `minitvm tune`'s records
  minitvm compile resnet18.onnx --target opencl -o r18_cl.tar       # run with --device opencl
--input-shapes: {SHAPES_SYNTAX}; inputs left out keep the shape the model declares. The first
(batch) dim may be given another size than the model's fixed one.
--tuning-records: the --work-dir of `minitvm tune` (or its database_*.json), or an AutoTVM log;
read as data, never run.
The artifact holds the compiled kernels, the weights and a metadata.json (inputs, source model
and its sha256); run it with `minitvm run`, time it with `minitvm bench`.
torch.export .pt2 files are not read: loading them unpickles, which can run code from the file.
"""


DESCRIPTION = (
    "Import MODEL.onnx, run the graph and lowering pipeline (one progress line per pass), "
    "and write the compiled artifact."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p)
    p.add_argument(
        "--target",
        default="llvm",
        help=f"compilation target: {', '.join(compilable_kinds())} (default: llvm)",
    )
    p.add_argument(
        "--tuning-records",
        metavar="PATH",
        help="tuned schedules to build with: a `minitvm tune` work dir, or an AutoTVM log",
    )
    p.add_argument(
        "--opt-level",
        type=int,
        choices=range(4),
        default=2,
        help="PassContext opt_level (0: no fusion or layout change; default 2)",
    )
    p.add_argument("-o", "--output", default="model.tar", help="artifact path (default: model.tar)")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-pass progress lines")
    p.add_argument(
        "--profile", action="store_true",
        help="print seconds per build stage (graph passes, schedule, lowering, LLVM, compile "
        "cache) and of the slowest kernels",
    )  # fmt: skip


class PassProgress(PassInstrument):
    """Writes one line per top-level pass with its time (nested passes, such as a
    Sequential's, are timed inside their parent)."""

    def __init__(self, write: Callable[[str], Any]) -> None:
        self.write, self.depth, self.count, self.start, self.seconds = write, 0, 0, 0.0, 0.0

    def line(self, name: str, secs: float) -> None:
        self.count += 1
        self.write(f"  [{self.count:>2}] {name:<40} {secs * 1e3:9.1f} ms\n")

    def run_before_pass(self, mod: Any, info: Any) -> None:
        if self.depth == 0:
            self.start = time.perf_counter()
        self.depth += 1

    def run_after_pass(self, mod: Any, info: Any) -> None:
        self.depth -= 1
        if self.depth == 0:
            secs = time.perf_counter() - self.start
            self.seconds += secs
            self.line(info.name, secs)


def _inputs_of(mod: Any, source_names: list[str]) -> list[dict]:
    """Name, source-model name, shape (str for symbolic dims) and dtype of main's parameters."""
    from ..relax.struct_info import TensorStructInfo

    params = mod["main"].params
    names = source_names if len(source_names) == len(params) else [p.name_hint for p in params]
    out = []
    for p, source_name in zip(params, names):
        sinfo = p.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
            shape, dtype = [], str(getattr(sinfo, "dtype", "?"))
        else:
            shape = [d.value if hasattr(d, "value") else str(d) for d in sinfo.shape]
            dtype = str(sinfo.dtype)
        out.append(
            {"name": p.name_hint, "source_name": source_name, "shape": shape, "dtype": dtype}
        )
    return out


def run(args: argparse.Namespace) -> int:
    from .. import relax
    from ..driver.build_profile import profiling
    from ..ir import transform
    from . import _onnx

    shapes = parse_input_shapes(args.input_shapes)
    target = parse_target(args.target)
    writable_path(args.output, "-o")
    records = _records.load(args.tuning_records) if args.tuning_records else None
    model = _onnx.load_model(args.model)
    declared = _onnx.graph_inputs(model)
    _onnx.check_shapes(args.model, declared, shapes)
    log = _quiet if args.quiet else _progress
    start = time.perf_counter()
    mod = _onnx.import_model(args.model, model, shapes)
    log(f"imported '{args.model}' in {time.perf_counter() - start:.2f} s\n")
    progress = PassProgress(log)
    build_start = time.perf_counter()
    with (
        transform.PassContext(opt_level=args.opt_level, instruments=[progress]),
        profiling() if args.profile else contextlib.nullcontext() as prof,
    ):
        if records is None:
            exe = relax.build(mod, target=target)
        else:
            exe, applied = _records.apply_to_build(records, mod, target)
            log(f"tuning records {applied}\n")
    progress.line(
        "code generation (kernels + VM program)",
        time.perf_counter() - build_start - progress.seconds,
    )
    if args.profile:
        sys.stdout.write(prof.report() + "\n")
    line = save_artifact(
        args.output, exe, mod, args.model, list(declared), target, _onnx.graph_outputs(model)
    )
    sys.stdout.write(f"compiled in {time.perf_counter() - start:.2f} s; {line}\n")
    return 0


def save_artifact(
    path: str,
    exe: Any,
    mod: Any,
    model_path: str,
    source_names: list[str],
    target: Any,
    output_names: list[str],
) -> str:
    """Write `exe`, built from `mod` imported from `model_path`, with its metadata (the inputs,
    the outputs' names in the model, the source model's path and sha256); returns the line
    that reports it."""
    from .._version import __version__

    meta = {
        "minitvm_version": __version__,
        "target": str(target),
        "entry": "main",
        "inputs": _inputs_of(mod, source_names),
        "outputs": list(output_names),
        "source": {
            "path": os.path.abspath(model_path),
            "format": "onnx",
            "sha256": sha256_file(model_path),
        },
    }
    size = artifact.save(path, exe, meta)
    return f"wrote '{path}' ({size / 1e6:.2f} MB); inputs: {_describe_inputs(meta['inputs'])}"


def _progress(text: str) -> None:
    """Progress goes to stderr, so stdout holds only the result line."""
    sys.stderr.write(text)
    sys.stderr.flush()


def _quiet(text: str) -> None:
    """--quiet: progress is dropped."""


def _describe_inputs(inputs: list[dict]) -> str:
    return ", ".join(f"{i['name']} {shape_text(i['shape'])} {i['dtype']}" for i in inputs)
