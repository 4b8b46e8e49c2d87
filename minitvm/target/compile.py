"""LLVM IR text -> optimised IR + host object code, for a Target (used by codegen and by tests)."""

from __future__ import annotations

import llvmlite.binding as llvm

from ..error import BuildError
from .target import Target


def compile_llvm_ir(llvm_ir: str, target: str | Target = "llvm") -> tuple[str, bytes]:
    """Parse, verify, optimise (new pass manager, O3) and emit an ELF object: (optimised_ir, object)."""
    target = Target(target)
    tm = target.create_target_machine()
    try:
        mod = llvm.parse_assembly(llvm_ir)
        mod.verify()
    except RuntimeError as err:
        raise BuildError(f"invalid LLVM IR for target '{target}': {err}") from err
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    options = llvm.create_pipeline_tuning_options(speed_level=min(target.opt_level, 3))
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(mod, builder)
    return str(mod), tm.emit_object(mod)


def emit_assembly(llvm_ir: str, target: str | Target = "llvm") -> str:
    """Assembly text for already-optimised LLVM IR (no further optimisation)."""
    tm = Target(target).create_target_machine()
    return tm.emit_assembly(llvm.parse_assembly(llvm_ir))
