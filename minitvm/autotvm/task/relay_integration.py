"""Task extraction from Relay programs: not supported (no TOPI autotvm templates here)."""

from __future__ import annotations

from typing import Any

from ...error import TuningError

_HOW = (
    "minitvm has no AutoTVM templates for Relay's operators (conv2d, dense, ...), so a Relay "
    "program has no AutoTVM tasks. relay.build already gives every operator minitvm's default "
    "CPU schedule; to tune a model's kernels use meta_schedule on its relax form "
    "(tvm.meta_schedule.relax_integration.tune_relax, then compile_relax)"
)


def extract_from_program(mod: Any, params: Any, target: Any, **kwargs: Any) -> list:
    """Not supported: raises a TuningError saying what to use instead."""
    raise TuningError(f"autotvm.task.extract_from_program is not supported: {_HOW}")


def extract_from_multiple_program(mods: Any, params: Any, target: Any, **kwargs: Any) -> list:
    """Not supported: raises a TuningError saying what to use instead."""
    raise TuningError(f"autotvm.task.extract_from_multiple_program is not supported: {_HOW}")
