"""Block scopes: the child blocks of a scope block and the dependencies between them.

Within one scope, blocks run in program order. For a later block `dst` and an earlier block
`src` that touch the same buffer, the dependency is RAW (src writes, dst reads), WAW (both
write) or WAR (src reads, dst writes) — one Dependency per kind and pair, as TVM's BlockScope.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from ..expr import BufferLoad
from ..functor import post_order_visit
from ..stmt import Block


class DepKind(IntEnum):
    """The kind of a dependency between two blocks of a scope."""

    RAW = 0
    WAW = 1
    WAR = 2
    OPAQUE = 3


class Dependency:
    """`src` must run before `dst` (both StmtSRefs of blocks in one scope)."""

    __slots__ = ("dst", "kind", "src")

    def __init__(self, src: Any, dst: Any, kind: DepKind) -> None:
        self.src, self.dst, self.kind = src, dst, DepKind(kind)

    def same_as(self, other: Any) -> bool:
        return self is other

    def __repr__(self) -> str:
        return (
            f"Dependency({self.src.stmt.name_hint} -> {self.dst.stmt.name_hint}, {self.kind.name})"
        )


def read_buffers(block: Block) -> list[Any]:
    """Buffers a block reads: its declared reads plus what its body loads (a reduction's
    accumulator is often missing from the declared reads)."""
    out = {id(r.buffer): r.buffer for r in block.reads}
    post_order_visit(
        block.body,
        lambda n: out.setdefault(id(n.buffer), n.buffer) if isinstance(n, BufferLoad) else None,
    )
    return list(out.values())


def write_buffers(block: Block) -> list[Any]:
    return list({id(w.buffer): w.buffer for w in block.writes}.values())


class BlockScope:
    """Dependencies among the child blocks (StmtSRefs, program order) of one scope block."""

    def __init__(self, child_srefs: list) -> None:
        self.child_block_srefs = list(child_srefs)
        self._by_src: dict[int, list[Dependency]] = {}
        self._by_dst: dict[int, list[Dependency]] = {}
        readers: dict[int, list] = {}
        writers: dict[int, list] = {}
        for sref in child_srefs:
            block = sref.stmt
            reads, writes = read_buffers(block), write_buffers(block)
            for buf in reads:
                for src in writers.get(id(buf), ()):
                    self._add(src, sref, DepKind.RAW)
            for buf in writes:
                for src in writers.get(id(buf), ()):
                    self._add(src, sref, DepKind.WAW)
                for src in readers.get(id(buf), ()):
                    self._add(src, sref, DepKind.WAR)
            for buf in reads:
                readers.setdefault(id(buf), []).append(sref)
            for buf in writes:
                writers.setdefault(id(buf), []).append(sref)

    def _add(self, src: Any, dst: Any, kind: DepKind) -> None:
        if src is dst:
            return
        existing = self._by_src.get(id(src), [])
        if any(d.dst is dst and d.kind == kind for d in existing):
            return
        dep = Dependency(src, dst, kind)
        self._by_src.setdefault(id(src), []).append(dep)
        self._by_dst.setdefault(id(dst), []).append(dep)

    def get_deps_by_src(self, block: Any) -> list[Dependency]:
        """Dependencies whose source is the block sref `block`."""
        return list(self._by_src.get(id(block), ()))

    def get_deps_by_dst(self, block: Any) -> list[Dependency]:
        """Dependencies whose destination is the block sref `block`."""
        return list(self._by_dst.get(id(block), ()))

    @property
    def stage_pipeline_deps(self) -> bool:
        """No WAR or opaque dependency (a precondition of TVM's stage-pipeline property)."""
        return all(
            d.kind in (DepKind.RAW, DepKind.WAW) for deps in self._by_src.values() for d in deps
        )


__all__ = ["BlockScope", "DepKind", "Dependency"]
