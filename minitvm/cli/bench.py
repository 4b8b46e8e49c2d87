"""`minitvm bench model.tar [--repeat N] [--profile] [--compare ort]`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

from ..error import MiniTVMError
from . import _stats
from ._common import UsageError, existing_file, sha256_file
from .run import Session, add_input_options, load_with_inputs, outputs_of

_MAX_SOURCE_BYTES = 2**31  # protobuf's limit on one ONNX file

EPILOG = """\
examples:
  minitvm bench model.tar                      # random inputs: mean, median, min, max, p90...
  minitvm bench model.tar --repeat 50 --profile
  minitvm bench model.tar --input data=image.npy --compare ort --source model.onnx
  minitvm bench model.tar --format json         # or csv: statistics for scripts (ms)
  minitvm bench model_cl.tar --device opencl    # an artifact compiled with --target opencl
--compare ort runs the source .onnx given by --source (checked against the sha256 the artifact
recorded; a path read from the artifact is never opened) with ONNX Runtime on the same inputs:
both latencies, the ratio and the largest output difference.
"""


DESCRIPTION = "Time the artifact's entry function; random inputs unless --input gives them."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("artifact", metavar="MODEL.tar", help="a file written by `minitvm compile`")
    add_input_options(p)
    p.add_argument("--repeat", type=int, default=20, help="timed runs (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    p.add_argument("--profile", action="store_true", help="per-op table from the VM's profiler")
    p.add_argument("--compare", choices=["ort"], help="also time ONNX Runtime on the source model")
    p.add_argument(
        "--source",
        metavar="MODEL.onnx",
        help="the model the artifact was compiled from (--compare)",
    )
    _stats.add_format_option(p)
    p.set_defaults(random=True)


def run(args: argparse.Namespace) -> int:
    if args.repeat < 1 or args.warmup < 0:
        raise UsageError(
            f"--repeat must be >= 1 and --warmup >= 0, got {args.repeat}, {args.warmup}"
        )
    if args.profile and args.format == "csv":
        raise UsageError("--profile has no CSV form; use --format json or text with it")
    art, inputs = load_with_inputs(args)
    if args.source is not None and not args.compare:
        raise UsageError("--source is the model for --compare ort; add --compare ort or drop it")
    ort_session = _ort_session(art, args.source) if args.compare else None
    ours = Session(art, args.device, profile=args.profile)
    placed = ours.place(inputs)
    result = ours.call(placed)
    stats = {
        "minitvm": _stats.latency_stats(
            _stats.latencies(lambda: ours.call(placed), args.warmup, args.repeat)
        )
    }
    comparison = None
    if ort_session is not None:
        feed = {i["source_name"]: a for i, a in zip(art.inputs, inputs)}
        expected = ort_session.run(None, feed)
        theirs = _stats.latencies(lambda: ort_session.run(None, feed), args.warmup, args.repeat)
        stats["onnxruntime"] = _stats.latency_stats(theirs)
        diffs = [
            float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(outputs_of(result), expected)
        ]
        comparison = {
            "median_ratio": stats["onnxruntime"]["median"] / stats["minitvm"]["median"],
            "largest_output_difference": max(diffs, default=0.0),
        }
    profile = None
    if args.profile:
        profile = ours.vm.profile(ours.entry, *placed, number=max(1, args.repeat // 4))
    _report(args, art, ours.device.name, stats, comparison, profile)
    return 0


def _report(args, art, device: str, stats: dict, comparison, profile) -> None:
    out = sys.stdout
    if args.format == "json":
        _stats.write_json(
            out,
            {
                "artifact": art.path,
                "device": device,
                "warmup": args.warmup,
                "latency_ms": stats,
                "compare": comparison,
                "profile": None
                if profile is None
                else [{"name": n, "calls": c, "total_ms": s * 1e3} for n, c, s in profile.rows],
            },
        )
        return
    if args.format == "csv":
        rows = [{"engine": name, **_stats.csv_cells(st)} for name, st in stats.items()]
        _stats.write_csv(out, ["engine", *_stats.csv_columns()], rows)
        return
    out.write(_stats.text_table(stats))
    if comparison is not None:
        out.write(
            f"onnxruntime / minitvm median: {comparison['median_ratio']:.2f}x (above 1: minitvm "
            f"is faster); largest output difference "
            f"{comparison['largest_output_difference']:.3g}\n"
        )
    if profile is not None:
        out.write(str(profile) + "\n")


def _ort_session(art: Any, path: str | None) -> Any:
    """An ONNX Runtime session on the source model the user names, checked to be the one the
    artifact was compiled from (sha256). The path recorded in the artifact is shown, never
    opened: a file's contents choose no path to read."""
    try:
        import onnxruntime as ort
    except ImportError as err:
        raise UsageError(
            "--compare ort needs onnxruntime, which is not installed; `pip install onnxruntime`"
        ) from err
    source = art.meta["source"]
    recorded = source.get("path", "")
    if path is None:
        raise UsageError(
            f"--compare ort needs --source MODEL.onnx, the model '{art.path}' was compiled from "
            f"(it records {recorded!r}; paths read from a file are not opened)"
        )
    existing_file(path, "--source model")
    if os.path.getsize(path) > _MAX_SOURCE_BYTES:
        raise UsageError(f"--source '{path}' is larger than an ONNX model can be (2 GiB)")
    if sha256_file(path) != source.get("sha256"):
        raise UsageError(
            f"--compare ort: '{path}' is not the model '{art.path}' was compiled from (sha256 "
            "differs); pass that model, or compile again from this one"
        )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise MiniTVMError(f"--compare ort: onnxruntime cannot load '{path}' ({first})") from err
