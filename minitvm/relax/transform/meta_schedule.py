"""MetaScheduleApplyDatabase: replace each kernel that a tuning database has a record for
by its best schedule (marked tir.is_scheduled, so DefaultSchedule leaves it alone)."""

from __future__ import annotations

from typing import Any

from ...ir import IRModule
from ...ir.transform import Pass
from ...tir import PrimFunc


def apply_database(mod: IRModule, database: Any, target: Any = None) -> IRModule:
    """`mod` with every unscheduled PrimFunc the database has tuned replaced by the tuned one."""
    from ...meta_schedule.relax_integration import task_module
    from ...dlight import IS_SCHEDULED, is_scheduled

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
