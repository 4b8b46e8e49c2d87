"""The one registry of target kinds: what each kind is, which device runs it, how its options
parse and whether this build has a code generator for it.

Every other table (the driver's and the relax pipeline's GPU dispatch, the device code
generator, `Target.get_target_device_type`, error messages, the command line's --target) reads
this one. A new kind is one `register_kind(KindSpec(...))` call plus its code generator and
runtime; `tests/target/dummy_kind.py` shows a kind added in one file.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..error import TargetError


@dataclass(frozen=True)
class KindSpec:
    """One target kind.

    name: what a target string starts with ("llvm", "opencl").
    device: the runtime device it runs on ("cpu", "cuda", "opencl"), with its DLPack code.
    keys: TVM's target keys (schedule dispatch), e.g. ("cuda", "gpu").
    gpu: kernels run on a device (thread binding, host/device split) rather than the host CPU.
    codegen: the device-code flavour the GPU code generator emits ("opencl" C or "cuda" PTX);
        None where there is none. For a CPU kind, whether it compiles is `compiles`.
    compiles: this build has a code generator and runtime for it (a kind that only parses
        describes a device; building for it is a clear error).
    defaults: device attributes lowering checks against (`-name=value` overrides them).
    refusal: for a kind that is known but not offered, the message that says why and what
        to use instead (the Target string is refused with it).
    """

    name: str
    device: str
    device_type: int
    keys: tuple[str, ...]
    gpu: bool = False
    codegen: str | None = None
    compiles: bool = False
    defaults: Mapping[str, int] = field(default_factory=dict)
    refusal: str | None = None


_KINDS: dict[str, KindSpec] = {}


def register_kind(spec: KindSpec, override: bool = False) -> KindSpec:
    """Add a target kind; TargetError when the name is taken (unless override=True)."""
    if not isinstance(spec, KindSpec):
        raise TargetError(f"register_kind: expected a KindSpec, got {type(spec).__name__}")
    if spec.name in _KINDS and not override:
        raise TargetError(
            f"register_kind: target kind '{spec.name}' is already registered; pass "
            "override=True to replace it"
        )
    _KINDS[spec.name] = spec
    return spec


def unregister_kind(name: str) -> None:
    """Remove a kind added by register_kind (tests add and remove dummy kinds)."""
    _KINDS.pop(name, None)


def list_kinds() -> tuple[str, ...]:
    """Every kind a Target string may start with."""
    return tuple(name for name, spec in _KINDS.items() if spec.refusal is None)


def compilable_kinds() -> tuple[str, ...]:
    """The kinds this build compiles and runs (llvm first, then the GPU kinds)."""
    return tuple(name for name, spec in _KINDS.items() if spec.compiles)


def gpu_kinds() -> frozenset[str]:
    """The compilable kinds whose kernels run on a device (the GPU lowering and pipeline)."""
    return frozenset(name for name, spec in _KINDS.items() if spec.compiles and spec.gpu)


def kind_spec(name: str, target: str | None = None) -> KindSpec:
    """The registered kind `name`; a TargetError listing the kinds (and the closest) if none."""
    spec = _KINDS.get(name)
    if spec is not None and spec.refusal is None:
        return spec
    where = f"target '{target}'" if target is not None else f"target kind '{name}'"
    if spec is not None:
        raise TargetError(f"{where}: {spec.refusal}")
    close = difflib.get_close_matches(name, list_kinds(), n=2, cutoff=0.6)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    in_target = f" in '{target}'" if target is not None else ""
    raise TargetError(
        f"unknown target kind '{name}'{in_target}{hint}; known kinds: {', '.join(list_kinds())} "
        f"(compiled here: {', '.join(compilable_kinds())})"
    )


_CUDA_DEFAULTS = {"max_num_threads": 1024, "max_shared_memory_per_block": 49152,
                  "thread_warp_size": 32}  # fmt: skip
_OPENCL_DEFAULTS = {"max_num_threads": 256, "max_shared_memory_per_block": 32768,
                    "thread_warp_size": 1}  # fmt: skip

for _spec in (
    KindSpec("llvm", "cpu", 1, ("cpu",), compiles=True),
    KindSpec("cuda", "cuda", 2, ("cuda", "gpu"), gpu=True, codegen="cuda", compiles=True,
             defaults=_CUDA_DEFAULTS),
    KindSpec("opencl", "opencl", 4, ("opencl", "gpu"), gpu=True, codegen="opencl",
             compiles=True, defaults=_OPENCL_DEFAULTS),
    # parse only: a Target describes the device, building for it says there is no codegen
    KindSpec("nvptx", "cuda", 2, ("nvptx", "gpu"), gpu=True, codegen="cuda",
             defaults=_CUDA_DEFAULTS),
    KindSpec("vulkan", "vulkan", 7, ("vulkan", "gpu"), gpu=True),
    KindSpec("metal", "metal", 8, ("metal", "gpu"), gpu=True),
    KindSpec("rocm", "rocm", 10, ("rocm", "gpu"), gpu=True),
    KindSpec("c", "cpu", 1, ("cpu",),
             refusal="the C source backend is not supported yet; use 'llvm'"),
):  # fmt: skip
    register_kind(_spec)
