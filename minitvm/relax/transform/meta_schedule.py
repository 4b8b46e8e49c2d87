"""MetaScheduleApplyDatabase: replace each kernel that a tuning database has a record for
by its best schedule (marked tir.is_scheduled, so DefaultSchedule leaves it alone)."""

from __future__ import annotations

from typing import Any

from ...ir import IRModule
from ...ir.transform import Pass
from ...tir import PrimFunc


def apply_database(mod: IRModule, database: Any, target: Any = None) -> IRModule:
    """`mod` with every unscheduled PrimFunc the database has tuned replaced by the tuned one."""
    from ...dlight import IS_SCHEDULED, is_scheduled
    from ...meta_schedule.relax_integration import task_module

    out = mod.copy()
    for gv, func in mod.functions_items():
        if not isinstance(func, PrimFunc) or is_scheduled(func):
            continue
        tuned = database.query_ir_module(task_module(func), target, workload_name="main")
        if tuned is None:
            continue
        symbol = func.attrs.get("global_symbol", gv.name_hint) if func.attrs else gv.name_hint
        new = tuned["main"].with_attr("global_symbol", symbol).with_attr(IS_SCHEDULED, True)
        out.update_func(gv, new)
    return out


def meta_schedule_apply_database(
    mod: IRModule, work_dir: str | None = None, database: Any = None, target: Any = None
) -> IRModule:
    """The pass function: the database is `database`, else the one in `work_dir`, else the
    one of an enclosing `with database:`; the target is `target` or the current one."""
    from ... import meta_schedule as ms
    from ...error import TuningError
    from ...target import Target

    if database is None:
        database = ms.JSONDatabase(work_dir=work_dir) if work_dir else ms.Database.current()
    if database is None:
        raise TuningError(
            "MetaScheduleApplyDatabase needs a database: pass work_dir=... or database=..., "
            "or run it inside `with database:`"
        )
    if target is None:
        target = Target.current() or "llvm"
    return apply_database(mod, database, target)


def MetaScheduleApplyDatabase(
    work_dir: str | None = None,
    enable_warning: bool = False,
    database: Any = None,
    target: Any = None,
) -> Pass:
    return Pass(
        lambda mod: meta_schedule_apply_database(mod, work_dir, database, target),
        "MetaScheduleApplyDatabase",
    )


def ApplyCurrentDatabase() -> Pass:
    """relax.build's step before the default schedule: inside `with database:` (or
    auto_scheduler.ApplyHistoryBest) the kernels that database has tuned get their best
    schedule; outside, nothing changes."""

    def run(mod: IRModule) -> IRModule:
        import sys

        if "minitvm.meta_schedule.database" not in sys.modules:
            return mod  # no Database was ever made, so none is in scope (and no import cost)
        from ...meta_schedule.database import Database
        from ...target import Target

        database = Database.current()
        if database is None:
            return mod
        return apply_database(mod, database, Target.current() or "llvm")

    return Pass(run, "ApplyCurrentDatabase")


def meta_schedule_tune_tir(
    mod: IRModule, work_dir: str, max_trials_global: int, target: Any = None
) -> IRModule:
    """Tune each distinct unscheduled PrimFunc of `mod` for `target` (TVM: the current one),
    `max_trials_global` measurements in all, recording into the JSON database in `work_dir`;
    returns `mod` unchanged (MetaScheduleApplyDatabase then applies what was found)."""
    from ... import meta_schedule as ms
    from ...dlight import is_scheduled
    from ...error import TuningError
    from ...ir import structural_equal
    from ...meta_schedule import search_strategy, space_generator
    from ...meta_schedule.relax_integration import task_module
    from ...meta_schedule.tune import tune_tasks
    from ...target import Target

    target = target or Target.current()
    if target is None:
        raise TuningError(
            "MetaScheduleTuneTIR: no target; create and run the pass inside `with target:` "
            "(e.g. `with tvm.target.Target('llvm'):`)"
        )
    target = target if isinstance(target, Target) else Target(target)
    kernels: list[IRModule] = []
    for _, func in mod.functions_items():
        if not isinstance(func, PrimFunc) or is_scheduled(func):
            continue
        tmod = task_module(func)
        if not any(structural_equal(tmod, k) for k in kernels):
            kernels.append(tmod)
    if not kernels:
        return mod
    contexts = [
        ms.TuneContext(
            mod=k,
            target=target,
            space_generator=space_generator.create("post-order-apply", target=target),
            search_strategy=search_strategy.create("evolutionary"),
            task_name=f"task_{i}",
        )
        for i, k in enumerate(kernels)
    ]
    tune_tasks(
        tasks=contexts,
        task_weights=[1.0] * len(contexts),
        work_dir=work_dir,
        max_trials_global=max_trials_global,
    )
    return mod


def MetaScheduleTuneTIR(work_dir: str, max_trials_global: int) -> Pass:
    """TVM's `relax.transform.MetaScheduleTuneTIR`: tune the module's PrimFuncs for the target
    current when the pass is made (else when it runs) into `work_dir`; the module is unchanged.

    with target:
        mod = MetaScheduleTuneTIR(work_dir=d, max_trials_global=64)(mod)
        mod = MetaScheduleApplyDatabase(work_dir=d)(mod)
    """
    from ...target import Target

    target = Target.current()
    return Pass(
        lambda mod: meta_schedule_tune_tir(mod, work_dir, max_trials_global, target),
        "MetaScheduleTuneTIR",
    )
