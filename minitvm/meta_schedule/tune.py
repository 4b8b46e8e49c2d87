"""tune_tasks: the tuning loop over one or more tasks (sample, build, run, record, learn)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np

from ..error import TuningError
from . import builder as _builder
from . import database as _database
from . import measure_callback as _measure_callback
from . import runner as _runner
from . import task_scheduler as _task_scheduler
from ._progress import Curve, Progress
from .arg_info import ArgInfo
from .database import TuningRecord
from .peak import measure_peak_gflops
from .utils import estimate_flops, mod_key

_PHASES = ("search", "build", "run", "remeasure")


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
        self.stalled = 0  # batches since the best time last improved
        self.probe_secs = 0.0  # building and running the unscheduled function once
        # where the task's time goes (written with the tuning curve)
        self.phase_secs = dict.fromkeys(_PHASES, 0.0)

    @property
    def best_gflops(self) -> float:
        if self.best_sec == float("inf") or self.best_sec <= 0:
            return 0.0
        return self.flops / self.best_sec / 1e9

    def expected_gain(self, peak_gflops: float | None) -> float:
        """Seconds of the model's time the next batch may save: weight x (best time - its
        time at the FMA peak), discounted by the batches that did not improve it. A task
        with no successful run has nothing to go on (0)."""
        if self.best_sec == float("inf"):
            return 0.0
        floor = self.flops / (peak_gflops * 1e9) if peak_gflops else 0.0
        return self.weight * max(self.best_sec - floor, 0.0) / (1 + self.stalled)

    def record_best(self, secs: float) -> None:
        """A new measurement: the best time, and whether it improved (beyond 1% noise)."""
        self.stalled = 0 if secs < 0.99 * self.best_sec else self.stalled + 1
        self.best_sec = min(self.best_sec, secs)


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
    remeasure_top_k: int = 3,
    max_seconds: float | None = None,
) -> _database.Database:
    """Tune every task (TuneContexts) within `max_trials_global` measurements in all.

    Each task first measures one batch (its fixed points, e.g. the default schedule, among
    them); with several tasks that batch is small, so half the budget at most explores. Then
    "gradient" gives the next batch to the task with the most time left to win (weight x
    (best time - time at the measured FMA peak), discounted by batches without gain);
    "round-robin" to the task with the fewest trials. At the end each task's
    `remeasure_top_k` best schedules and its fixed points are timed again, interleaved in one
    worker, and those times replace the first ones, so noise does not pick the winner.
    `max_seconds` (not in TVM) bounds the call's wall time as well: no batch starts once
    the time left would not cover the re-measurement.
    Without `work_dir` (TVM requires one) the records are kept in a memory database and
    nothing stays on disk; with it, a "json" database, the tuning curve and the re-measured
    times are written there.
    Returns the database with every measured record."""
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    if not tasks:
        raise TuningError("tune_tasks: no tasks to tune")
    if max_trials_global < 1 or num_trials_per_iter < 1:
        raise TuningError(
            f"max_trials_global ({max_trials_global}) and num_trials_per_iter "
            f"({num_trials_per_iter}) must be positive"
        )
    if isinstance(task_scheduler, str) and task_scheduler not in _SCHEDULERS:
        raise TuningError(
            f"task_scheduler={task_scheduler!r} is not supported; use one of {sorted(_SCHEDULERS)}"
        )
    if task_weights is not None and len(task_weights) != len(tasks):
        raise TuningError(f"{len(tasks)} tasks but {len(task_weights)} task_weights")
    scratch = None
    if work_dir is None:
        # nothing asked to keep files: records stay in memory (a "json" database has no
        # directory to live in), and the scratch directory of reference outputs goes at the end
        work_dir = scratch = tempfile.mkdtemp(prefix="minitvm-tune-")
        if isinstance(database, str) and database == "json":
            database = "memory"
    os.makedirs(work_dir, exist_ok=True)
    try:
        return _tune(
            tasks, task_weights, work_dir, max_trials_global, max_trials_per_task,
            num_trials_per_iter, builder, runner, database, cost_model, measure_callbacks,
            task_scheduler, verbose, remeasure_top_k, deadline, keep_files=scratch is None,
        )  # fmt: skip
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _tune(
    tasks, task_weights, work_dir, max_trials_global, max_trials_per_task, num_trials_per_iter,
    builder, runner, database, cost_model, measure_callbacks, task_scheduler, verbose,
    remeasure_top_k, deadline, keep_files,
) -> _database.Database:  # fmt: skip
    """tune_tasks after its arguments are checked. `keep_files=False`: work_dir is a scratch
    directory removed afterwards, so no curve or re-measurement file is written there."""
    scheduler = _task_scheduler.as_scheduler(task_scheduler)
    callbacks = _measure_callback.user_callbacks(measure_callbacks)
    weights = list(task_weights or [1.0] * len(tasks))
    per_task = max_trials_per_task or max_trials_global
    states = [_TaskState(t, w, per_task) for t, w in zip(tasks, weights)]
    database = _make_database(database, work_dir)
    builder = _builder.Builder.create(builder)
    runner = _runner.Runner.create(runner)
    if isinstance(runner, _runner.LocalRunner):  # it measures on this machine's devices
        for state in states:
            _runner.check_device(state.context.target)
    model = _make_cost_model(cost_model)
    progress = Progress(max_trials_global, verbose)
    curve = Curve(work_dir if keep_files else None)
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
    # the peak only matters when tasks compete for the budget
    peak = None
    if scheduler.kind == "gradient" and len(states) > 1:
        peak = measure_peak_gflops(builder, runner, states[0].context.target)
    first = _first_batch_size(len(states), max_trials_global, num_trials_per_iter)
    total = 0

    def add_point(state: _TaskState, task: str) -> None:
        curve.add(
            trials=total,
            tasks_timed=f"{sum(s.best_sec < float('inf') for s in states)}/{len(states)}",
            seconds=round(progress.elapsed(), 3),
            task=task,
            task_best_gflops=round(state.best_gflops, 3),
            best_gflops=round(_overall_gflops(states), 3),
            **{f"{k}_s": round(sum(st.phase_secs[k] for st in states), 2) for k in _PHASES},
        )

    try:
        while total < max_trials_global:
            live = [s for s in states if not s.done]
            if not live:
                break
            state = _SCHEDULERS[scheduler.kind](live, peak)
            if _out_of_time(deadline, states, remeasure_top_k, state):
                break
            size = first if state.trials == 0 else num_trials_per_iter
            size = min(size, _trials_in_time(deadline, states, remeasure_top_k, state) or size)
            step = _one_batch(
                state,
                database,
                builder,
                runner,
                model,
                min(size, max_trials_global - total),
                _notifier(callbacks, scheduler, states.index(state)),
            )
            if step == 0:
                continue
            total += step
            progress.update(
                total, step, state.context.task_name, state.best_gflops, state.failed,
                best_sec=state.best_sec, flops=state.flops,
            )  # fmt: skip
            if verbose and state.last_error:
                # failures are data (the search goes on) but the user should see why
                print(
                    f"[meta_schedule] task {state.context.task_name}: a candidate failed: "
                    f"{state.last_error[:300]}",
                    flush=True,
                )
                state.last_error = None
            add_point(state, state.context.task_name)
        if remeasure_top_k > 0:
            progress.phase(
                f"re-measuring the {remeasure_top_k} best schedules of each of {len(states)} "
                "kernel(s) beside their defaults, 3 rounds each"
            )
            remeasured: dict = {}
            for state in states:
                if deadline is not None and time.monotonic() >= deadline:
                    # the estimate fell short (a loaded machine): the time budget holds, and
                    # the kernels left keep their first times
                    skipped = [s.context.task_name for s in states if s.context.task_name
                               not in remeasured]  # fmt: skip
                    progress.phase(
                        f"the time budget is spent: {len(skipped)} kernel(s) keep their first "
                        f"times, not re-measured ({', '.join(skipped)[:300]})"
                    )
                    break
                remeasured[state.context.task_name] = remeasure(
                    state, database, builder, runner, remeasure_top_k, deadline=deadline
                )
            if keep_files:
                _write_json(os.path.join(work_dir, "remeasured.json"), remeasured)
            if any(remeasured.values()):
                add_point(states[0], "(re-measured)")
    finally:
        progress.close()
        for state in states:
            state.context.search_strategy.post_tuning()
    curve.plot()
    return database


def _notifier(callbacks: list, scheduler: Any, task_id: int) -> Any:
    """What a batch calls with (candidates, builder results, runner results): each measure
    callback's apply (None when there is none)."""
    if not callbacks:
        return None

    def notify(candidates: list, built: list, results: list) -> None:
        for cb in callbacks:
            cb.apply(scheduler, task_id, candidates, built, results)

    return notify


