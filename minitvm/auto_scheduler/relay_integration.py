"""extract_tasks and ApplyHistoryBest: a model's kernels as SearchTasks (meta_schedule's task
extraction on its relax form), and its build with the tuned records of a log file."""

from __future__ import annotations

import json
from typing import Any

from ..error import TuningError
from ..ir import IRModule
from ..ir.structural import structural_hash
from ..meta_schedule.database import Database
from .measure import history_database
from .search_task import ComputeDAG, SearchTask


def _relax_module(mod: Any) -> IRModule:
    """A relax IRModule from a Relay function/module or a relax function/module."""
    from ..relax.expr import Function as RelaxFunction

    if isinstance(mod, RelaxFunction):
        return IRModule({"main": mod})
    if isinstance(mod, IRModule) and "main" in mod and isinstance(mod["main"], RelaxFunction):
        return mod
    from ..relay.expr import Function as RelayFunction

    if isinstance(mod, RelayFunction | IRModule):
        from ..relay._translate import to_relax

        return to_relax(mod)
    raise TuningError(
        f"extract_tasks: expected a Relay or relax function or module, got {type(mod).__name__}"
    )


def extract_tasks(
    mod: Any,
    params: Any = None,
    target: Any = "llvm",
    target_host: Any = None,
    hardware_params: Any = None,
    include_simple_tasks: bool = False,
    dump_workload_to_dag_log: Any = None,
    opt_level: int = 3,
    other_targets: Any = None,
) -> tuple[list, list]:
    """(tasks, weights): the model's distinct kernels and how often it calls each."""
    from ..meta_schedule.relax_integration import extract_tasks as ms_extract_tasks

    rmod = _relax_module(mod)
    tasks, weights = [], []
    for t in ms_extract_tasks(rmod, target, params):
        func = t.mod["main"]
        key = json.dumps([f"{t.task_name}_{structural_hash(func) & 0xFFFFFFFF:08x}"])
        tasks.append(
            SearchTask(
                compute_dag=ComputeDAG(func), workload_key=key, target=target, desc=t.task_name
            )
        )
        weights.append(t.weight)
    return tasks, weights


class ApplyHistoryBest:
    """`with ApplyHistoryBest(log_file):` relay.build / relax.build give every kernel the log
    has a record of its best schedule (the rest keep the default one)."""

    def __init__(self, records: Any, n_lines: int | None = None, include_compatible: bool = False):
        self.database: Database = history_database(records)

    def __enter__(self) -> ApplyHistoryBest:  # noqa: PYI034 - py3.10 has no typing.Self
        self.database.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.database.__exit__(*exc)
