"""Profiling the relax VM: a function's closures wrapped in timers, and the per-op Report."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _profiled_copy(fn: Any, sync: Callable | None = None) -> Any:
    """The same function with each closure wrapped in a timer (frames shared); `sync` (a
    device's wait) ends each timed closure."""
    clone = type(fn).__new__(type(fn))
    clone.__dict__.update(fn.__dict__)
    clone.acc = {}
    clone.run_list = tuple(_timed(clone, f, n, sync) for f, n in zip(fn.run_list, fn.names))
    return clone


def _timed(owner: Any, f: Callable, name: str, sync: Callable | None) -> Callable:
    clock = time.perf_counter

    def run(regs, frame):
        t = clock()
        out = f(regs, frame)
        if sync is not None:
            sync()
        dt = clock() - t
        entry = owner.acc.get(name)
        if entry is None:
            owner.acc[name] = [1, dt]
        else:
            entry[0] += 1
            entry[1] += dt
        return out

    return run


class Report:
    """Per-op times of a profiled run: `print(report)` shows a table sorted by total time."""

    def __init__(self, func: str, acc: dict, total: float, number: int) -> None:
        self.func, self.total, self.number = func, total, number
        self.rows = sorted(
            ((name, calls, secs) for name, (calls, secs) in acc.items()), key=lambda r: -r[2]
        )

    def table(self) -> str:
        lines = [
            f"profile of '{self.func}' ({self.number} run(s), {self.total * 1e6:.1f} us)",
            f"{'name':<32} {'calls':>7} {'total us':>12} {'percent':>8}",
        ]
        for name, calls, secs in self.rows:
            pct = 100.0 * secs / self.total if self.total else 0.0
            lines.append(f"{name:<32} {calls:>7} {secs * 1e6:>12.2f} {pct:>7.2f}%")
        ops = sum(r[2] for r in self.rows)
        lines.append(
            f"{'(VM dispatch outside ops)':<32} {'':>7} "
            f"{(self.total - ops) * 1e6:>12.2f} "
            f"{100.0 * (self.total - ops) / self.total if self.total else 0:>7.2f}%"
        )
        return "\n".join(lines)

    __str__ = table

    def __repr__(self) -> str:
        return self.table()
