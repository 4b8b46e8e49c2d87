"""Compile each distinct kernel once. Structurally identical PrimFuncs of one build share one
lowering and one machine-code body (the others become aliases of its entry symbol), and two
bounded process-level caches reuse a kernel's lowering, and a whole build's object code, when
the same functions are built again (a benchmark building a model twice, a test suite).

A kernel's key is its structural hash without its name, plus the bit patterns of its float
constants (structural equality has 0.0 == -0.0). Twins in one build may differ in the names of
params, buffers and shape vars (relax names them after its variables): the alias's FuncInfo
takes its own. The caches also key on those names, since a cached lowering or object carries
them. A key match is confirmed with structural_equal before anything is reused, so a hash
collision can only cost a cache miss.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ..ir.node import FrozenDict, Node
from ..ir.structural import structural_equal, structural_hash
from ..tir.expr import FloatImm
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import For

LOWERED_CAPACITY = 512  # lowered kernels kept (a ResNet-50 build has ~60 distinct ones)
OBJECT_CAPACITY = 8  # whole-build objects kept (a few MB each)
_IMPORT_PRAGMA = "pragma_import_llvm"  # its IR may come from a file: never reuse such objects


@dataclass(frozen=True)
class KernelKey:
    """What identifies a kernel's compiled code and metadata, its name aside."""

    hash: int
    floats: tuple[str, ...]


@dataclass(frozen=True)
class _Kernel:
    func: PrimFunc  # as given (named)
    key: KernelKey
    names: tuple[str, ...]  # of params, buffers and shape vars (what FuncInfo shows)
    imports_llvm: bool
    size: int  # IR nodes in the body: the cost estimate that balances a parallel build


class _LRU:
    """A dict that forgets its least recently used entry beyond `capacity` (thread-safe: builds
    may run in several threads)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.capacity:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self.items.clear()


_LOWERED = _LRU(LOWERED_CAPACITY)  # (KernelKey, flags) -> (input func, lowered func)
_OBJECTS = _LRU(OBJECT_CAPACITY)  # (target, kernel keys, aliases) -> (input funcs, result)
STATS = {"lowered_hits": 0, "lowered_misses": 0, "object_hits": 0, "object_misses": 0}


def clear() -> None:
    """Forget every cached lowering and object (e.g. after patching a pass in a test)."""
    _LOWERED.clear()
    _OBJECTS.clear()
    for k in STATS:
        STATS[k] = 0


def _unnamed(func: PrimFunc) -> PrimFunc:
    attrs = {k: v for k, v in func.attrs.items() if k != "global_symbol"}
    return func.replace(attrs=FrozenDict(attrs))


def _kernel(func: PrimFunc) -> _Kernel:
    floats: list[str] = []
    imports = [False]
    size = [0]

    def visit(n: Node) -> None:
        size[0] += 1
        if isinstance(n, FloatImm):
            floats.append(float(n.value).hex())
        elif isinstance(n, For) and _IMPORT_PRAGMA in n.annotations:
            imports[0] = True

    post_order_visit(func.body, visit)
    names = [p.name for p in func.params]
    for buf in func.buffer_map.values():
        names += [buf.name, *(getattr(d, "name", "") for d in buf.shape)]
    key = KernelKey(structural_hash(_unnamed(func)), tuple(floats))
    return _Kernel(func, key, tuple(names), imports[0], size[0])


def _same(a: PrimFunc, b: PrimFunc) -> bool:
    return structural_equal(_unnamed(a), _unnamed(b))


def lower_unique(
    funcs: list[PrimFunc], lower: Callable[[PrimFunc], PrimFunc], flags: Hashable
) -> tuple[list[PrimFunc], list[tuple[PrimFunc, str]], list[_Kernel]]:
    """The lowered distinct functions in first-seen order, (function, name of its identical
    twin) for the others, and every function's _Kernel (for `cached_object`). `flags` are the
    settings lowering depends on besides the function (cache key); None disables the cache."""
    distinct, aliases, kernels = distinct_kernels(funcs)
    return [lowered(k, lower, flags) for k in distinct], aliases, kernels


def distinct_kernels(
    funcs: list[PrimFunc],
) -> tuple[list[_Kernel], list[tuple[PrimFunc, str]], list[_Kernel]]:
    """The distinct kernels in first-seen order, (function, name of its identical twin) for the
    others, and every function's _Kernel."""
    kept: dict[KernelKey, list[_Kernel]] = {}
    kernels = [_kernel(func) for func in funcs]
    distinct: list[_Kernel] = []
    aliases: list[tuple[PrimFunc, str]] = []
    for kernel in kernels:
        func = kernel.func
        twin = next((k for k in kept.get(kernel.key, ()) if _same(k.func, func)), None)
        if twin is not None:
            aliases.append((func, twin.func.name))
            continue
        kept.setdefault(kernel.key, []).append(kernel)
        distinct.append(kernel)
    return distinct, aliases, kernels


def lowered(kernel: _Kernel, lower: Callable[[PrimFunc], PrimFunc], flags: Hashable) -> PrimFunc:
    func = kernel.func
    if flags is None:
        return lower(func)
    hit = _LOWERED.get((kernel.key, kernel.names, flags))
    if hit is not None and _same(hit[0], func):
        STATS["lowered_hits"] += 1
        return hit[1].with_attr("global_symbol", func.name)
    STATS["lowered_misses"] += 1
    out = lower(func)
    _LOWERED.put((kernel.key, kernel.names, flags), (func, out))
    return out


def cached_object(
    kernels: list[_Kernel],
    aliases: list[tuple[PrimFunc, str]],
    target: str,
    build: Callable,
    flags: Hashable = (),
) -> Any:
    """`build()`'s result for these kernels (by name), target and lowering `flags`, reused
    when the very same functions were built before (a hit lowers nothing). Kernels importing
    LLVM IR, and builds with `flags` None (IR dumps asked for), are always rebuilt."""
    if flags is None or any(k.imports_llvm for k in kernels):
        return build()
    twins = tuple((f.name, twin) for f, twin in aliases)
    key = (target, tuple((k.func.name, k.key, k.names) for k in kernels), twins, flags)
    hit = _OBJECTS.get(key)
    if hit is not None and all(_same(a, k.func) for a, k in zip(hit[0], kernels)):
        STATS["object_hits"] += 1
        return hit[1]
    STATS["object_misses"] += 1
    result = build()
    _OBJECTS.put(key, (tuple(k.func for k in kernels), result))
    return result
