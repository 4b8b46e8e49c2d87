"""`detect_buffer_access_lca`: for each buffer, the innermost loop or block enclosing all of its
accesses (TVM's `tir.analysis.detect_buffer_access_lca`)."""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer
from ..expr import BufferLoad, Var
from ..function import PrimFunc
from ..functor import Visitor
from ..stmt import Block, BufferStore, For


class _AccessPaths(Visitor):
    """Records, per buffer, the common prefix of the loop/block stacks of its accesses."""

    def __init__(self, func: PrimFunc) -> None:
        self.stack: list[Any] = []
        self.paths: dict[int, list[Any]] = {}
        self.buffers: dict[int, Buffer] = {}
        self.by_data: dict[int, Buffer] = {}
        for buf in func.buffer_map.values():
            self.track(buf)

    def track(self, buf: Buffer) -> None:
        self.buffers.setdefault(id(buf), buf)
        self.by_data.setdefault(id(buf.data), buf)

    def touch(self, buf: Buffer) -> None:
        if id(buf) not in self.buffers:
            return  # a low-level buffer (DeclBuffer / Allocate) is not tracked, as in TVM
        old = self.paths.get(id(buf))
        if old is None:
            self.paths[id(buf)] = list(self.stack)
            return
        common = 0
        while common < min(len(old), len(self.stack)) and old[common] is self.stack[common]:
            common += 1
        del old[common:]

    def visit_Buffer(self, buf: Buffer) -> None:
        return  # a buffer's own fields (its data var, shape) are not accesses

    def visit_Var(self, v: Var) -> None:
        buf = self.by_data.get(id(v))
        if buf is not None:  # an opaque access through the data pointer (T.evaluate(B.data))
            self.touch(buf)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self.touch(load.buffer)
        self.visit(load.indices)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.touch(store.buffer)
        self.visit(store.value)
        self.visit(store.indices)

    def visit_For(self, loop: For) -> None:
        self.visit(loop.min)
        self.visit(loop.extent)
        self.stack.append(loop)
        self.visit(loop.body)
        self.stack.pop()

    def visit_Block(self, block: Block) -> None:
        self.stack.append(block)
        for buf in block.alloc_buffers:
            self.track(buf)
        for match in block.match_buffers:
            self.touch(match.source.buffer)  # matching is an access of the source, here
            self.visit(match.source.region)
            self.track(match.buffer)
        if block.init is not None:
            self.visit(block.init)
        self.visit(block.body)
        self.stack.pop()


def _lift_out_of_kernel(buf: Buffer, path: list[Any]) -> list[Any]:
    """A global buffer is shared by all thread blocks: its LCA is at most the outermost loop
    bound to blockIdx (it cannot live inside one block)."""
    if buf.storage_scope != "global":
        return path
    for depth, node in enumerate(path):
        binding = getattr(node, "thread_binding", None)
        if isinstance(node, For) and binding is not None and "blockIdx" in binding.thread_tag:
            return path[: depth + 1]
    return path


def detect_buffer_access_lca(func: PrimFunc) -> dict[Buffer, Any]:
    """Map each buffer of `func` (parameters, `alloc_buffer`s, `match_buffer`s) that is accessed
    to the innermost For or Block enclosing all its accesses; None means the function body.

    Accesses are loads, stores, uses of the data pointer and `match_buffer` sources; the
    declared `T.reads`/`T.writes` regions are not.
    """
    paths = _AccessPaths(func)
    paths.visit(func.body)
    out: dict[Buffer, Any] = {}
    for key, path in paths.paths.items():
        buf = paths.buffers[key]
        path = _lift_out_of_kernel(buf, path)
        out[buf] = path[-1] if path else None
    return out
