"""The default `relax.build` pipeline, as two lists run one after the other: GRAPH_PIPELINE
(graph-level optimisation on op calls) then DEFAULT_PIPELINE (lowering to kernels).

Each step names a pass of `relax.transform` (alternative names allowed), the lowest
`PassContext.opt_level` at which it runs, and the passes it needs beside it. A step runs only
if its pass exists *when the pipeline is built* (`hasattr(relax.transform, name)` is checked at
call time, not at import time), so the list grows as passes land: FuseOps/FuseTIR and the
default schedule join the build as soon as they are defined. `PassContext(disabled_pass=[...])`
removes a step, `required_pass` forces it regardless of opt_level. VM code generation follows
the last step (`relax.vm.build`).

    with tvm.transform.PassContext(opt_level=0):      # no fusion, no layout change
        ex = relax.build(mod, "llvm")
    with tvm.transform.PassContext(disabled_pass=["AlterOpLayout"]):   # convs stay NCHW
        ex = relax.build(mod, "llvm")
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from ..error import BuildError
from ..ir.transform import Pass, PassContext
from ..target.kinds import gpu_kinds


@dataclass(frozen=True)
class Step:
    names: tuple[str, ...]  # the pass's name in relax.transform (first existing one is used)
    opt_level: int
    needs: tuple[str, ...] = ()  # other passes that must exist for this one to make sense


# Graph-level optimisation, op calls in and op calls out, before anything is legalized: batch
# norm folded into the conv before it (else decomposed), convs moved to the target's blocked
# layout, and what became constant (packed weights, per-channel biases) computed once here.
GRAPH_PIPELINE: tuple[Step, ...] = (
    Step(("FoldConstant",), 1),  # statistics or biases computed from constants become constants
    Step(("FoldBatchnormToConv2D",), 1),
    Step(("DecomposeInferenceModeOps",), 1),
    Step(("AlterOpLayout",), 1),
    Step(("FoldConstant",), 1),
    Step(("DeadCodeElimination",), 1),
)

_CPU_SCHEDULES = ("DefaultSchedule", "DefaultCPUSchedule", "DefaultTIRSchedule")

# Lowering: ops to kernels, kernels fused and scheduled, memory planned.
DEFAULT_PIPELINE: tuple[Step, ...] = (
    Step(("LegalizeOps",), 0),
    Step(("AnnotateTIROpPattern",), 0),
    Step(("FuseOps",), 1, needs=("FuseTIR",)),
    Step(("FuseTIR",), 1, needs=("FuseOps",)),
    Step(("DeadCodeElimination",), 0),
    Step(("ApplyCurrentDatabase",), 0),  # tuned kernels of a `with database:`
    Step(_CPU_SCHEDULES, 0),
    Step(("StaticPlanBlockMemory",), 0),
)

# GPU targets (opencl, cuda): the same lists without the CPU-only steps (blocked NCHW{c}c
# layouts serve CPU vector units; the CPU schedule binds no threads) and with the default GPU
# schedule, which binds every unscheduled kernel's loops to blocks and threads.
GPU_KINDS = gpu_kinds()  # the compilable GPU kinds of the target registry, at import
_CPU_ONLY = frozenset({"AlterOpLayout", "ConvertLayout"})
GPU_GRAPH_PIPELINE: tuple[Step, ...] = tuple(
    s for s in GRAPH_PIPELINE if not _CPU_ONLY.intersection(s.names)
)
GPU_DEFAULT_PIPELINE: tuple[Step, ...] = tuple(
    Step(("DefaultGPUSchedule",), 0) if s.names == _CPU_SCHEDULES else s for s in DEFAULT_PIPELINE
)


def _gpu_passes() -> dict[str, Any]:
    """Passes the GPU lists name that live outside relax.transform's namespace."""
    from .transform.default_gpu_schedule import DefaultGPUSchedule

    return {"DefaultGPUSchedule": DefaultGPUSchedule}


def target_kind(target: Any) -> str:
    """The kind name of `target` ("llvm", "opencl", ...); "" when it does not parse (the
    passes report an invalid target themselves)."""
    from ..error import MiniTVMError
    from ..target import Target

    try:
        return Target(target).kind.name
    except MiniTVMError:
        return ""


