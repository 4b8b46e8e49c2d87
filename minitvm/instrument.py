"""`tvm.instrument`: objects a PassContext calls around every pass it runs.

>>> with tvm.transform.PassContext(instruments=[tvm.instrument.PrintBeforeAll()]):
...     mod = tvm.tir.transform.Simplify()(mod)
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from .error import ArgumentError


class PassInstrument:
    """Base of pass instruments; override any of the five hooks (the defaults do nothing).

    Order: enter_pass_ctx when the PassContext is entered; for each pass, should_run (every
    instrument must agree, else the pass is skipped), run_before_pass, the pass,
    run_after_pass; exit_pass_ctx when the context exits.
    """

    def enter_pass_ctx(self) -> None:
        """Called when the instrumented PassContext is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when the instrumented PassContext exits."""

    def should_run(self, mod: Any, info: Any) -> bool:
        """Whether the pass described by `info` should run on `mod`."""
        return True

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Called before a pass runs on `mod`."""

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Called after a pass ran; `mod` is its result."""


def pass_instrument(pi_cls: type | None = None):
    """Class decorator making a plain class with some of the hooks a PassInstrument.

    >>> @tvm.instrument.pass_instrument
    ... class SkipSimplify:
    ...     def should_run(self, mod, info): return info.name != "Simplify"
    """

    def wrap(cls: Any) -> type:
        if not inspect.isclass(cls):
            raise ArgumentError(f"pass_instrument: expected a class, got {type(cls).__name__}")
        if issubclass(cls, PassInstrument):
            return cls
        wrapped = type(cls.__name__, (cls, PassInstrument), {"__doc__": cls.__doc__})
        wrapped.__module__, wrapped.__qualname__ = cls.__module__, cls.__qualname__
        return wrapped

    return wrap(pi_cls) if pi_cls is not None else wrap


class PassTimingInstrument(PassInstrument):
    """Times every pass run in its context; `render()` gives the table (nested passes, such as
    those of a Sequential, are indented under their parent)."""

    def __init__(self) -> None:
        self._records: list[list] = []  # [depth, name, seconds]
        self._open: list[tuple[int, float]] = []  # (record index, start time)

    def enter_pass_ctx(self) -> None:
        self._records.clear()
        self._open.clear()

    def exit_pass_ctx(self) -> None:
        self._open.clear()

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self._records.append([len(self._open), info.name, 0.0])
        self._open.append((len(self._records) - 1, time.perf_counter()))

    def run_after_pass(self, mod: Any, info: Any) -> None:
        index, start = self._open.pop()
        self._records[index][2] = time.perf_counter() - start

    def render(self) -> str:
        """The timings so far, one pass a line: `name: <us>us`."""
        lines = ["Pass Timing:"]
        for depth, name, seconds in self._records:
            lines.append(f"{'  ' * (depth + 1)}{name}: {seconds * 1e6:.0f}us")
        return "\n".join(lines)


class PassPrintingInstrument(PassInstrument):
    """Print the IR before the passes named in `print_before_pass_names` and after those named
    in `print_after_pass_names`."""

    def __init__(self, print_before_pass_names: Any, print_after_pass_names: Any) -> None:
        self.print_before_pass_names = tuple(print_before_pass_names)
        self.print_after_pass_names = tuple(print_after_pass_names)

    def run_before_pass(self, mod: Any, info: Any) -> None:
        if info.name in self.print_before_pass_names:
            print(f"Print IR before: {info.name}\n{mod}\n\n")

    def run_after_pass(self, mod: Any, info: Any) -> None:
        if info.name in self.print_after_pass_names:
            print(f"Print IR after: {info.name}\n{mod}\n\n")


class PrintBeforeAll(PassInstrument):
    """Print each pass's name and the IR before the pass runs."""

    def run_before_pass(self, mod: Any, info: Any) -> None:
        print(f"Before Running Pass: {info}")
        print(mod)


class PrintAfterAll(PassInstrument):
    """Print each pass's name and the IR after the pass ran."""

    def run_after_pass(self, mod: Any, info: Any) -> None:
        print(f"After Running Pass: {info}")
        print(mod)


__all__ = [
    "PassInstrument",
    "PassPrintingInstrument",
    "PassTimingInstrument",
    "PrintAfterAll",
    "PrintBeforeAll",
    "pass_instrument",
]
