"""Where a build's time goes: seconds per stage (graph passes, default schedule, TIR lowering,
LLVM IR emission, LLVM optimisation, object emission, compile cache) and per kernel.

`relax.build(mod, target, profile=True)` and `minitvm compile --profile` print the report.
Library code records into the active profile only (`current()` is None otherwise, and then
nothing is timed). A profiled build compiles its kernels in this process, one at a time, so
each kernel's time is its own (a parallel build's share of a kernel cannot be told apart).

    with build_profile.profiling() as prof:
        ex = relax.build(mod, "llvm")
    print(prof.report(top=10))
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# the stages in pipeline order (the report lists them so; unknown stages follow)
STAGES = (
    "graph passes",
    "default schedule",
    "compile cache",
    "TIR lowering",
    "LLVM IR emission",
    "LLVM optimisation",
    "object emission",
    "VM codegen",
)
SCHEDULE_PASSES = frozenset({"DefaultSchedule", "DefaultCPUSchedule", "DefaultTIRSchedule",
                             "DefaultGPUSchedule"})  # fmt: skip

_active = threading.local()


@dataclass
class BuildProfile:
    """Seconds per stage, per pass of the graph passes, and per kernel and stage."""

    stages: dict[str, float] = field(default_factory=dict)
    passes: dict[str, float] = field(default_factory=dict)
    kernels: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    total: float = 0.0

    def add(self, stage: str, seconds: float, kernel: str | None = None) -> None:
        self.stages[stage] = self.stages.get(stage, 0.0) + seconds
        if kernel is not None:
            per = self.kernels.setdefault(kernel, {})
            per[stage] = per.get(stage, 0.0) + seconds

    def add_pass(self, name: str, seconds: float) -> None:
        stage = "default schedule" if name in SCHEDULE_PASSES else "graph passes"
        self.add(stage, seconds)
        if stage == "graph passes":
            self.passes[name] = self.passes.get(name, 0.0) + seconds

    @contextmanager
    def timed(self, stage: str, kernel: str | None = None) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - start, kernel)

    def report(self, top: int = 10) -> str:
        """The table: stages (graph passes broken down), then the `top` slowest kernels."""
        total = self.total or sum(self.stages.values())
        lines = [f"build profile: {total:.3f} s"]
        lines += [f"  {note}" for note in self.notes]
        lines.append(f"  {'stage':<34}{'seconds':>9}{'share':>8}")
        order = [s for s in STAGES if s in self.stages]
        order += [s for s in self.stages if s not in STAGES]
        for stage in order:
            seconds = self.stages[stage]
            lines.append(f"  {stage:<34}{seconds:>9.3f}{_share(seconds, total):>8}")
            if stage == "graph passes":
                for name, t in sorted(self.passes.items(), key=lambda kv: -kv[1]):
                    lines.append(f"    {name:<32}{t:>9.3f}")
        other = total - sum(self.stages.values())
        if self.total and other > 0:
            lines.append(f"  {'other':<34}{other:>9.3f}{_share(other, total):>8}")
        if self.kernels:
            ranked = sorted(self.kernels.items(), key=lambda kv: -sum(kv[1].values()))
            lines.append(f"kernels ({min(top, len(ranked))} of {len(ranked)}, slowest first):")
            for name, per in ranked[:top]:
                parts = ", ".join(f"{s} {t:.3f}" for s, t in per.items())
                lines.append(f"  {name:<48}{sum(per.values()):>8.3f}  ({parts})")
        return "\n".join(lines)

    __str__ = report


def _share(seconds: float, total: float) -> str:
    return f"{100 * seconds / total:.0f}%" if total > 0 else ""


def current() -> BuildProfile | None:
    """The profile this thread records into, None when no build is being profiled."""
    return getattr(_active, "profile", None)


@contextmanager
def profiling(profile: BuildProfile | None = None) -> Iterator[BuildProfile]:
    """Record the builds run inside into `profile` (a new one by default); sets its total."""
    profile = profile or BuildProfile()
    outer = current()
    _active.profile = profile
    start = time.perf_counter()
    try:
        yield profile
    finally:
        profile.total += time.perf_counter() - start
        _active.profile = outer


class PassTimer:
    """A pass instrument timing each outermost pass into the active profile."""

    def __init__(self, profile: BuildProfile) -> None:
        self.profile = profile
        self._depth = 0
        self._start = 0.0

    def run_before_pass(self, mod, info) -> None:
        if self._depth == 0:
            self._start = time.perf_counter()
        self._depth += 1

    def run_after_pass(self, mod, info) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.profile.add_pass(info.name, time.perf_counter() - self._start)