def _make(factory: Any, target: Any) -> Pass:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    return factory(target=target) if "target" in params else factory()


def default_passes(
    target: Any = "llvm",
    ctx: PassContext | None = None,
    steps: tuple[Step, ...] = DEFAULT_PIPELINE,
) -> list[Pass]:
    """The passes of `steps` (default: the lowering) that exist now and that `ctx` (default:
    current) enables; `relax.build` runs GRAPH_PIPELINE + DEFAULT_PIPELINE."""
    from . import transform

    ctx = ctx or PassContext.current()
    found = dict(_gpu_passes()) if target_kind(target) in gpu_kinds() else {}
    for step in steps:
        for n in (*step.names, *step.needs):
            if n not in found and hasattr(transform, n):
                found[n] = getattr(transform, n)
    out = []
    for step in steps:
        name = next((n for n in step.names if n in found), None)
        if name is None or not all(n in found for n in step.needs):
            continue
        if name in ctx.disabled_pass:
            continue
        if step.opt_level > ctx.opt_level and name not in ctx.required_pass:
            continue
        out.append(_make(found[name], target))
    return out


def run_default_pipeline(mod: Any, target: Any = "llvm") -> Any:
    """Run the enabled passes of GRAPH_PIPELINE then DEFAULT_PIPELINE on `mod`, in order (their
    GPU_ variants for an opencl/cuda target)."""
    if target_kind(target) in gpu_kinds():
        from ..target import Target

        steps = GPU_GRAPH_PIPELINE + GPU_DEFAULT_PIPELINE
        target = Target(target)  # the GPU schedule reads max_num_threads from it
    else:
        steps = GRAPH_PIPELINE + DEFAULT_PIPELINE
    for p in default_passes(target, steps=steps):
        mod = p(mod)
        if mod is None:
            raise BuildError(f"relax.build: pass {p.name} returned None")
    return mod


def compile(mod: Any, target: Any = None, **kwargs: Any) -> Any:
    """`tvm.compile` (TVM 0.20+): a module with relax functions → `relax.build` (an Executable for
    `relax.VirtualMachine`); TIR only (an IRModule of PrimFuncs, or one PrimFunc) → `tvm.build`.

    `relax_pipeline` (a name for `get_pipeline`, a Pass, or None) runs first; the build then
    lowers what is left ("default"/"default_build" add nothing to what it does anyway).

    >>> ex = tvm.compile(mod, target="llvm"); vm = relax.VirtualMachine(ex, tvm.cpu())
    """
    from .. import driver
    from ..ir.module import IRModule
    from ..tir.function import PrimFunc
    from .expr import Function
    from .vm import build as relax_build

    unknown = set(kwargs) - {"relax_pipeline", "tir_pipeline", "exec_mode", "system_lib_prefix"}
    if unknown:
        raise BuildError(f"tvm.compile: unknown keyword argument(s) {sorted(unknown)}")
    target = "llvm" if target is None else target
    if isinstance(mod, Function) or (
        isinstance(mod, IRModule)
        and [f for _, f in mod.functions_items() if isinstance(f, Function)]
    ):
        if isinstance(mod, Function):
            mod = IRModule({"main": mod})
        mod = _run_user_pipeline(mod, kwargs.get("relax_pipeline", "default"), target)
        return relax_build(mod, target=target)
    if isinstance(mod, IRModule | PrimFunc):
        return driver.build(mod, target=target)
    raise BuildError(
        f"tvm.compile: expected an IRModule, a tir.PrimFunc or a relax.Function, got "
        f"{type(mod).__name__}"
    )


def _run_user_pipeline(mod: Any, pipeline: Any, target: Any) -> Any:
    if pipeline is None or pipeline in ("default", "default_build"):
        return mod  # relax.build runs the default pipeline itself
    if isinstance(pipeline, str):
        pipeline = get_pipeline(pipeline)
    if not callable(pipeline):
        raise BuildError(
            f"tvm.compile: relax_pipeline must be a pipeline name, a Pass or None, got "
            f"{type(pipeline).__name__}"
        )
    from ..target import Target

    with Target(target):
        return pipeline(mod)


# ---------------------------------------------------------------- named pipelines (TVM 0.20+)
# `relax.get_pipeline(name, **kwargs)` makes a module pass from a factory of PIPELINE_MAP.


