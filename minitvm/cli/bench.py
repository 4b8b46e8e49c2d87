"""`minitvm bench model.tar [--repeat N] [--profile] [--compare ort]`."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from ..error import MiniTVMError
from ._common import UsageError, example_parser, sha256_file
from .run import add_input_options, call, load_with_inputs, outputs_of

EPILOG = """\
examples:
  minitvm bench model.tar                      # random inputs, latency min / median
  minitvm bench model.tar --repeat 50 --profile
  minitvm bench model.tar --input data=image.npy --compare ort
--compare ort runs the source .onnx recorded in the artifact (path and sha256) with ONNX
Runtime on the same inputs: both latencies, the ratio and the largest output difference.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = example_parser(
        sub,
        "bench",
        "time a compiled artifact (and ONNX Runtime with --compare ort)",
        "Time the artifact's entry function; random inputs unless --input gives them.",
        EPILOG,
    )
    p.add_argument("artifact", metavar="MODEL.tar", help="a file written by `minitvm compile`")
    add_input_options(p)
    p.add_argument("--repeat", type=int, default=20, help="timed runs (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    p.add_argument("--profile", action="store_true", help="per-op table from the VM's profiler")
    p.add_argument("--compare", choices=["ort"], help="also time ONNX Runtime on the source model")
    p.set_defaults(run=run, random=True)


def _latencies(fn: Any, warmup: int, repeat: int) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def _line(name: str, times: list[float]) -> str:
    return (
        f"{name:<14} min {min(times) * 1e3:9.3f} ms   median {statistics.median(times) * 1e3:9.3f} ms"
        f"   ({len(times)} runs)"
    )


def run(args: argparse.Namespace) -> int:
    if args.repeat < 1 or args.warmup < 0:
        raise UsageError(
            f"--repeat must be >= 1 and --warmup >= 0, got {args.repeat}, {args.warmup}"
        )
    art, inputs = load_with_inputs(args)
    session = _ort_session(art) if args.compare else None
    vm, result = call(art, inputs, profile=args.profile)
    fn = vm[art.meta["entry"]]
    ours = _latencies(lambda: fn(*inputs), args.warmup, args.repeat)
    out = sys.stdout
    out.write(_line("minitvm", ours) + "\n")
    if session is not None:
        feed = {i["source_name"]: a for i, a in zip(art.inputs, inputs)}
        expected = session.run(None, feed)
        theirs = _latencies(lambda: session.run(None, feed), args.warmup, args.repeat)
        out.write(_line("onnxruntime", theirs) + "\n")
        ratio = statistics.median(theirs) / statistics.median(ours)
        diffs = [
            float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(outputs_of(result), expected)
        ]
        out.write(
            f"onnxruntime / minitvm median: {ratio:.2f}x (above 1: minitvm is faster); "
            f"largest output difference {max(diffs, default=0.0):.3g}\n"
        )
    if args.profile:
        out.write(
            str(vm.profile(art.meta["entry"], *inputs, number=max(1, args.repeat // 4))) + "\n"
        )
    return 0


def _ort_session(art: Any) -> Any:
    """An ONNX Runtime session on the artifact's recorded source model, checked unchanged."""
    try:
        import onnxruntime as ort
    except ImportError as err:
        raise UsageError(
            "--compare ort needs onnxruntime, which is not installed; `pip install onnxruntime`"
        ) from err
    source = art.meta["source"]
    path = source.get("path", "")
    if not isinstance(path, str) or not os.path.isfile(path):
        raise UsageError(
            f"--compare ort: the source model '{path}' recorded in '{art.path}' is not there; "
            "put it back or compile again from where it is"
        )
    if sha256_file(path) != source.get("sha256"):
        raise UsageError(
            f"--compare ort: '{path}' changed since '{art.path}' was compiled from it "
            "(sha256 differs); compile it again"
        )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise MiniTVMError(f"--compare ort: onnxruntime cannot load '{path}' ({first})") from err
