"""`minitvm tune MODEL.onnx --trials N --work-dir DIR [-o model.tar]`: tune a model's kernels."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from ..meta_schedule._progress import NO_TRIAL_LIMIT
from . import _records
from ._common import (
    SHAPES_SYNTAX,
    UsageError,
    add_model_arguments,
    parse_input_shapes,
    writable_path,
)
from ._device import parse_target
from ._tune_report import (
    TrialCounter,
    kernel_table,
    no_kernels_error,
    time_budget,
    timed_default_build,
)

EPILOG = f"""\
examples:
  minitvm tune resnet18.onnx --input-shapes data:1,3,224,224 --trials 200 --work-dir tune_r18
  minitvm tune mlp.onnx --trials 64 --work-dir tune_mlp -o mlp.tar
  minitvm tune resnet18.onnx --minutes 10 --trials-per-iter 16 --work-dir tune_r18
  minitvm tune mlp.onnx --trials 0 --work-dir tune_mlp -o mlp.tar   # build from earlier records
--input-shapes: {SHAPES_SYNTAX}; the tuned kernels need static shapes (fix a
dynamic batch here).
--minutes bounds the whole command (import, tuning, re-measurement, the check of the picks in
the model and the -o build), within about 10%.
Measurements run in worker processes; a candidate that crashes or hangs is recorded as failed.
The work dir keeps the database (database_*.json: running again continues from it) and the
tuning curve (tuning_curve.json/.csv, and .png with matplotlib). With -o, the model is built
with the tuned kernels into an artifact for `minitvm run` / `minitvm bench`; `minitvm compile
--tuning-records WORK_DIR` does the same later.
"""


DESCRIPTION = (
    "Import MODEL.onnx, extract its distinct kernels, tune them within --trials measurements "
    "or --minutes (more trials to the kernels with the most time to win: calls x their "
    "time above the measured FMA peak's), and keep the records in the work dir."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p)
    p.add_argument("--target", default="llvm", help="target (default: llvm)")
    p.add_argument(
        "--trials",
        type=_non_negative,
        default=None,
        help="measurements in all (default 64; no limit when --minutes is given; 0: measure "
        "nothing, reuse the records already in --work-dir)",
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


def _checked_number(
    convert: Callable[[str], float], ok: Callable[[float], bool], expected: str
) -> Callable[[str], float]:
    """An argparse type: `convert(text)`, refused with "expected <expected>" unless `ok`."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_non_negative = _checked_number(int, lambda v: v >= 0, "0 or a positive integer")
_positive = _checked_number(int, lambda v: v >= 1, "a positive integer")
_positive_float = _checked_number(float, lambda v: v > 0, "a positive number")


def run(args: argparse.Namespace) -> int:
    from .. import meta_schedule as ms
    from . import _onnx
    from .compile import save_artifact

    start = time.perf_counter()
    shapes = parse_input_shapes(args.input_shapes)
    target = parse_target(args.target)
    if args.output:
        writable_path(args.output, "-o")
    if os.path.exists(args.work_dir) and not os.path.isdir(args.work_dir):
        raise UsageError(f"--work-dir '{args.work_dir}' is a file; give a folder")
    earlier = _earlier_records(args.work_dir)
    model = _onnx.load_model(args.model)
    declared = _onnx.graph_inputs(model)
    _onnx.check_shapes(args.model, declared, shapes)
    mod = _onnx.import_model(args.model, model, shapes)
    tasks = ms.relax_integration.extract_tasks(mod, target)
    if not tasks:
        raise no_kernels_error(args.model, declared, shapes)
    _log(args, f"imported '{args.model}': {len(tasks)} distinct kernels to tune\n")
    counter = TrialCounter(len(tasks))
    if args.trials == 0:
        if earlier is None or len(earlier) == 0:
            raise UsageError(
                f"--trials 0 builds from the records already in --work-dir '{args.work_dir}', "
                "and it has none; tune with --trials N (or --minutes M) first"
            )
        db = earlier
    else:
        max_seconds = None
        if args.minutes is not None:
            build_secs = timed_default_build(mod, target)
            max_seconds = time_budget(
                start, args.minutes * 60, build_secs, bool(args.output), len(tasks)
            )
            _log(args, f"tuning for {max_seconds:.0f} s of the {args.minutes * 60:.0f} s budget\n")
        db = ms.relax_integration.tune_relax(
            mod,
            None,
            target,
            args.work_dir,
            args.trials or (NO_TRIAL_LIMIT if args.minutes else 64),
            num_trials_per_iter=args.trials_per_iter,
            max_seconds=max_seconds,
            seed=args.seed,
            strategy=args.strategy,
            verbose=not args.quiet,
            measure_callbacks=[counter],
        )
    sys.stdout.write(kernel_table(tasks, db, target, counter))
    touched = sum(1 for n in counter.trials if n > 0)
    done = (
        f"tuned {touched} of {len(tasks)} kernels with {sum(counter.trials)} trials "
        f"({sum(counter.ran)} ran)"
        if args.trials != 0
        else f"measured nothing (--trials 0); reused the {len(db)} records"
    )
    sys.stdout.write(
        f"{done} in {time.perf_counter() - start:.1f} s; records in '{args.work_dir}'\n"
    )
    if args.output:
        exe = ms.relax_integration.compile_relax(db, mod, target)
        line = save_artifact(
            args.output, exe, mod, args.model, list(declared), target, _onnx.graph_outputs(model)
        )
        sys.stdout.write(line + "\n")
    _log(args, f"done in {time.perf_counter() - start:.1f} s\n")
    return 0


def _earlier_records(work_dir: str) -> Any:
    """The database already in the work dir (checked: a damaged one is named now, before the
    tuning), or None."""
    files = [os.path.join(work_dir, n) for n in (_records.WORKLOADS, _records.RECORDS)]
    if not all(os.path.isfile(f) for f in files):
        return None
    return _records.load(work_dir, "--work-dir").database


def _log(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        sys.stderr.write(text)
        sys.stderr.flush()