def _sequence(mod: Any, passes: list) -> Any:
    for p in passes:
        mod = p(mod)
    return mod


def zero_pipeline(enable_warning: bool = False) -> Pass:
    """Legalize ops to kernels, fold constants, fuse; then a `with database:`'s tuned kernels."""
    from . import transform

    def run(mod: Any) -> Any:
        mod = _sequence(
            mod,
            [
                transform.LegalizeOps(),
                transform.AnnotateTIROpPattern(),
                transform.FoldConstant(),
                transform.FuseOps(),
                transform.FuseTIR(),
            ],
        )
        from ..meta_schedule.database import Database

        if Database.current() is not None:
            mod = transform.MetaScheduleApplyDatabase()(mod)
        return mod

    return Pass(run, "ZeroPipeline")


def default_build_pipeline() -> Pass:
    """Everything `relax.build` does before code generation, for the current target (or llvm)."""
    from ..target import Target

    def run(mod: Any) -> Any:
        return run_default_pipeline(mod, Target.current() or "llvm")

    return Pass(run, "DefaultBuildPipeline")


def static_shape_tuning_pipeline(
    total_trials: int,
    target: Any,
    work_dir: str = "tuning_logs",
    cpu_weight_prepack: bool = False,
    max_trials_per_task: int | None = None,
) -> Pass:
    """Decompose inference ops, run the zero pipeline, tune the kernels with meta_schedule when
    `total_trials` > 0 (records in `work_dir`) and apply the records; with no tuning, the
    default schedule of `target` instead."""
    from ..target import Target
    from . import transform

    if cpu_weight_prepack:
        raise BuildError(
            "static_shape_tuning: cpu_weight_prepack=True is not supported by minitvm "
            "(its CPU build already packs conv weights through AlterOpLayout); leave it False"
        )
    tgt = Target(target)

    def run(mod: Any) -> Any:
        with tgt:
            mod = _sequence(mod, [transform.DecomposeOpsForInference(), zero_pipeline()])
            if total_trials > 0:
                from ..meta_schedule.relax_integration import tune_relax

                tune_relax(
                    mod,
                    {},
                    tgt,
                    work_dir,
                    total_trials,
                    max_trials_per_task=max_trials_per_task,
                    verbose=False,
                )
                return transform.MetaScheduleApplyDatabase(work_dir, target=tgt)(mod)
            if tgt.kind.name in gpu_kinds():
                return _gpu_passes()["DefaultGPUSchedule"](target=tgt)(mod)
            return transform.DefaultSchedule()(mod)

    return Pass(run, "StaticShapeTuningPipeline")


PIPELINE_MAP: dict[str, Any] = {
    "zero": zero_pipeline,
    "default": default_build_pipeline,
    "default_build": default_build_pipeline,
    "static_shape_tuning": static_shape_tuning_pipeline,
}


def get_pipeline(name: str = "zero", **kwargs: Any) -> Pass:
    """The named pipeline as a module pass: `relax.get_pipeline("zero")(mod)`."""
    if name not in PIPELINE_MAP:
        raise BuildError(
            f"relax.get_pipeline: unknown pipeline {name!r}; known: {sorted(PIPELINE_MAP)} "
            "(add one with relax.register_pipeline)"
        )
    try:
        return PIPELINE_MAP[name](**kwargs)
    except TypeError as err:
        raise BuildError(f"relax.get_pipeline({name!r}): bad arguments {kwargs}: {err}") from err


def register_pipeline(name: str) -> Any:
    """Decorator: `@relax.register_pipeline("mine")` on a factory returning a Pass."""
    if name in PIPELINE_MAP:
        raise BuildError(f"relax.register_pipeline: pipeline {name!r} is already registered")

    def register(factory: Any) -> Any:
        PIPELINE_MAP[name] = factory
        return factory

    return register


__all__ = [
    "DEFAULT_PIPELINE",
    "GPU_DEFAULT_PIPELINE",
    "GPU_GRAPH_PIPELINE",
    "GRAPH_PIPELINE",
    "PIPELINE_MAP",
    "Step",
    "compile",
    "default_passes",
    "get_pipeline",
    "register_pipeline",
    "run_default_pipeline",
]
