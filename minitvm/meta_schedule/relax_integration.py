"""Tuning whole Relax models: extract the kernels relax.build would compile (deduplicated,
weighted by how often they are called), tune them within one budget, and build the model
with the tuned kernels."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any

from ..error import MiniTVMError, TuningError
from ..ir import IRModule
from ..ir.structural import structural_equal, structural_hash
from ..tir import PrimFunc
from . import runner as _runner
from . import search_strategy as _strategy
from . import space_generator
from .arg_info import ArgInfo
from .database import MemoryDatabase
from .tune import tune_tasks
from .tune_context import TuneContext
from .utils import estimate_flops, parse_target

# Lowering steps up to the kernels' default scheduling (what tuning replaces) and after it.
_LAST_STEPS = (
    "ApplyCurrentDatabase",
    "DefaultSchedule",
    "DefaultCPUSchedule",
    "DefaultTIRSchedule",
    "StaticPlanBlockMemory",
)


class ExtractedTask:
    """One distinct kernel: `mod` ({"main": PrimFunc}), how often the model calls it
    (`weight`), its FLOPs, and the module's function names that share it (`dispatched`)."""

    def __init__(
        self, task_name: str, mod: IRModule, target: Any, dispatched: list, weight: int
    ) -> None:
        self.task_name = task_name
        self.mod = mod
        self.target = parse_target(target)
        self.dispatched = dispatched
        self.weight = weight
        self.flops = estimate_flops(mod)

    def __repr__(self) -> str:
        return f"ExtractedTask({self.task_name!r}, weight={self.weight}, flops={self.flops:.3g})"


def task_module(func: PrimFunc) -> IRModule:
    """The tuning workload of a kernel: {"main": func} named main (names are not part of it)."""
    return IRModule({"main": func.with_attr("global_symbol", "main")})


def lower_to_kernels(mod: IRModule, target: Any, params: Any = None) -> IRModule:
    """`mod` through relax.build's pipeline up to (not including) the default schedule:
    graph passes, legalization and fusion, so its PrimFuncs are the kernels to build."""
    from ..relax.pipeline import DEFAULT_PIPELINE, GRAPH_PIPELINE, default_passes
    from ..relax.transform import bind_params
    from ..relax.vm.build import resolve_prim_calls_by_name

    if params:
        mod = bind_params(mod, "main", params)
    mod = resolve_prim_calls_by_name(mod)
    for p in default_passes(str(parse_target(target)), steps=GRAPH_PIPELINE + DEFAULT_PIPELINE):
        if p.name in _LAST_STEPS:
            break
        mod = p(mod)
    return mod


def extract_tasks(
    mod: IRModule, target: Any, params: Any = None, **unused: Any
) -> list[ExtractedTask]:
    """The distinct unscheduled kernels of `mod` (structurally equal ones are one task whose
    weight counts every call), biggest FLOPs × calls first."""
    from ..dlight import is_scheduled

    lowered = lower_to_kernels(mod, target, params)
    calls = _call_counts(lowered)
    tasks: list[ExtractedTask] = []
    by_hash: dict[int, list[ExtractedTask]] = {}
    for gv, func in lowered.functions_items():
        if not isinstance(func, PrimFunc) or is_scheduled(func) or not _static(func):
            continue
        tmod = task_module(func)
        key = structural_hash(tmod["main"])
        same = [t for t in by_hash.get(key, []) if structural_equal(t.mod, tmod)]
        count = max(1, calls.get(gv.name_hint, 0))
        if same:
            same[0].dispatched.append(gv.name_hint)
            same[0].weight += count
            continue
        task = ExtractedTask(gv.name_hint, tmod, target, [gv.name_hint], count)
        by_hash.setdefault(key, []).append(task)
        tasks.append(task)
    return sorted(tasks, key=lambda t: -t.flops * t.weight)


def _static(func: PrimFunc) -> bool:
    """Only kernels with static shapes can be measured (others keep the default schedule)."""
    try:
        ArgInfo.from_prim_func(func)
    except TuningError:
        return False
    return True


def _call_counts(mod: IRModule) -> dict[str, int]:
    """How many call_tir sites call each PrimFunc (by name) in the module's Relax functions."""
    from ..ir import Op
    from ..ir.module import GlobalVar
    from ..relax.expr import Call, Function

    call_tir = Op.get("relax.call_tir")
    counts: dict[str, int] = {}
    stack = [f for _, f in mod.functions_items() if isinstance(f, Function)]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Call) and node.op is call_tir and isinstance(node.args[0], GlobalVar):
            name = node.args[0].name_hint
            counts[name] = counts.get(name, 0) + 1
        if isinstance(node, (list, tuple)):
            stack.extend(node)
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
    return counts


