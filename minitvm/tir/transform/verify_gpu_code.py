"""Checks of a device kernel against its target's limits (TVM's VerifyGPUCode): threads per
block and shared memory per block. Each limit is one row of `_LIMITS`: what is measured, the
Target attribute it must not exceed, and how to fix a kernel that does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...error import BuildError
from ..expr import IntImm, IterVar
from ..function import PrimFunc
from ..functor import Visitor
from ..stmt import Allocate, AttrStmt
from .thread_sync import allocated_scope


class _Usage(Visitor):
    def __init__(self) -> None:
        self.threads: dict[str, object] = {}
        self.shared: list[tuple[str, int]] = []  # (buffer, bytes)

    def visit_AttrStmt(self, attr: AttrStmt) -> None:
        if attr.attr_key == "thread_extent" and isinstance(attr.node, IterVar):
            self.threads[attr.node.thread_tag] = attr.value
        self.generic_visit(attr)

    def visit_Allocate(self, alloc: Allocate) -> None:
        if allocated_scope(alloc).startswith("shared"):
            size = alloc.dtype.bits * alloc.dtype.lanes // 8
            for e in alloc.extents:
                size *= e.value if isinstance(e, IntImm) else 0
            self.shared.append((alloc.buffer_var.name, size))
        self.generic_visit(alloc)


def _threads_per_block(u: _Usage) -> tuple[int, str]:
    total, parts = 1, []
    for tag, ext in u.threads.items():
        if tag.startswith("threadIdx") and isinstance(ext, IntImm):
            total *= ext.value
            parts.append(f"{tag}={ext.value}")
    return total, " x ".join(parts) or "none"


def _shared_bytes(u: _Usage) -> tuple[int, str]:
    return sum(b for _, b in u.shared), ", ".join(f"'{n}' {b} B" for n, b in u.shared)


@dataclass(frozen=True)
class _Limit:
    measure: Callable[[_Usage], tuple[int, str]]
    attr: str  # Target property giving the limit
    what: str
    fix: str


_LIMITS = (
    _Limit(_threads_per_block, "max_num_threads", "threads per block",
           "split the loops bound to threadIdx by smaller factors (bind fewer threads) or "
           "move work to a serial inner loop"),
    _Limit(_shared_bytes, "max_shared_memory_per_block", "bytes of shared memory",
           "cache smaller tiles in 'shared' (smaller split factors around the compute_at loop)"),
)  # fmt: skip


def verify_gpu_code(kernel: PrimFunc, target) -> None:
    """Raise BuildError when `kernel` exceeds one of `target`'s per-block limits."""
    usage = _Usage()
    usage.visit(kernel.body)
    name = kernel.attrs.get("global_symbol", "kernel")
    for limit in _LIMITS:
        got, detail = limit.measure(usage)
        cap = getattr(target, limit.attr, None)
        if cap is not None and got > cap:
            raise BuildError(
                f"kernel '{name}' uses {got} {limit.what} ({detail}), over the limit {cap} of "
                f"target '{target}' ({limit.attr}); {limit.fix}"
            )


def VerifyGPUCode(target):
    """A check pass over every device kernel of an IRModule; returns the module unchanged."""
    from ...ir.transform import Pass

    def run(mod):
        for _, func in mod.functions_items():
            if isinstance(func, PrimFunc) and func.attrs.get("calling_conv") == 2:
                verify_gpu_code(func, target)
        return mod

    return Pass(run, "VerifyGPUCode")
