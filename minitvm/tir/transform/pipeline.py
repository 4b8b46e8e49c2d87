"""The lowering pipeline: one list of passes from TensorIR blocks to the lowered TIR of
docs/contracts.md §1. Variants are flags on the steps, not second copies of the list."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ... import env
from ...error import ArgumentError, BuildError, MiniTVMError
from ...ir.module import IRModule
from ..analysis.verify import verify_well_formed
from ..analysis.verify_bounds import verify_bounds
from ..function import PrimFunc
from ..functor import allows_deep_recursion
from ..names import ATTR_NOALIAS
from .compact_buffer_allocation import compact_buffer_allocation
from .convert_blocks_to_loops import convert_blocks_to_loops
from .flatten_buffer import flatten_buffer
from .loop_partition import loop_partition
from .lower_device_storage import lower_device_storage
from .lower_init_block import lower_init_block
from .lower_thread_binding import lower_thread_binding
from .plan_buffer_allocation import plan_and_update_buffer_allocation_location
from .remove_no_op import remove_no_op
from .simplify import simplify
from .thread_sync import thread_sync
from .unroll_loop import unroll_loop
from .vectorize_loop import vectorize_loop


@dataclass(frozen=True)
class Step:
    """One pass of the pipeline and the form of TIR it leaves behind."""

    fn: Callable[[PrimFunc], PrimFunc]
    blocks_lowered: bool  # no Block remains after this step
    flat: bool  # accesses are 1-D after this step; `lower()` stops before the first flat step


PIPELINE: tuple[Step, ...] = (
    Step(lower_init_block, blocks_lowered=False, flat=False),
    Step(convert_blocks_to_loops, blocks_lowered=True, flat=False),
    Step(plan_and_update_buffer_allocation_location, blocks_lowered=True, flat=False),
    Step(compact_buffer_allocation, blocks_lowered=True, flat=False),
    Step(simplify, blocks_lowered=True, flat=False),
    Step(remove_no_op, blocks_lowered=True, flat=False),
    Step(flatten_buffer, blocks_lowered=True, flat=True),
    Step(simplify, blocks_lowered=True, flat=True),
    Step(loop_partition, blocks_lowered=True, flat=True),
    Step(vectorize_loop, blocks_lowered=True, flat=True),
    Step(unroll_loop, blocks_lowered=True, flat=True),
    Step(simplify, blocks_lowered=True, flat=True),
    Step(remove_no_op, blocks_lowered=True, flat=True),
)

# after PIPELINE, for functions with loops bound to GPU threads (any target: `tvm.lower` prints
# the launch scopes and barriers too); SplitHostDevice then cuts the kernels out (driver)
GPU_PIPELINE: tuple[Step, ...] = (
    Step(lower_thread_binding, blocks_lowered=True, flat=False),
    Step(lower_device_storage, blocks_lowered=True, flat=False),
    Step(thread_sync, blocks_lowered=True, flat=False),
)


@allows_deep_recursion
def lower_primfunc(
    func: PrimFunc, *, flatten: bool = True, verify: bool | None = None, gpu: bool = False
) -> PrimFunc:
    """Run the pipeline on `func`. `flatten=False` stops at the readable loop nest (`tvm.lower`);
    `gpu=True` adds GPU_PIPELINE (thread scopes, shared storage, barriers).

    `verify` (default: MINITVM_VERIFY_IR) checks well-formedness after every pass;
    MINITVM_DUMP_IR=dir writes `NN_passname.py` with the script after every pass.
    """
    verify = env.verify_ir() if verify is None else verify
    dump_dir = env.dump_ir_dir()
    if ATTR_NOALIAS not in func.attrs:
        func = func.with_attr(ATTR_NOALIAS, True)
    if verify:
        verify_well_formed(func, pass_name="(input of lowering)")
    verify_bounds(func)  # always: a provably out-of-bounds access is a build error
    steps = [s for s in PIPELINE if flatten or not s.flat]
    if gpu:
        steps += GPU_PIPELINE
    steps = _with_user_passes(steps)
    for n, step in enumerate(steps):
        func = step.fn(func)
        name = step.fn.__name__
        if dump_dir:
            _dump(dump_dir, n, name, func)
        if verify:
            flat = step.flat or (flatten and step in GPU_PIPELINE)
            verify_well_formed(
                func, allow_blocks=not step.blocks_lowered, flat=flat, pass_name=name
            )
    return func


# PassContext(config={"tir.add_lower_pass": [(phase, pass), ...]}): TVM's phases 0-3. Phase 0
# sees the TensorIR blocks; phases 1-3 run in order after the last step (TVM places 1 and 2
# earlier, but our thread scopes exist only after the GPU steps, and a check such as
# verify_gpu_code must see them).
_USER_PASSES = "tir.add_lower_pass"


def _with_user_passes(steps: list[Step]) -> list[Step]:
    """`steps` with the passes the current PassContext adds (none: `steps` itself)."""
    phases = _user_phases()
    if not phases:
        return steps
    first = [_user_step(p, 0, steps[0]) for p in phases.pop(0, [])]
    last = [_user_step(p, n, steps[-1]) for n in sorted(phases) for p in phases[n]]
    return first + steps + last


def _user_phases() -> dict[int, list]:
    from ...ir.transform import PassContext

    entries = PassContext.current().config.get(_USER_PASSES)
    if not entries:
        return {}
    if not isinstance(entries, list | tuple):
        raise ArgumentError(
            f'PassContext config "{_USER_PASSES}" is a list of (phase, pass) pairs, got '
            f"{type(entries).__name__}"
        )
    phases: dict[int, list] = {}
    for entry in entries:
        ok = isinstance(entry, list | tuple) and len(entry) == 2
        if not (ok and type(entry[0]) is int and 0 <= entry[0] <= 3 and callable(entry[1])):
            raise ArgumentError(
                f'PassContext config "{_USER_PASSES}": each entry is (phase 0-3, pass), got '
                f"{entry!r}"
            )
        phases.setdefault(entry[0], []).append(entry[1])
    return phases


def _user_step(user_pass: Callable, phase: int, like: Step) -> Step:
    """A Step running `user_pass` (a pass over modules or PrimFuncs) on the function."""
    name = getattr(user_pass, "name", None) or getattr(user_pass, "__name__", "pass")

    def run(func: PrimFunc) -> PrimFunc:
        out = user_pass(IRModule({"main": func}))
        if isinstance(out, IRModule) and len(out.functions) == 1:
            (out,) = out.functions.values()
        if not isinstance(out, PrimFunc):
            raise BuildError(
                f'"{_USER_PASSES}" phase {phase} pass {name!r} returned {type(out).__name__}; '
                "it must give back the module with its one PrimFunc"
            )
        return out

    run.__name__ = f"user_phase{phase}_{name}"
    return Step(run, blocks_lowered=like.blocks_lowered, flat=like.flat)


def _dump(directory: str, n: int, name: str, func: PrimFunc) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
        symbol = func.attrs.get("global_symbol", "main")
        suffix = "" if symbol == "main" else f"_{symbol}"  # one file per function of a module
        path = os.path.join(directory, f"{n:02d}_{name}{suffix}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"# {symbol} after {name}\n{func.script()}\n")
    except OSError as err:
        raise MiniTVMError(
            f"MINITVM_DUMP_IR={directory!r}: cannot write the IR dump: {err}"
        ) from err