def _out_of_time(deadline: float | None, states: list, top_k: int, nxt: _TaskState) -> bool:
    """Whether the time left no longer covers the re-measurement after a batch of `nxt`;
    batches are sized to end before the deadline (_trials_in_time)."""
    if deadline is None:
        return False
    return time.monotonic() + _remeasure_reserve(states, top_k, nxt) >= deadline


def _remeasure_reserve(states: list, top_k: int, nxt: _TaskState) -> float:
    """Seconds the re-measurement will take, for the tasks measured so far and `nxt`: per
    task its `top_k` best and its fixed point, each built once and run three times, and a
    round of challengers: about 2 trials' time each."""
    if top_k <= 0:
        return 0.0
    tasks = sum(1 for s in states if s.trials > 0 or s is nxt)
    return _secs_per_trial(states) * 2 * (top_k + 1) * tasks


def _secs_per_trial(states: list) -> float:
    """The mean seconds of a trial so far; before any, the probe of the unscheduled function
    (one build and run alone: more than a trial of a batch, built in parallel)."""
    per_trial = [
        (s.phase_secs["build"] + s.phase_secs["run"]) / s.trials for s in states if s.trials
    ]
    if per_trial:
        return sum(per_trial) / len(per_trial)
    probes = [s.probe_secs for s in states if s.probe_secs > 0]
    return sum(probes) / len(probes) if probes else 0.0


