"""Compilation targets (`Target("llvm -mcpu=...")`) and host CPU detection."""

from . import tag
from .compile import compile_llvm_ir, emit_assembly
from .host import list_cpus, list_features
from .tag import list_tags, register_tag
from .target import (
    SUPPORTED_KINDS,
    Target,
    TargetKind,
    cuda,
    enabled_features,
    host_cpu_features,
    host_cpu_name,
    initialize_llvm,
    unavailable_reason,
)

__all__ = [
    "SUPPORTED_KINDS",
    "Target",
    "TargetKind",
    "compile_llvm_ir",
    "cuda",
    "emit_assembly",
    "enabled_features",
    "host_cpu_features",
    "host_cpu_name",
    "initialize_llvm",
    "list_cpus",
    "list_features",
    "list_tags",
    "register_tag",
    "tag",
    "unavailable_reason",
]
