"""Latency statistics of `run` and `bench`, and their --format text / json / csv."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

FORMATS = ("text", "json", "csv")
# statistic -> how it is computed from the times (seconds, numpy array)
STATS: dict[str, Callable[[np.ndarray], float]] = {
    "mean": np.mean,
    "median": np.median,
    "min": np.min,
    "max": np.max,
    "std": np.std,
    "p50": lambda t: np.percentile(t, 50),
    "p90": lambda t: np.percentile(t, 90),
    "p99": lambda t: np.percentile(t, 99),
}
# the text table leaves out p50 (it is the median)
_TEXT_COLUMNS = ("mean", "median", "min", "max", "std", "p90", "p99")


def add_format_option(p: Any) -> None:
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), or json / csv for scripts",
    )


def latencies(fn: Callable[[], Any], warmup: int, repeat: int) -> list[float]:
    """Seconds of each of `repeat` calls of `fn`, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def latency_stats(times: list[float]) -> dict[str, float]:
    """{statistic: milliseconds} of the times (seconds), plus "runs"."""
    t = np.asarray(times, dtype="float64") * 1e3
    return {"runs": len(times), **{name: round(float(f(t)), 6) for name, f in STATS.items()}}


def text_table(rows: dict[str, dict[str, float]]) -> str:
    """One line per engine: its statistics in ms, and the number of runs."""
    head = f"{'latency (ms)':<14}" + "".join(f"{c:>10}" for c in _TEXT_COLUMNS)
    lines = [head]
    for name, st in rows.items():
        cells = "".join(f"{st[c]:>10.3f}" for c in _TEXT_COLUMNS)
        lines.append(f"{name:<14}{cells}   ({st['runs']} runs)")
    return "\n".join(lines) + "\n"


def csv_columns() -> list[str]:
    """The latency columns of a CSV row (milliseconds)."""
    return ["runs", *(f"{name}_ms" for name in STATS)]


def csv_cells(stats: dict[str, float] | None) -> dict[str, Any]:
    """A CSV row's latency cells (empty when there is no timing)."""
    if stats is None:
        return {}
    return {"runs": stats["runs"], **{f"{k}_ms": stats[k] for k in STATS}}


def write_csv(out: TextIO, columns: list[str], rows: list[dict[str, Any]]) -> None:
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def write_json(out: TextIO, obj: Any) -> None:
    out.write(json.dumps(obj, indent=1) + "\n")
