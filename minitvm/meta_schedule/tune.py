"""tune_tasks: the tuning loop over one or more tasks (sample, build, run, record, learn)."""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from ..error import TuningError
from . import builder as _builder
from . import database as _database
from . import runner as _runner
from ._progress import Curve, Progress
from .arg_info import ArgInfo
from .database import TuningRecord
from .utils import estimate_flops, mod_key

_PHASES = ("search", "build", "run")


class _TaskState:
    """What the loop tracks per task: its context, budget, best time and FLOPs."""

    def __init__(self, context: Any, weight: float, max_trials: int) -> None:
        self.context = context
        self.weight = float(weight)
        self.max_trials = max_trials
        self.flops = estimate_flops(context.mod)
        self.trials = 0
        self.failed = 0
        self.best_sec = float("inf")
        self.done = False
        self.workload = None
        self.last_error: str | None = None
        self.reference: dict | None = None
        # where the task's time goes (written with the tuning curve)
        self.phase_secs = {"search": 0.0, "build": 0.0, "run": 0.0}

    @property
    def best_gflops(self) -> float:
        if self.best_sec == float("inf") or self.best_sec <= 0:
            return 0.0
        return self.flops / self.best_sec / 1e9

    def priority(self) -> float:
        """Time this task costs the whole model now (estimated from FLOPs before a result)."""
        cost = self.best_sec if self.best_sec < float("inf") else self.flops * 1e-9
        return self.weight * cost


def tune_tasks(
    *,
    tasks: list,
    task_weights: list[float] | None = None,
    work_dir: str | None = None,
    max_trials_global: int,
    max_trials_per_task: int | None = None,
    num_trials_per_iter: int = 64,
    builder: Any = "local",
    runner: Any = "local",
    database: Any = "json",
    cost_model: Any = "xgb",
    measure_callbacks: Any = "default",
    task_scheduler: Any = "gradient",
    module_equality: str = "structural",
    verbose: bool = True,
) -> _database.Database:
    """Tune every task (TuneContexts) within `max_trials_global` measurements in all; the
    next batch goes to the task that costs the model most now (weight × best time).
    Returns the database with every measured record."""
    if not tasks:
        raise TuningError("tune_tasks: no tasks to tune")
    if max_trials_global < 1 or num_trials_per_iter < 1:
        raise TuningError(
            f"max_trials_global ({max_trials_global}) and num_trials_per_iter "
            f"({num_trials_per_iter}) must be positive"
        )
    if task_scheduler not in _SCHEDULERS:
        raise TuningError(
            f"task_scheduler={task_scheduler!r} is not supported; use one of {sorted(_SCHEDULERS)}"
        )
    if measure_callbacks not in ("default", None) and list(measure_callbacks):
        raise TuningError(
            "measure_callbacks are not supported; every record goes to the database and the "
            "tuning curve in work_dir (leave measure_callbacks='default')"
        )
    weights = list(task_weights or [1.0] * len(tasks))
    if len(weights) != len(tasks):
        raise TuningError(f"{len(tasks)} tasks but {len(weights)} task_weights")
    if work_dir is None:
        work_dir = tempfile.mkdtemp(prefix="minitvm-tune-")
    os.makedirs(work_dir, exist_ok=True)
    per_task = max_trials_per_task or max_trials_global
    states = [_TaskState(t, w, per_task) for t, w in zip(tasks, weights)]
    database = _make_database(database, work_dir)
    builder = _builder.Builder.create(builder)
    runner = _runner.Runner.create(runner)
    model = _make_cost_model(cost_model)
    progress = Progress(max_trials_global, verbose)
    curve = Curve(work_dir)
    for i, state in enumerate(states):
        _prepare(
            state,
            i,
            database,
            builder,
            runner,
            model,
            max_trials_global,
            num_trials_per_iter,
            work_dir,
        )
    total = 0
    try:
        while total < max_trials_global:
            live = [s for s in states if not s.done]
            if not live:
                break
            # every task measures once first; then the costliest task goes next
            state = _SCHEDULERS[task_scheduler](live)
            step = _one_batch(state, database, builder, runner, model, max_trials_global - total)
            if step == 0:
                continue
            total += step
            progress.update(total, step, state.context.task_name, state.best_gflops, state.failed)
            if verbose and state.last_error:
                # failures are data (the search goes on) but the user should see why
                print(
                    f"[meta_schedule] task {state.context.task_name}: a candidate failed: "
                    f"{state.last_error[:300]}",
                    flush=True,
                )
                state.last_error = None
            curve.add(
                trials=total,
                seconds=round(progress.elapsed(), 3),
                task=state.context.task_name,
                task_best_gflops=round(state.best_gflops, 3),
                best_gflops=round(_overall_gflops(states), 3),
                **{f"{k}_s": round(sum(st.phase_secs[k] for st in states), 2) for k in _PHASES},
            )
    finally:
        progress.close()
        for state in states:
            state.context.search_strategy.post_tuning()
    curve.plot()
    return database


