"""Small builders for intrinsic PrimFuncs (tir must not import the script parser).

An intrinsic function takes buffers as parameters (handles bound in buffer_map) and has a root
block with declared regions; a description's root holds loops around one block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...ir.dtype import DataType
from ...ir.node import FrozenDict
from ..analysis.region import infer_access_regions
from ..buffer import Buffer, decl_buffer
from ..expr import IntImm, IterType, IterVar, Range, Var
from ..function import PrimFunc
from ..stmt import Block, BlockRealize, BufferRegion, For, ForKind, Stmt

TRUE = IntImm("bool", 1)


def buffers(specs: Sequence[tuple], **common: Any) -> list[Buffer]:
    """One buffer per (name, shape, dtype[, scope]) with the given common options."""
    out = []
    for name, shape, dtype, *rest in specs:
        scope = rest[0] if rest else common.get("scope", "global")
        options = {k: v for k, v in common.items() if k != "scope"}
        out.append(decl_buffer(tuple(shape), dtype, name, scope=scope, **options))
    return out


def whole(buf: Buffer) -> BufferRegion:
    return BufferRegion.full_region(buf)


def intrin_func(name: str, params: list[Buffer], reads: list, writes: list, body: Stmt) -> PrimFunc:
    """`def name(A, B, ...)` whose root block declares `reads`/`writes` and runs `body`."""
    handles = [Var(b.name, DataType("handle")) for b in params]
    root = Block((), tuple(reads), tuple(writes), "root", body)
    return PrimFunc(
        tuple(handles),
        BlockRealize((), TRUE, root),
        None,
        FrozenDict(dict(zip(handles, params))),
        FrozenDict({"global_symbol": name}),
    )


def loop_nest(
    extents: Sequence[int],
    kinds: str,
    body: Callable[[list[Var]], Stmt],
    names: str = "ijk",
    *,
    block: str | None = None,
    for_kinds: Sequence[ForKind] | None = None,
) -> Stmt:
    """Loops over `extents`; inside, `body(vars)`: the block iterators (kinds "S"/"R") when
    `block` names a block, else the loop variables themselves."""
    loops = [Var(n, "int32") for n in names[: len(extents)]]
    if block is None:
        inner = body(loops)
    else:
        iters = [
            IterVar(Range.from_min_extent(0, e), Var(f"v{n}", "int32"), _KIND[k])
            for n, e, k in zip(names, extents, kinds)
        ]
        blk = Block(tuple(iters), (), (), block, body([iv.var for iv in iters]))
        reads, writes = infer_access_regions(blk)
        inner = BlockRealize(tuple(loops), TRUE, blk.replace(reads=reads, writes=writes))
    kinds_of = for_kinds or [ForKind.SERIAL] * len(extents)
    for var, extent, kind in reversed(list(zip(loops, extents, kinds_of))):
        inner = For(var, 0, extent, kind, inner)
    return inner


_KIND = {"S": IterType.DataPar, "R": IterType.CommReduce}