def tune_relax(
    mod: IRModule,
    params: Any,
    target: Any,
    work_dir: str | None,
    max_trials_global: int,
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
    seed: int | None = None,
    module_equality: str = "structural",
    verbose: bool = True,
    max_seconds: float | None = None,
    validate_in_model: bool = True,
) -> Any:
    """Tune every distinct kernel of `mod` within `max_trials_global` measurements in all;
    batches go to the kernels that cost the model most (calls × time). Returns the database.

    On a CPU target the default runner ("local" or "ray" by name) times each candidate with
    its weights flushed from the caches (`EvaluatorConfig(enable_cpu_cache_flush=True)`), as
    the kernel finds them inside the model; pass a Runner object to choose otherwise. Then
    each tuned kernel that replaced the default is timed inside the model beside it, and the
    default is kept where it is faster there (`validate_in_model`, see
    validate_picks_in_model; a few builds and runs of the model).

    `max_seconds` (not in TVM) bounds the whole call: the search stops early enough for the
    re-measurement and for the check in the model (the default build is timed first, and
    the check is given twice that); a step the time left no longer covers is skipped, and
    says so."""
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    tasks = extract_tasks(mod, target, params)
    if not tasks:
        raise TuningError("tune_relax: the module has no kernel to tune (no unscheduled PrimFunc)")
    if isinstance(runner, str) and runner in ("local", "ray") and _on_cpu(tasks[0].target):
        runner = _runner.Runner.create(
            runner, evaluator_config=_runner.EvaluatorConfig(enable_cpu_cache_flush=True)
        )
    contexts = []
    base_seed = -1 if seed is None else int(seed)
    for i, task in enumerate(tasks):
        contexts.append(
            TuneContext(
                mod=task.mod,
                target=task.target,
                space_generator=space_generator.create(space, target=task.target),
                search_strategy=_strategy.create(strategy),
                task_name=task.task_name,
                rand_state=-1 if base_seed < 0 else base_seed + i,
            )
        )
    check = validate_in_model and _on_cpu(tasks[0].target)
    default_exe, check_secs = None, 0.0
    if check and deadline is not None and _random_inputs(mod, params) is not None:
        start = time.monotonic()
        default_exe = compile_relax(MemoryDatabase(), mod, target, params)
        check_secs = 2 * (time.monotonic() - start)  # the tuned build, and the model's runs
    if deadline is not None:
        max_seconds = max(deadline - time.monotonic() - check_secs, 1e-3)
    database = tune_tasks(
        tasks=contexts,
        task_weights=[t.weight for t in tasks],
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
    if check and deadline is not None and time.monotonic() + check_secs / 2 > deadline:
        if verbose:
            print(
                "[meta_schedule] the time budget is spent: the tuned kernels are not timed "
                "inside the model",
                flush=True,
            )
    elif check:
        if verbose:
            print(
                "[meta_schedule] timing the tuned kernels inside the model beside the defaults "
                "(builds it twice) ...",
                flush=True,
            )
        try:
            report = validate_picks_in_model(
                database, mod, params, tasks[0].target, tasks,
                deadline=deadline, default_exe=default_exe,
            )  # fmt: skip
        except MiniTVMError as err:  # e.g. random inputs the model refuses (an index range)
            report = [{"skipped": f"the model did not run on random inputs: {err}"[:2000]}]
            if verbose:
                print(f"[meta_schedule] picks not checked in the model: {err}", flush=True)
        if work_dir is not None and report:
            with open(os.path.join(work_dir, "validated_in_model.json"), "w") as f:
                json.dump(report, f, indent=1)
    return database


# Kernels faster than this (per call, in the worker) are not checked in the model: the VM's
# per-kernel timer cannot resolve them, and they weigh nothing in the model's time.
MIN_CHECKED_SECS = 20e-6


def validate_picks_in_model(
    database: Any,
    mod: IRModule,
    params: Any,
    target: Any,
    tasks: list,
    rounds: int = 5,
    deadline: float | None = None,
    default_exe: Any = None,
) -> list[dict]:
    """Time each tuned kernel that is not the default schedule inside the model, beside the
    default, and keep the default where it is faster there (a minitvm step, not TVM's).

    A kernel measured alone, even with its weights flushed, can rank differently inside the
    model (its neighbours leave the caches and TLB in another state): measured on ResNet-18,
    a conv pick 4% faster in the worker was 8% slower in the model. Both builds of the model
    are profiled in interleaved rounds (the VM's per-kernel timer, the minimum per kernel);
    the in-model time per call then replaces the worker time of the pick and of the default,
    and the database ranks them by it. Up to three passes, as a replaced pick can uncover
    another (each pick is checked once). Models whose inputs have symbolic dims, and kernels
    under MIN_CHECKED_SECS, are not checked; no pass starts once `deadline` (a
    time.monotonic() value) has passed. `default_exe` is the model built with default
    schedules, when the caller has it. Returns, per pick checked, both in-model times and
    which was faster there."""
    from ..relax.vm import VirtualMachine
    from ..runtime import cpu
    from ..runtime.ndarray import array
    from .database import MemoryDatabase, TuningRecord, _num_samples, commit_replacing

    inputs = _random_inputs(mod, params)
    if inputs is None:
        return []
    default_vm = None  # built when a pick needs checking
    args = [array(x) for x in inputs]
    report: list[dict] = []
    checked: set = set()  # (task, schedule) pairs timed in the model already
    for _ in range(3):
        changed = []
        for task in tasks:
            pick = database.query_tuning_record(task.mod, target)
            if pick is None or _num_samples(pick.trace) == 0:
                continue
            if (task.task_name, pick.mod_key) in checked or pick.mean_sec < MIN_CHECKED_SECS:
                continue
            checked.add((task.task_name, pick.mod_key))
            fixed = [
                r
                for r in database.get_top_k(database.commit_workload(task.mod), len(database))
                if _num_samples(r.trace) == 0
            ]
            if fixed:
                changed.append((task, pick, fixed[0]))
        if not changed:
            break
        if deadline is not None and time.monotonic() >= deadline:
            report.append({"skipped": f"the time budget was spent: {len(changed)} pick(s) "
                           "not checked"})  # fmt: skip
            break
        if default_vm is None:
            if default_exe is None:
                default_exe = compile_relax(MemoryDatabase(), mod, target, params)
            default_vm = VirtualMachine(default_exe, cpu())
        tuned_vm = VirtualMachine(compile_relax(database, mod, target, params), cpu())
        best: list[dict] = [{}, {}]
        for _ in range(rounds):
            for side, vm in enumerate((default_vm, tuned_vm)):
                for name, calls, secs in vm.profile("main", *args, number=3).rows:
                    per_call = secs / max(calls, 1)
                    best[side][name] = min(best[side].get(name, float("inf")), per_call)
        for task, pick, fixed in changed:
            times = [min((b[n] for n in task.dispatched if n in b), default=None) for b in best]
            if None in times:
                continue
            for record, secs in ((fixed, times[0]), (pick, times[1])):
                again = TuningRecord(
                    record.trace, record.workload, [secs], record.target, record.args_info
                )
                again._mod_key = record.mod_key
                commit_replacing(database, again)
            report.append(
                {
                    "task": task.task_name,
                    "default_in_model_secs": times[0],
                    "tuned_in_model_secs": times[1],
                    "faster_in_model": "tuned" if times[1] < times[0] else "default",
                }
            )
    return report


def _random_inputs(mod: IRModule, params: Any) -> list | None:
    """Seeded random arrays for `main`'s parameters that `params` does not bind; None when
    a shape is symbolic or a parameter is not a tensor."""
    import numpy as np

    from ..relax.expr import Function
    from ..relax.struct_info import TensorStructInfo

    func = mod["main"] if "main" in [gv.name_hint for gv in mod.get_global_vars()] else None
    if not isinstance(func, Function):
        return None
    bound = set(params or {})
    rng = np.random.default_rng(0)
    arrays = []
    for p in func.params:
        if p.name_hint in bound:
            continue
        info = p.struct_info
        dims = info.static_shape() if isinstance(info, TensorStructInfo) else None
        if dims is None:
            return None
        dtype = np.dtype(str(info.dtype))
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(dims).astype(dtype))
        else:
            arrays.append(rng.integers(0, 2 if dtype.kind == "b" else 8, dims).astype(dtype))
    return arrays


def _on_cpu(target: Any) -> bool:
    return str(parse_target(target).kind) == "llvm"


def compile_relax(
    database: Any, mod: IRModule, target: Any, params: Any = None, **unused: Any
) -> Any:
    """relax.build of `mod` with every kernel the database has tuned (the others get the
    default schedule); returns the Executable."""
    from ..ir.transform import PassContext
    from ..relax.pipeline import DEFAULT_PIPELINE, GRAPH_PIPELINE, default_passes
    from ..relax.transform.meta_schedule import apply_database
    from ..relax.vm.build import build

    target = parse_target(target)
    lowered = apply_database(lower_to_kernels(mod, target, params), database, target)
    ctx = PassContext.current()
    done = [
        p.name
        for p in default_passes(str(target), steps=GRAPH_PIPELINE + DEFAULT_PIPELINE)
        if p.name not in _LAST_STEPS
    ]
    # the passes that already ran are not run again: fusing fused kernels anew could merge a
    # tuned kernel into another and lose its schedule
    with PassContext(
        opt_level=ctx.opt_level,
        required_pass=list(ctx.required_pass),
        disabled_pass=sorted(set(ctx.disabled_pass) | set(done)),
        config=dict(ctx.config),
    ):
        return build(lowered, target=target)
