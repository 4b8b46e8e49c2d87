"""What `minitvm tune` says about its work: trials counted per kernel, the per-kernel table
(GFLOPS only for kernels that compute), the time budget of --minutes, and the error of a model
whose kernels have no static shapes."""

from __future__ import annotations

import time
from typing import Any

from ..error import MiniTVMError
from ..meta_schedule.measure_callback import PyMeasureCallback
from ._common import UsageError, shape_text

# --minutes: the share of the budget kept back for what no estimate covers (worker start-up,
# a batch that ends past its estimate)
_MARGIN = 0.05


class TrialCounter(PyMeasureCallback):
    """Counts, per task, the candidates measured in this run and those that ran."""

    def __init__(self, num_tasks: int) -> None:
        self.trials = [0] * num_tasks
        self.ran = [0] * num_tasks

    def apply(self, task_scheduler, task_id, candidates, built, results) -> None:
        self.trials[task_id] += len(candidates)
        self.ran[task_id] += sum(1 for r in results if r.run_secs)


def kernel_table(tasks: list, db: Any, target: Any, counter: TrialCounter) -> str:
    """One line per kernel: calls in the model, trials this run, best time, and GFLOPS where
    the kernel does arithmetic (a data-movement kernel has no FLOPs: its time only)."""
    lines = [f"{'kernel':<36} {'calls':>5} {'trials':>6} {'best time':>12} {'GFLOPS':>8}"]
    for task, trials in zip(tasks, counter.trials):
        record = db.query_tuning_record(task.mod, target)
        secs = record.mean_sec if record is not None else None
        time_text = "-" if secs is None else _time_text(secs)
        if secs and task.flops > 0:
            gflops = f"{task.flops / secs / 1e9:8.2f}"
        else:
            gflops = f"{'-':>8}" + ("  (data movement)" if task.flops == 0 else "")
        name = task.task_name if len(task.task_name) <= 36 else task.task_name[:33] + "..."
        lines.append(f"{name:<36} {task.weight:>5} {trials:>6} {time_text:>12} {gflops}")
    return "\n".join(lines) + "\n"


def _time_text(secs: float) -> str:
    return f"{secs * 1e6:.1f} us" if secs < 1e-3 else f"{secs * 1e3:.3f} ms"


def no_kernels_error(model: str, declared: dict, shapes: dict) -> MiniTVMError:
    """Why a model has nothing to tune: symbolic input dims (fix them with --input-shapes), or
    no kernel at all."""
    symbolic = {
        name: dims
        for name, dims in declared.items()
        if name not in shapes and any(type(d) is not int or d <= 0 for d in dims)
    }
    if symbolic:
        fixed = " ".join(
            f"{n}:{','.join(str(d) if type(d) is int and d > 0 else '1' for d in dims)}"
            for n, dims in symbolic.items()
        )
        listed = ", ".join(f"'{n}' {shape_text(d)}" for n, d in symbolic.items())
        return UsageError(
            f"'{model}': input(s) {listed} have symbolic dims, and only kernels with static "
            f'shapes can be tuned; fix them with --input-shapes, e.g. --input-shapes "{fixed}"'
        )
    return MiniTVMError(f"'{model}' has no kernel to tune (every kernel is already scheduled)")


def timed_default_build(mod: Any, target: Any) -> float:
    """Seconds to build the model with default schedules (what the in-model check of the
    picks and the -o build each cost about once)."""
    from ..meta_schedule import MemoryDatabase
    from ..meta_schedule.relax_integration import compile_relax

    start = time.perf_counter()
    compile_relax(MemoryDatabase(), mod, target)
    return time.perf_counter() - start


def time_budget(
    start: float, budget_secs: float, build_secs: float, with_output: bool, num_tasks: int
) -> float:
    """The seconds tune_relax may take (its max_seconds, which covers task extraction, the
    search, the re-measurement and the check of the picks in the model) so that the command
    ends within `budget_secs` of `start`: what is left less the -o build and a margin."""
    after = build_secs * int(with_output)
    left = budget_secs - (time.perf_counter() - start) - after - _MARGIN * budget_secs
    return max(left, 1e-3)
