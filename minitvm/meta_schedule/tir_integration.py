"""tune_tir and compile_tir: tune one TensorIR function, then get its best schedule."""

from __future__ import annotations

from typing import Any

from ..error import TuningError
from ..tir import PrimFunc
from ..tir.names import ATTR_IS_SCHEDULED
from ..tir.schedule import Schedule
from . import search_strategy as _strategy
from . import space_generator
from .tune import tune_tasks
from .tune_context import TuneContext
from .utils import normalize_mod, parse_target


def tune_tir(
    mod: Any,
    target: Any,
    work_dir: str | None = None,
    max_trials_global: int = 64,
    *,
    max_trials_per_task: int | None = None,
    num_trials_per_iter: int = 64,
    builder: Any = "local",
    runner: Any = "local",
    database: Any = "json",
    cost_model: Any = "xgb",
    measure_callbacks: Any = "default",
    task_scheduler: Any = "gradient",
    space: Any = "post-order-apply",
    strategy: Any = "evolutionary",
    num_tuning_cores: Any = "physical",
    seed: int | None = None,
    module_equality: str = "structural",
    task_name: str = "main",
    verbose: bool = True,
    max_seconds: float | None = None,
) -> Any:
    """Tune `mod` (an IRModule with a "main" PrimFunc, or a PrimFunc) for `target` with
    `max_trials_global` measurements; returns the database (JSON in `work_dir`; in memory
    without one, see tune_tasks)."""
    context = TuneContext(
        mod=normalize_mod(mod),
        target=parse_target(target),
        space_generator=space_generator.create(space, target=parse_target(target)),
        search_strategy=_strategy.create(strategy),
        task_name=task_name,
        rand_state=-1 if seed is None else int(seed),
        num_threads=num_tuning_cores,
    )
    return tune_tasks(
        tasks=[context],
        task_weights=[1.0],
        work_dir=work_dir,
        max_trials_global=max_trials_global,
        max_trials_per_task=max_trials_per_task,
        num_trials_per_iter=num_trials_per_iter,
        builder=builder,
        runner=runner,
        database=database,
        cost_model=cost_model,
        measure_callbacks=measure_callbacks,
        task_scheduler=task_scheduler,
        module_equality=module_equality,
        verbose=verbose,
        max_seconds=max_seconds,
    )


def compile_tir(database: Any, mod: Any, target: Any) -> Schedule:
    """The best schedule of `mod` in `database` for `target`, replayed on `mod`; its function
    carries tir.is_scheduled, so a relax build that receives it keeps the tuned schedule."""
    mod = normalize_mod(mod)
    record = database.query_tuning_record(mod, parse_target(target), workload_name="main")
    if record is None:
        raise TuningError(
            "compile_tir: the database has no successful record of this module for "
            f"{parse_target(target)}; tune it first (tune_tir with the same module)"
        )
    marked = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            marked.update_func(gv, func.with_attr(ATTR_IS_SCHEDULED, True))
    sch = Schedule(marked)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    return sch
