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
    Step(("DecomposeOpsForInference",), 1),
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
        return relax_build(mod, target=target)
    if isinstance(mod, IRModule | PrimFunc):
        return driver.build(mod, target=target)
    raise BuildError(
        f"tvm.compile: expected an IRModule, a tir.PrimFunc or a relax.Function, got "
        f"{type(mod).__name__}"
    )


__all__ = [
    "DEFAULT_PIPELINE",
    "GPU_DEFAULT_PIPELINE",
    "GPU_GRAPH_PIPELINE",
    "GRAPH_PIPELINE",
    "Step",
    "compile",
    "default_passes",
    "run_default_pipeline",
]
