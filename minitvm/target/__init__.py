"""Compilation targets (`Target("llvm -mcpu=...")`) and host CPU detection."""

from . import kinds, tag
from .kinds import KindSpec, compilable_kinds, gpu_kinds, kind_spec, list_kinds, register_kind
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
    "KindSpec",
    "compilable_kinds",
    "gpu_kinds",
    "kind_spec",
    "kinds",
    "list_kinds",
    "register_kind",
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
