"""Compilation targets (`Target("llvm -mcpu=...")`) and host CPU detection."""

from .compile import compile_llvm_ir, emit_assembly
from .target import (
    SUPPORTED_KINDS,
    Target,
    TargetKind,
    enabled_features,
    host_cpu_features,
    host_cpu_name,
    initialize_llvm,
)

__all__ = [
    "SUPPORTED_KINDS",
    "Target",
    "TargetKind",
    "compile_llvm_ir",
    "emit_assembly",
    "enabled_features",
    "host_cpu_features",
    "host_cpu_name",
    "initialize_llvm",
]
