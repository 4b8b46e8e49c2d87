"""Task extraction from Relay programs: not supported (no TOPI autotvm templates here)."""

from __future__ import annotations

from typing import Any

from ...error import TuningError

_HOW = (
    "minitvm has no AutoTVM templates for its operators, so there are no tasks to extract; "
    "tune the model with meta_schedule instead: mod = relay.transform.ToRelax()... or "
    "tvm.meta_schedule.relax_integration.tune_relax(mod, params, target, work_dir=..., "
    "max_trials_global=...)"
)


def extract_from_program(mod: Any, params: Any, target: Any, **kwargs: Any) -> list:
    """Not supported: raises a TuningError saying what to use instead."""
    raise TuningError(f"autotvm.task.extract_from_program is not supported: {_HOW}")


def extract_from_multiple_program(mods: Any, params: Any, target: Any, **kwargs: Any) -> list:
    """Not supported: raises a TuningError saying what to use instead."""
    raise TuningError(f"autotvm.task.extract_from_multiple_program is not supported: {_HOW}")
