"""SearchTask and ComputeDAG: a TE workload (or a model's kernel) as one meta_schedule tuning
task; `tune` runs meta_schedule's tuner, `apply_best` replays the best record."""

from __future__ import annotations

import json
import tempfile
from typing import Any

from ..error import TuningError
from ..ir import IRModule
from ..ir.structural import structural_hash
from ..meta_schedule import search_strategy, space_generator
from ..meta_schedule.database import Database
from ..meta_schedule.tir_integration import compile_tir
from ..meta_schedule.tune import tune_tasks
from ..meta_schedule.tune_context import TuneContext
from ..meta_schedule.utils import parse_target
from ..tir import PrimFunc
from .measure import TuningOptions, open_log
from .workload_registry import (
    decode_workload_key,
    make_workload_key,
    workload_tensors,
)


class ComputeDAG:
    """The computation of a task: its TE tensors (when it has them) and its PrimFunc; prints
    as the PrimFunc's TVMScript."""

    def __init__(self, compute: Any) -> None:
        if isinstance(compute, PrimFunc):
            self.tensors: list = []
            self.func = compute
        else:
            from ..te import create_prim_func

            self.tensors = list(compute)
            self.func = create_prim_func(self.tensors)
        self.func = self.func.with_attr("global_symbol", "main")

    @property
    def workload_key(self) -> str:
        return json.dumps([f"dag_{structural_hash(self.func) & 0xFFFFFFFF:08x}"])

    def __str__(self) -> str:
        return self.func.script()

    __repr__ = __str__


class XGBModel:
    """The gradient-boosted cost model (meta_schedule's "xgb" model)."""

    kind = "xgb"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.log_files: list[str] = []

    def update_from_file(self, file_name: str, n_lines: int | None = None) -> None:
        """Remember `file_name`: its records join the search (the tuner reads that database)."""
        self.log_files.append(str(file_name))


class RandomModel(XGBModel):
    """Random ranking of candidates (meta_schedule's "random" model)."""

    kind = "random"


class PreloadMeasuredStates:
    """Search callback: start from the records of `filename` (a resumed search)."""

    def __init__(self, filename: str = "auto_scheduler_tuning.json") -> None:
        self.filename = str(filename)


class SketchPolicy:
    """TVM's search policy for one task; here it picks the cost model of meta_schedule's
    evolutionary search over the post-order-apply design space."""

    def __init__(
        self,
        task: SearchTask,
        program_cost_model: Any = None,
        params: Any = None,
        seed: int | None = None,
        verbose: int = 1,
        init_search_callbacks: Any = None,
    ) -> None:
        if program_cost_model is None:
            program_cost_model = XGBModel()
        if not isinstance(program_cost_model, XGBModel):
            raise TuningError(
                "SketchPolicy: program_cost_model must be auto_scheduler.XGBModel() or "
                f"RandomModel(), got {type(program_cost_model).__name__}"
            )
        self.task = task
        self.cost_model = program_cost_model
        self.seed = seed
        self.init_search_callbacks = list(init_search_callbacks or [])


class TunedSchedule:
    """The best schedule of a task: what `tvm.lower(sch, args)` / `tvm.build(sch, args, target)`
    take; `.schedule` is the tir.Schedule, `.mod` its module, `.trace` how it was made."""

    def __init__(self, schedule: Any, args: list, task_desc: str) -> None:
        self.schedule = schedule
        self.mod = schedule.mod
        self.trace = schedule.trace
        self._args = args
        self._desc = task_desc

    def build_prim_func(self, args: list, name: str = "main") -> PrimFunc:
        """The tuned function; `args` must be the tensors apply_best returned, in order."""
        same = len(args) == len(self._args) and all(a is b for a, b in zip(args, self._args))
        if not same:
            raise TuningError(
                f"task '{self._desc}': lower/build the tuned schedule with the args that "
                "apply_best returned (sch, args = task.apply_best(log)); other tensors are not "
                "the ones it was tuned for"
            )
        return self.mod["main"].with_attr("global_symbol", name)