def _gradient(live: list) -> _TaskState:
    """Every task measures once first; then the task that costs the model most goes next."""
    fresh = [s for s in live if s.trials == 0]
    return fresh[0] if fresh else max(live, key=lambda s: s.priority())


def _round_robin(live: list) -> _TaskState:
    """The task with the fewest trials so far (ties: the first)."""
    return min(live, key=lambda s: s.trials)


_SCHEDULERS = {"gradient": _gradient, "round-robin": _round_robin}


def _make_database(database: Any, work_dir: str) -> _database.Database:
    if database == "json":
        return _database.JSONDatabase(work_dir=work_dir)
    return _database.create(database)


def _make_cost_model(kind: Any) -> Any:
    """A cost model from its name ("xgb", "random", ...) or as given (None: random ranking)."""
    if kind is None or not isinstance(kind, str):
        return kind
    from . import cost_model

    return cost_model.create(kind)


def _prepare(
    state, index, database, builder, runner, model, max_global, per_iter, work_dir
) -> None:
    """Commit the workload, generate the design space, start the strategy, and compute the
    reference outputs of the unscheduled function (each measured candidate is checked)."""
    ctx = state.context
    state.workload = database.commit_workload(ctx.mod)
    spaces = ctx.generate_design_space()
    ctx.search_strategy.pre_tuning(
        min(state.max_trials, max_global), per_iter, spaces, database, model
    )
    args = ArgInfo.from_entry_func(ctx.mod)
    (built,) = builder.build([_builder.BuilderInput(ctx.mod, ctx.target)])
    npz = os.path.join(work_dir, f"reference_{index}_{ctx.task_name}.npz")
    error = built.error_msg or runner.set_reference(
        built.artifact_path, args, npz, seed=ctx.rand_state
    )
    if error:
        print(
            f"[meta_schedule] task {ctx.task_name}: outputs are not checked, the unscheduled "
            f"function did not run: {error}",
            flush=True,
        )
    # the runner checks against one reference at a time: each batch puts its task's back
    state.reference = runner.reference
    _remove(built.artifact_path)
    for record in database.get_all_tuning_records():
        if record.workload is state.workload and record.run_secs:
            state.best_sec = min(state.best_sec, record.best_sec)


def _one_batch(state, database, builder, runner, model, budget_left: int) -> int:
    """Generate, build, run and record one batch of the task; returns how many it measured."""
    ctx = state.context
    strategy = ctx.search_strategy
    clock = time.monotonic()
    candidates = strategy.generate_measure_candidates()
    if not candidates:
        state.done = True
        return 0
    candidates = candidates[:budget_left]
    state.phase_secs["search"] += time.monotonic() - clock
    clock = time.monotonic()
    built = builder.build([_builder.BuilderInput(c.sch.mod, ctx.target) for c in candidates])
    state.phase_secs["build"] += time.monotonic() - clock
    clock = time.monotonic()
    runner.reference = state.reference
    ok = [i for i, b in enumerate(built) if b.error_msg is None]
    inputs = [
        _runner.RunnerInput(built[i].artifact_path, "cpu", candidates[i].args_info) for i in ok
    ]
    ran = dict(zip(ok, (f.result() for f in runner.run(inputs))))
    results = []
    for i, cand in enumerate(candidates):
        result = ran.get(i) or _runner.RunnerResult(None, f"build failed: {built[i].error_msg}")
        results.append(result)
        record = TuningRecord(
            cand.sch.trace, state.workload, result.run_secs, ctx.target, cand.args_info
        )
        record._mod_key = mod_key(cand.sch.mod)
        database.commit_tuning_record(record)
        if result.run_secs:
            state.best_sec = min(state.best_sec, min(result.run_secs))
        else:
            state.failed += 1
            state.last_error = result.error_msg
        _remove(built[i].artifact_path)
    state.phase_secs["run"] += time.monotonic() - clock
    strategy.notify_runner_results(candidates, results)
    if model is not None:
        model.update(ctx, candidates, results)
    state.trials += len(candidates)
    state.done = state.trials >= state.max_trials
    return len(candidates)


def _overall_gflops(states: list) -> float:
    """All tasks' FLOPs (times their weights) over their best times, when all have one."""
    timed = [s for s in states if s.best_sec < float("inf")]
    if not timed:
        return 0.0
    secs = sum(s.weight * s.best_sec for s in timed)
    return sum(s.weight * s.flops for s in timed) / secs / 1e9 if secs > 0 else 0.0


def _remove(path: str | None) -> None:
    if path and os.path.exists(path):
        os.remove(path)
