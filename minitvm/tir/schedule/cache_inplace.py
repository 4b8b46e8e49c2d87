"""cache_inplace: one block that reads and writes the same buffer gets a local copy of its window,
read in before the block and written back after it (two stages around it)."""

from __future__ import annotations

from typing import Any

from ..buffer import decl_buffer
from ..expr import (
    GE,
    LE,
    binary,
)
from ..function import PrimFunc
from ..stmt import BlockRealize, seq
from .cache import _apply, _indexed_region, _relaxed, _Rename, _Scope, _Site, _stage
from .common import (
    add_root_alloc,
    schedule_error,
    unique_name,
)
from .tree import Path


def cache_inplace(
    func: PrimFunc, r: BlockRealize, r_path: Path, index: Any, scope: str
) -> tuple[PrimFunc, str, str]:
    """Stage a buffer that `r` reads and writes in place: copy it into a `scope` cache right
    before `r`, let `r` work on the cache, and copy the cache back right after."""
    name = r.block.name_hint
    what = f"cache_inplace(block '{name}', read_buffer_index={index}, storage_scope={scope!r})"
    reads = r.block.reads
    picked = _indexed_region(func, what, r, reads, index, "reads", scope)
    buf = picked.buffer
    written = [rg for rg in r.block.writes if rg.buffer is buf]
    if not written:
        raise schedule_error(
            func,
            f"{what}: block '{name}' reads {buf.name} but does not write it; use cache_read",
            r,
        )
    sc = _Scope(func, r_path)
    ana = sc.analyzer(sc.path_of(r))
    window = _relaxed(sc, picked, r, [], ana)
    wrote = _relaxed(sc, written[0], r, [], ana)
    # the copy back writes the whole window: elements `r` leaves alone must hold their old
    # values, which they do only when the window is what `r` read (copied in) in the first place
    if (
        window is None
        or wrote is None
        or not all(
            ana.can_prove(binary(GE, lo2, lo)) and ana.can_prove(binary(LE, hi2, hi))
            for (lo, hi), (lo2, hi2) in zip(window, wrote)
        )
    ):
        raise schedule_error(
            func,
            f"{what}: cannot prove that block '{name}' writes only inside the part of "
            f"{buf.name} it reads; cache_inplace copies that part in and back",
            r,
        )
    read_name = unique_name(func, f"{buf.name}_{scope}")
    cache = decl_buffer(buf.shape, buf.dtype, read_name, scope=scope)
    copy_in = _stage(buf, cache, read_name, window, False, True, None, ana)
    placeholder = add_root_alloc(func, cache)  # makes the first name taken for unique_name
    write_name = unique_name(placeholder, f"{buf.name}_{scope}")
    copy_out = _stage(cache, buf, write_name, window, False, False, None, ana)
    rename = _Rename(buf, cache)
    new_r = r.replace(block=rename.visit(r.block))
    site = _Site(None, None, 0)
    table = {id(r): seq(copy_in, new_r, copy_out)}
    keep = [r]  # noqa: F841  (ids in `table` stay unique while we rebuild)
    return _apply(func, sc, site, None, cache, table), read_name, write_name
