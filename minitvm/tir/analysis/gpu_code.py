"""What GPU kernels use, measured against per-block limits (`tvm.tir.analysis.verify_gpu_code`).

One measurement per limit: `Usage` walks a function once, recording for every kernel (a
top-level nest of thread_extent scopes) its thread extents, shared and local bytes, and for the
function its vector accesses and vthread loops; each row of `MEASURES` reads one constraint's
quantity from that record. `gpu_code_errors` checks TVM's constraint names
(`tvm.tir.analysis.verify_gpu_code`); the VerifyGPUCode pass (tir/transform/verify_gpu_code.py)
checks a kernel against its Target with the same measurements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...error import ArgumentError
from ..expr import BufferLoad, Cast, IntImm, IterVar, Ramp
from ..function import PrimFunc
from ..functor import Visitor, post_order_visit
from ..stmt import Allocate, AttrStmt, BufferStore, DeclBuffer, For, ForKind

_LANE_AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")



def allocated_scope(alloc: Allocate) -> str:
    """The storage scope of an Allocate (its annotation, else its DeclBuffer's buffer)."""
    scope = alloc.annotations.get("storage_scope")
    if scope is None and isinstance(alloc.body, DeclBuffer):
        scope = alloc.body.buffer.scope()
    return scope or "global"


@dataclass
class _Kernel:
    threads: dict[str, int] = field(default_factory=dict)  # tag -> constant launch extent
    shared: list[tuple[str, int]] = field(default_factory=list)  # (buffer, bytes)
    local: list[tuple[str, int]] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # one tag launched with two extents


class Usage(Visitor):
    def __init__(self) -> None:
        self.kernels: list[_Kernel] = []
        self.vectors: list[tuple[int, str]] = []  # (bytes, what)
        self.vthreads: list[tuple[int, str]] = []  # (extent, loop)
        self.depth = 0  # thread_extent scopes we are inside

    def visit_AttrStmt(self, attr: AttrStmt) -> None:
        if attr.attr_key not in ("thread_extent", "virtual_thread"):
            self.generic_visit(attr)
            return
        if self.depth == 0:
            self.kernels.append(_Kernel())
        tag = attr.node.thread_tag if isinstance(attr.node, IterVar) else ""
        if isinstance(attr.value, IntImm):  # symbolic extents are checked at launch
            self._thread(tag, attr.value.value)
        self.depth += 1
        self.generic_visit(attr)
        self.depth -= 1

    def _thread(self, tag: str, extent: int) -> None:
        kernel = self.kernels[-1]
        if tag.startswith(("vthread", "cthread")):
            self.vthreads.append((extent, tag))
            return
        old = kernel.threads.setdefault(tag, extent)
        if old != extent:
            kernel.mismatched.append(f"{tag} launched with extents {old} and {extent}")

    def visit_For(self, loop: For) -> None:
        binding = loop.thread_binding
        virtual = binding is not None and binding.thread_tag.startswith(("vthread", "cthread"))
        if virtual and isinstance(loop.extent, IntImm):
            self.vthreads.append((loop.extent.value, f"loop '{loop.loop_var.name}'"))
        if loop.kind == ForKind.VECTORIZED and isinstance(loop.extent, IntImm):
            self._vectorized(loop)
        self.generic_visit(loop)

    def _vectorized(self, loop: For) -> None:
        """A loop not yet vectorized: each access becomes a vector of `extent` lanes."""
        lanes, name = loop.extent.value, loop.loop_var.name

        def visit(n) -> None:
            if isinstance(n, BufferLoad | BufferStore):
                dtype = n.buffer.dtype
                what = f"{'store to' if isinstance(n, BufferStore) else 'load of'} "
                self.vectors.append((lanes * max(dtype.bits // 8, 1) * dtype.lanes,
                                     f"{what}'{n.buffer.name}' vectorized by loop '{name}'"))  # fmt: skip

        post_order_visit(loop.body, visit)

    def visit_Allocate(self, alloc: Allocate) -> None:
        scope = allocated_scope(alloc)
        if scope == "global":
            annotation = getattr(alloc.buffer_var, "type_annotation", None)
            scope = getattr(annotation, "storage_scope", None) or scope
        nbytes = alloc.dtype.bits * alloc.dtype.lanes // 8
        for e in alloc.extents:
            nbytes *= e.value if isinstance(e, IntImm) else 0  # symbolic: refused elsewhere
        if self.kernels and self.depth > 0:
            name = alloc.buffer_var.name
            if scope.startswith("shared"):
                self.kernels[-1].shared.append((name, nbytes))
            elif scope.startswith(("local", "warp")):
                self.kernels[-1].local.append((name, nbytes))
        self._vector(alloc.dtype, f"buffer '{alloc.buffer_var.name}'")
        self.generic_visit(alloc)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self._vector(load.dtype, f"load of '{load.buffer.name}'", load.indices)
        self.generic_visit(load)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self._vector(store.value.dtype, f"store to '{store.buffer.name}'", store.indices)
        self.generic_visit(store)

    def visit_Cast(self, cast: Cast) -> None:
        self._vector(cast.dtype, f"cast to {cast.dtype}")
        self.generic_visit(cast)

    def _vector(self, dtype, what: str, indices=()) -> None:
        if dtype.lanes > 1:
            strided = any(isinstance(i, Ramp) and not _is_one(i.stride) for i in indices)
            what += " (strided)" if strided else ""
            self.vectors.append((dtype.lanes * max(dtype.bits // 8, 1), f"{what} as {dtype}"))


def _is_one(e) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _threads_per_block(k: _Kernel) -> list[tuple[int, str]]:
    axes = [(t, e) for t, e in k.threads.items() if t.startswith("threadIdx")]
    total = 1
    for _, e in axes:
        total *= e
    return [(total, " x ".join(f"{t}={e}" for t, e in axes) or "none")]


def _memory(kind: str) -> Callable[[_Kernel], list[tuple[int, str]]]:
    def measure(k: _Kernel) -> list[tuple[int, str]]:
        buffers = getattr(k, kind)
        return [(sum(b for _, b in buffers), ", ".join(f"'{n}' {b} B" for n, b in buffers))]

    return measure


def _axis(tag: str) -> Callable[[_Kernel], list[tuple[int, str]]]:
    return lambda k: [(k.threads[tag], tag)] if tag in k.threads else []


@dataclass(frozen=True)
class _Measure:
    what: str
    per_kernel: Callable[[_Kernel], list[tuple[int, str]]] | None = None
    per_function: Callable[[Usage], list[tuple[int, str]]] | None = None


# TVM's constraint names -> what they bound
MEASURES = {
    "max_threads_per_block": _Measure("threads per block", _threads_per_block),
    "max_shared_memory_per_block": _Measure("bytes of shared memory", _memory("shared")),
    "max_local_memory_per_block": _Measure("bytes of local memory", _memory("local")),
    **{f"max_thread_{a[-1]}": _Measure(f"threads along {a}", _axis(a)) for a in _LANE_AXES},
    "max_vthread": _Measure("virtual threads", per_function=lambda u: u.vthreads),
    "max_vector_bytes": _Measure("bytes in one vector", per_function=lambda u: u.vectors),
    "max_kernels": _Measure(
        "kernels", per_function=lambda u: [(len(u.kernels), "kernels launched")]
    ),
}


def violations(usage: Usage, constraints: dict) -> list[tuple[str, int, str, int]]:
    """(constraint, measured, detail, limit) for every limit exceeded."""
    unknown = sorted(set(constraints) - set(MEASURES))
    if unknown:
        raise ArgumentError(
            f"verify_gpu_code: unknown constraint '{unknown[0]}'; known: {sorted(MEASURES)}"
        )
    found = []
    for name, limit in constraints.items():
        limit = int(limit.value if isinstance(limit, IntImm) else limit)
        m = MEASURES[name]
        rows = list(m.per_function(usage)) if m.per_function else []
        if m.per_kernel:
            rows += [r for k in usage.kernels for r in m.per_kernel(k)]
        found += [(name, got, detail, limit) for got, detail in rows if got > limit]
    return found


def gpu_code_errors(func: PrimFunc, constraints: dict) -> list[str]:
    """What in `func` exceeds `constraints` (TVM's names: max_threads_per_block, max_thread_x,
    max_shared_memory_per_block, max_local_memory_per_block, max_vthread, max_vector_bytes,
    max_kernels), and any thread axis launched twice with different extents."""
    usage = Usage()
    usage.visit(func.body)
    errors = [
        f"{got} {MEASURES[name].what} ({detail}) over {name}={limit}"
        for name, got, detail, limit in violations(usage, constraints)
    ]
    return errors + [m for k in usage.kernels for m in k.mismatched]