class SearchTask:
    """One tuning task: `SearchTask(func=registered, args=(...), target=...)`,
    `SearchTask(workload_key=key, target=...)`, or a kernel from `extract_tasks`."""

    def __init__(
        self,
        func: Any = None,
        args: Any = None,
        compute_dag: Any = None,
        workload_key: str | None = None,
        target: Any = None,
        target_host: Any = None,
        hardware_params: Any = None,
        layout_rewrite_option: Any = None,
        task_inputs: Any = None,
        task_inputs_overwrite: bool = False,
        task_inputs_save_to_file: bool = False,
        desc: str = "",
    ) -> None:
        if target is None:
            raise TuningError("SearchTask: give target=..., e.g. target='llvm'")
        if func is not None:
            workload_key = make_workload_key(func, args or ())
        if compute_dag is None:
            if workload_key is None:
                raise TuningError("SearchTask: give func= and args=, or workload_key=")
            name, wargs = decode_workload_key(workload_key)
            compute_dag = ComputeDAG(workload_tensors(name, wargs))
            desc = desc or name
        elif not isinstance(compute_dag, ComputeDAG):
            compute_dag = ComputeDAG(compute_dag)
        self.compute_dag = compute_dag
        self.workload_key = workload_key or compute_dag.workload_key
        self.target = parse_target(target)
        self.target_host = target_host
        self.desc = desc or "task"
        self.mod = IRModule({"main": compute_dag.func})

    def __repr__(self) -> str:
        return f"SearchTask({self.desc!r}, workload_key={self.workload_key}, target={self.target})"

    def tune(self, tuning_options: TuningOptions, search_policy: Any = None) -> None:
        """Measure `num_measure_trials` schedules with meta_schedule's tuner; records go to
        the options' RecordToFile."""
        tune_search_tasks([self], [1.0], tuning_options, [search_policy])

    def apply_best(
        self, log_file: Any, include_compatible: bool = False, layout_rewrite_option: Any = None
    ) -> tuple:
        """(sch, args) of the best record of this task in `log_file`, for tvm.lower/tvm.build."""
        database = log_file if isinstance(log_file, Database) else open_log(log_file)
        if database.query_tuning_record(self.mod, self.target, workload_name="main") is None:
            raise TuningError(
                f"'{log_file}' has no successful record of task '{self.desc}' for "
                f"{self.target}; tune it first: task.tune(TuningOptions(num_measure_trials=..., "
                "measure_callbacks=[RecordToFile(log_file)]))"
            )
        sch = compile_tir(database, self.mod, self.target)
        args = self.compute_dag.tensors or list(self.mod["main"].params)
        return TunedSchedule(sch, args, self.desc), args

    def print_best(self, log_file: Any, print_mode: str = "schedule") -> str:
        """The best schedule of `log_file` as the Python schedule calls that rebuild it."""
        sch, _ = self.apply_best(log_file)
        return str(sch.trace)


def tune_search_tasks(
    tasks: list, weights: list, options: TuningOptions, policies: list | None = None
) -> None:
    """Tune `tasks` together with meta_schedule's tune_tasks (the one tuner)."""
    if not isinstance(options, TuningOptions):
        raise TuningError(
            f"tune: expected auto_scheduler.TuningOptions, got {type(options).__name__}"
        )
    if options.num_measure_trials == 0:
        return  # TVM's default options measure nothing
    policies = list(policies or [None] * len(tasks))
    if len(policies) != len(tasks):
        raise TuningError(f"tune: {len(policies)} search policies for {len(tasks)} tasks")
    contexts = []
    for i, (task, policy) in enumerate(zip(tasks, policies)):
        if policy is not None and not isinstance(policy, SketchPolicy):
            raise TuningError(
                f"tune: search_policy must be auto_scheduler.SketchPolicy, got "
                f"{type(policy).__name__}"
            )
        contexts.append(
            TuneContext(
                mod=task.mod,
                target=task.target,
                space_generator=space_generator.create("post-order-apply", target=task.target),
                search_strategy=search_strategy.create("evolutionary"),
                task_name=f"{task.desc}_{i}",
                rand_state=-1 if policy is None or policy.seed is None else int(policy.seed),
            )
        )
    model = policies[0].cost_model.kind if policies[0] is not None else "xgb"
    trials = options.num_measure_trials
    with tempfile.TemporaryDirectory(prefix="minitvm-auto-scheduler-") as work_dir:
        tune_tasks(
            tasks=contexts,
            task_weights=[float(w) for w in weights],
            work_dir=work_dir,
            max_trials_global=trials,
            num_trials_per_iter=min(options.num_measures_per_round, trials),
            builder=options.builder.to_meta_schedule(),
            runner=options.runner.to_meta_schedule(),
            database=options.database(),
            cost_model=model,
            verbose=bool(options.verbose),
        )
