"""Profiler: wall time of named scopes during tuning (TVM's `ms.Profiler`).

>>> with ms.Profiler() as prof:
...     with ms.Profiler.timeit("Search"):
...         ...
>>> prof.get()   # {"Total": seconds, "Search": seconds}
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Self

_ACTIVE = threading.local()


class Profiler:
    """Adds up the seconds spent in each `Profiler.timeit(name)` scope while it is entered."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}
        self._start: float | None = None

    def __enter__(self) -> Self:
        stack = getattr(_ACTIVE, "stack", None)
        if stack is None:
            stack = _ACTIVE.stack = []
        stack.append(self)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self._add("Total", time.perf_counter() - self._start)
        _ACTIVE.stack.pop()

    def _add(self, name: str, seconds: float) -> None:
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    def get(self) -> dict[str, float]:
        """Seconds per scope name, with "Total" for the whole `with` block."""
        return dict(self._seconds)

    def table(self) -> str:
        """The scopes as a text table, longest first, with their share of the total."""
        total = self._seconds.get("Total", 0.0) or 1.0
        rows = sorted(self._seconds.items(), key=lambda kv: -kv[1])
        lines = [f"{'Name':<40} {'Time (s)':>10} {'Percentage':>10}"]
        lines += [f"{name:<40} {sec:>10.4f} {100 * sec / total:>9.2f}%" for name, sec in rows]
        return "\n".join(lines)

    @staticmethod
    def current() -> Profiler | None:
        """The innermost entered profiler of this thread, or None."""
        stack = getattr(_ACTIVE, "stack", None)
        return stack[-1] if stack else None

    @staticmethod
    @contextlib.contextmanager
    def timeit(name: str) -> Iterator[None]:
        """Time the block into the current profiler under `name` (nothing when there is none)."""
        prof = Profiler.current()
        start = time.perf_counter()
        try:
            yield
        finally:
            if prof is not None:
                prof._add(name, time.perf_counter() - start)
