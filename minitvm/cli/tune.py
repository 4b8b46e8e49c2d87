"""`minitvm tune MODEL.onnx --trials N --work-dir DIR [-o model.tar]`: tune a model's kernels."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ._common import SHAPES_SYNTAX, UsageError, example_parser, parse_input_shapes, writable_path

EPILOG = f"""\
examples:
  minitvm tune resnet18.onnx --input-shapes data:1,3,224,224 --trials 200 --work-dir tune_r18
  minitvm tune mlp.onnx --trials 64 --work-dir tune_mlp -o mlp.tar
  minitvm tune resnet18.onnx --minutes 10 --trials-per-iter 16 --work-dir tune_r18
--input-shapes: {SHAPES_SYNTAX}; the tuned kernels need static shapes.
Measurements run in worker processes; a candidate that crashes or hangs is recorded as failed.
The work dir keeps the database (database_*.json: running again continues from it) and the
tuning curve (tuning_curve.json/.csv, and .png with matplotlib). With -o, the model is built
with the tuned kernels into an artifact for `minitvm run` / `minitvm bench`.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = example_parser(
        sub,
        "tune",
        "tune a model's kernels with meta_schedule",
        "Import MODEL.onnx, extract its distinct kernels, tune them within --trials measurements "
        "or --minutes (more trials to the kernels with the most time to win: calls x their "
        "time above the measured FMA peak's), and keep the records in the work dir.",
        EPILOG,
    )
    p.add_argument("model", metavar="MODEL.onnx", help="the ONNX model file")
    p.add_argument(
        "--input-shapes", action="append", metavar="NAME:SHAPE", help="e.g. data:1,3,224,224"
    )
    p.add_argument("--target", default="llvm", help="target (default: llvm)")
    p.add_argument(
        "--trials",
        type=_positive,
        default=None,
        help="measurements in all (default 64; no limit when --minutes is given)",
    )
    p.add_argument(
        "--minutes",
        type=_positive_float,
        default=None,
        help="wall-time budget of the tuning, re-measurement of the best included",
    )
    p.add_argument("--trials-per-iter", type=_positive, default=64, help="batch size (default 64)")
    p.add_argument("--work-dir", required=True, help="folder for the database and the curve")
    p.add_argument(
        "--strategy",
        choices=["evolutionary", "replay-trace"],
        default="evolutionary",
        help="search: cost-model-guided evolution (default) or random replay of the space",
    )
    p.add_argument("--seed", type=int, default=None, help="seed of the search (default: random)")
    p.add_argument("-o", "--output", default=None, help="also write the tuned artifact here")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(run=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from .. import meta_schedule as ms
    from . import _onnx
    from .compile import _describe_inputs, _inputs_of, _target

    shapes = parse_input_shapes(args.input_shapes)
    target = _target(args.target)
    if args.output:
        writable_path(args.output, "-o")
    if os.path.exists(args.work_dir) and not os.path.isdir(args.work_dir):
        raise UsageError(f"--work-dir '{args.work_dir}' is a file; give a folder")
    model = _onnx.load_model(args.model)
    declared = _onnx.graph_inputs(model)
    _onnx.check_shapes(args.model, declared, shapes)
    start = time.perf_counter()
    mod = _onnx.import_model(args.model, model, shapes)
    tasks = ms.relax_integration.extract_tasks(mod, target)
    _log(args, f"imported '{args.model}': {len(tasks)} distinct kernels to tune\n")
    db = ms.relax_integration.tune_relax(
        mod,
        None,
        target,
        args.work_dir,
        args.trials or (10**9 if args.minutes else 64),
        num_trials_per_iter=args.trials_per_iter,
        max_seconds=None if args.minutes is None else args.minutes * 60,
        seed=args.seed,
        strategy=args.strategy,
        verbose=not args.quiet,
    )
    measured = [r for r in db.get_all_tuning_records() if r.run_secs]
    sys.stdout.write(
        f"tuned {len(tasks)} kernels with {len(db)} trials ({len(measured)} ran) in "
        f"{time.perf_counter() - start:.1f} s; records in '{args.work_dir}'\n"
    )
    if args.output:
        from .. import __version__
        from . import artifact
        from ._common import sha256_file

        exe = ms.relax_integration.compile_relax(db, mod, target)
        meta = {
            "minitvm_version": __version__,
            "target": str(target),
            "entry": "main",
            "inputs": _inputs_of(mod, list(declared)),
            "source": {
                "path": os.path.abspath(args.model),
                "format": "onnx",
                "sha256": sha256_file(args.model),
            },
        }
        size = artifact.save(args.output, exe, meta)
        sys.stdout.write(
            f"wrote '{args.output}' ({size / 1e6:.2f} MB); inputs: {_describe_inputs(meta['inputs'])}\n"
        )
    return 0


def _log(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        sys.stderr.write(text)
        sys.stderr.flush()