def _trials_in_time(
    deadline: float | None, states: list, top_k: int, nxt: _TaskState
) -> int | None:
    """How many trials of `nxt` fit in the time left before the re-measurement's reserve (at
    least 1), so that `max_seconds` is not overrun by a whole batch; None without a deadline
    or an estimate."""
    per_trial = _secs_per_trial(states)
    if deadline is None or per_trial <= 0:
        return None
    left = deadline - time.monotonic() - _remeasure_reserve(states, top_k, nxt)
    return max(1, int(left / per_trial))


_FIRST_LOOK = 8  # with several tasks, a first batch is a look: the default point and 7 more


def _first_batch_size(num_tasks: int, max_trials: int, per_iter: int) -> int:
    """One task: a full batch. Several: each first batch takes an equal part of half the
    budget, at least 2 (a fixed point and a sampled one) and at most `_FIRST_LOOK` (a time
    budget has no trial count to share) and `per_iter`, so the rest goes where it pays."""
    if num_tasks == 1:
        return per_iter
    return min(per_iter, _FIRST_LOOK, max(2, max_trials // (2 * num_tasks)))


def _gradient(live: list, peak_gflops: float | None) -> _TaskState:
    """Every task measures once first; then the task with the most time left to win."""
    fresh = [s for s in live if s.trials == 0]
    if fresh:
        return fresh[0]
    if peak_gflops:
        # a task faster than the measured peak means the peak was timed in a slow spell
        peak_gflops = max(peak_gflops, *(s.best_gflops for s in live))
    return max(live, key=lambda s: s.expected_gain(peak_gflops))


def _round_robin(live: list, peak_gflops: float | None) -> _TaskState:
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
    clock = time.monotonic()
    (built,) = builder.build([_builder.BuilderInput(ctx.mod, _reference_target(ctx.target))])
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
    state.probe_secs = time.monotonic() - clock
    # the runner checks against one reference at a time: each batch puts its task's back
    state.reference = runner.reference
    _remove(built.artifact_path)
    for record in database.get_all_tuning_records():
        if record.workload is state.workload and record.run_secs:
            state.best_sec = min(state.best_sec, record.best_sec)


def _reference_target(target: Any) -> Any:
    """Where the unscheduled function runs for the reference outputs: a GPU target's host
    (its kernels bind no threads yet, so they cannot run on the device), else the target."""
    from ..target.kinds import kind_spec

    if target is None or not kind_spec(target.kind.name).gpu:
        return target
    return getattr(target, "host", None) or "llvm"


def _one_batch(state, database, builder, runner, model, budget_left: int, notify=None) -> int:
    """Generate, build, run and record one batch of the task; returns how many it measured."""
    ctx = state.context
    strategy = ctx.search_strategy
    clock = time.monotonic()
    strategy.num_trials_per_iter = budget_left  # the batch the scheduler sized
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
        _runner.RunnerInput(
            built[i].artifact_path, _runner.device_of(ctx.target), candidates[i].args_info
        )
        for i in ok
    ]
    ran = dict(zip(ok, (f.result() for f in runner.run(inputs))))
    results = []
    batch_best = float("inf")
    for i, cand in enumerate(candidates):
        result = ran.get(i) or _runner.RunnerResult(None, f"build failed: {built[i].error_msg}")
        results.append(result)
        record = TuningRecord(
            cand.sch.trace, state.workload, result.run_secs, ctx.target, cand.args_info
        )
        record._mod_key = mod_key(cand.sch.mod)
        database.commit_tuning_record(record)
        if result.run_secs:
            batch_best = min(batch_best, min(result.run_secs))
        else:
            state.failed += 1
            state.last_error = result.error_msg
    if notify is not None:  # measure callbacks see the artifacts before they are removed
        notify(candidates, built, results)
    for b in built:
        _remove(b.artifact_path)
    state.record_best(batch_best)
    state.phase_secs["run"] += time.monotonic() - clock
    strategy.notify_runner_results(candidates, results)
    if model is not None:
        model.update(ctx, candidates, results)
    state.trials += len(candidates)
    state.done = state.trials >= state.max_trials
    return len(candidates)


def remeasure(
    state: _TaskState,
    database: Any,
    builder: Any,
    runner: Any,
    top_k: int,
    rounds: int = 3,
    deadline: float | None = None,
) -> list[dict]:
    """Time the task's `top_k` best schedules and its fixed points again, `rounds` times
    interleaved (a slow spell of the machine hits them all alike); the median of the new
    times replaces each record's first ones (on a busy machine the minimum went to whichever
    schedule had one lucky quiet sample: a schedule 30% slower was picked over the default).
    Schedules not re-measured whose first time still beats the re-measured best are then
    timed beside it, once (not once `deadline`, a time.monotonic() value, has passed).
    Returns, per schedule re-measured, its first and new times."""
    clock = time.monotonic()
    fixed = state.context.search_strategy.fixed_keys
    mine = _ranked(database, state)
    chosen = mine[:top_k] + [r for r in mine[top_k:] if r.mod_key in fixed]
    report: dict[int, dict] = {}
    for attempt in range(2):
        if len(chosen) < 2 or (attempt and deadline is not None and time.monotonic() >= deadline):
            break
        for record, secs in zip(chosen, _time_interleaved(state, chosen, builder, runner, rounds)):
            median = None if secs is None else [float(np.median(secs))]
            again = TuningRecord(
                record.trace, state.workload, median, record.target, record.args_info
            )
            again._mod_key = record.mod_key
            _database.commit_replacing(database, again)
            first = report.get(record.mod_key, {}).get("first_secs", record.run_secs)
            report[record.mod_key] = {
                "mod_key": record.mod_key,
                "first_secs": first,
                "remeasured_secs": secs,
                "fixed_point": record.mod_key in fixed,
            }
        ranked = _ranked(database, state)
        best = next((r for r in ranked if r.mod_key in report), None)
        if best is None:
            break
        # a first time that beats the re-measured best is compared with it head to head
        challengers = [r for r in ranked if r.mod_key not in report and r.best_sec < best.best_sec]
        chosen = [best, *challengers[:top_k]] if challengers else []
    state.best_sec = min((r.best_sec for r in _ranked(database, state)), default=float("inf"))
    state.phase_secs["remeasure"] += time.monotonic() - clock
    return list(report.values())


def _ranked(database: Any, state: _TaskState) -> list:
    """The task's successful records, fastest first."""
    return database.get_top_k(state.workload, len(database))


def _time_interleaved(state, records, builder, runner, rounds: int) -> list:
    """Build `records` once and run them round-robin `rounds` times; per record, all its
    repeats (None when a run failed: a schedule that fails once is not trusted)."""
    ctx = state.context
    cands = [r.as_measure_candidate() for r in records]
    built = builder.build([_builder.BuilderInput(c.sch.mod, ctx.target) for c in cands])
    ok = [i for i, b in enumerate(built) if b.error_msg is None]
    runner.reference = state.reference
    inputs = [
        _runner.RunnerInput(
            built[i].artifact_path, _runner.device_of(ctx.target), cands[i].args_info
        )
        for _ in range(rounds)
        for i in ok
    ]
    secs: list = [[] for _ in records]
    for n, future in enumerate(runner.run(inputs)):
        i = ok[n % len(ok)]
        got = future.result().run_secs
        secs[i] = None if secs[i] is None or not got else secs[i] + got
    for b in built:
        _remove(b.artifact_path)
    return [s or None for s in secs]


def _write_json(path: str, obj: Any) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def _overall_gflops(states: list) -> float:
    """All tasks' FLOPs (times their weights) over their best times, when all have one."""
    timed = [s for s in states if s.best_sec < float("inf")]
    if not timed:
        return 0.0
    secs = sum(s.weight * s.best_sec for s in timed)
    return sum(s.weight * s.flops for s in timed) / secs / 1e9 if secs > 0 else 0.0


def _remove(path: str | None) -> None:
    """Delete a built artifact and its folder (the builder gives each its own)."""
    if path and os.path.exists(path):
        os.remove(path)
        with contextlib.suppress(OSError):  # not empty: not a folder of the builder's
            os.rmdir(os.path.dirname(path))
