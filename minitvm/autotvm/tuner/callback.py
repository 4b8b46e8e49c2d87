"""Tuner callbacks: log records to a file, show progress."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from ..record import encode

logger = logging.getLogger("autotvm")


def log_to_file(file_out: Any, protocol: str = "json") -> Callable:
    """A callback appending each measurement to `file_out` (a path or an open file) as a
    JSON line."""

    def _callback(tuner: Any, inputs: list, results: list) -> None:
        lines = "".join(encode(i, r, protocol) + "\n" for i, r in zip(inputs, results))
        if isinstance(file_out, str):
            with open(file_out, "a") as f:
                f.write(lines)
        else:
            file_out.write(lines)
            file_out.flush()

    return _callback


def log_to_database(db: Any) -> Callable:
    """A callback saving each measurement to an autotvm.database Database."""

    def _callback(tuner: Any, inputs: list, results: list) -> None:
        for inp, res in zip(inputs, results):
            db.save(inp, res)

    return _callback


def progress_bar(total: int, prefix: str = "", si_prefix: str = "G") -> Callable:
    """A callback printing `[prefix] Current/Best: x/y GFLOPS | Progress: (i/total) | t s`."""
    from .tuner import _SI_PREFIXES, measured_flops

    scale = _SI_PREFIXES[si_prefix]
    state = {"count": 0, "start": time.time(), "best": 0.0}

    def _callback(tuner: Any, inputs: list, results: list) -> None:
        state["count"] += len(inputs)
        now = 0.0
        for inp, res in zip(inputs, results):
            now = max(now, measured_flops(inp.task.flop, res))
        state["best"] = max(state["best"], tuner.best_flops)
        sys.stdout.write(
            f"\r{prefix}Current/Best: {now / scale:7.2f}/{state['best'] / scale:7.2f} "
            f"{si_prefix}FLOPS | Progress: ({state['count']}/{total}) | "
            f"{time.time() - state['start']:.2f} s"
        )
        if state["count"] >= total:
            sys.stdout.write(" Done.\n")
        sys.stdout.flush()

    return _callback
