"""MultiLevelTiling: tile a reduction block's loops into levels ("SSRSRS" on a CPU, "SSSRRSRS"
on a GPU) with sampled factors, optionally staging its output through a write cache at a tile
level; on a GPU the outer spatial levels are bound (`tile_binds`) and the inputs staged through
shared memory at a reduction level (`reuse_read`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...error import ScheduleError
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.common import const_int
from ._block import (
    TILING_KEY,
    consumers_of,
    func_of,
    has_reduction,
    is_spatial,
    loop_kinds,
    vector_lanes,
    writes_output,
)
from .schedule_rule import ScheduleRule

COOPERATIVE_FETCH = "meta_schedule.cooperative_fetch"  # a staged copy the threads share


@dataclass
class ReuseType:
    """How a tiled block reuses data: req "no" / "may" (with and without) / "must"; `levels`
    are the tile levels (1 = after the first spatial tiles) the cache is computed at."""

    req: str = "may"
    levels: list = field(default_factory=lambda: [1, 2])
    scope: str = "global"

    def __post_init__(self) -> None:
        if self.req not in ("no", "may", "must"):
            raise ScheduleError(f"ReuseType: req must be 'no', 'may' or 'must', got {self.req!r}")


class MultiLevelTiling(ScheduleRule):
    """Tile every loop of a reduction block by `structure` (S: spatial level, R: reduction
    level); the innermost spatial tile of the last spatial loop is a multiple of the target's
    vector lanes when the extent allows, so the vectorizer gets whole registers."""

    def __init__(
        self,
        structure: str = "SSRSRS",
        tile_binds: list | None = None,
        max_innermost_factor: int | None = None,
        vector_load_lens: list | None = None,
        reuse_read: ReuseType | dict | None = None,
        reuse_write: ReuseType | dict | None = None,
        filter_fn=None,
    ) -> None:
        if not structure or set(structure) - {"S", "R"} or "S" not in structure:
            raise ScheduleError(
                f"MultiLevelTiling: structure {structure!r} must be letters S and R with at "
                "least one S (e.g. 'SSRSRS')"
            )
        binds = list(tile_binds or [])
        if len(binds) > len(structure) or "R" in structure[: len(binds)]:
            raise ScheduleError(
                f"MultiLevelTiling: tile_binds {binds} must bind the leading spatial levels of "
                f"structure {structure!r} (e.g. 'SSSRRSRS' with blockIdx.x, vthread.x, "
                "threadIdx.x)"
            )
        self.structure = structure
        self.tile_binds = tile_binds
        self.max_innermost_factor = max_innermost_factor
        self.vector_load_lens = vector_load_lens
        self.reuse_read = _reuse(reuse_read)
        self.reuse_write = _reuse(reuse_write)
        self.filter_fn = filter_fn

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        node = sch.get(block)
        if not has_reduction(node) or TILING_KEY in node.annotations:
            return [sch]
        if self.filter_fn is not None and not self.filter_fn(sch, block):
            return [sch]
        kinds = loop_kinds(sch, block, sch.get_loops(block))
        if kinds is None or "S" not in kinds or "R" not in kinds:
            return [sch]
        out = []
        for s, cache, level in self._write_reuse_states(sch, block):
            try:
                tiles = self._tile(s, block, kinds)
                self._bind_tiles(s, tiles)
                if cache is not None:
                    s.reverse_compute_at(cache, tiles[self._level_pos(level)][-1])
                self._read_reuse(s, block, tiles)
            except ScheduleError:
                continue  # this way of reusing does not fit the block; the others remain
            s.annotate(block, TILING_KEY, self.structure)
            out.append(s)
        return out or [sch]

    def _write_reuse_states(self, sch: Schedule, block: BlockRV) -> list[tuple]:
        """(schedule, block to place at a tile level or None, level) for each way to write."""
        reuse = self.reuse_write
        if reuse is None or reuse.req == "no":
            return [(sch, None, None)]
        _, func = func_of(sch)
        node = sch.get(block)
        consumers = consumers_of(func, node)
        # an elementwise consumer (a fused epilogue) is the write cache already
        fuse_consumer = (
            len(consumers) == 1 and is_spatial(consumers[0]) and writes_output(func, consumers[0])
        )
        states = [(sch.copy(), None, None)] if reuse.req == "may" else []
        for level in reuse.levels:
            s = sch.copy()
            if fuse_consumer:
                cache = s.get_block(consumers[0].name_hint)
            elif writes_output(func, node):
                cache = s.cache_write(block, 0, reuse.scope)
            else:
                continue
            states.append((s, cache, level))
        return states

    def _level_pos(self, level: int) -> int:
        """Position in the structure of the `level`-th spatial level (1-based)."""
        spatial = [i for i, c in enumerate(self.structure) if c == "S"]
        return spatial[min(level, len(spatial)) - 1]

    def _tile(self, sch: Schedule, block: BlockRV, kinds: list[str]) -> list[list]:
        """Split each loop into its levels and reorder them by the structure; the loops of
        each structure position, outermost first."""
        loops = sch.get_loops(block)
        lanes = vector_lanes(self.target)
        max_inner = self.max_innermost_factor or 4 * lanes
        last_s = max(i for i, k in enumerate(kinds) if k == "S")
        levels = [[] for _ in self.structure]
        for i, (loop, kind) in enumerate(zip(loops, kinds)):
            positions = [p for p, c in enumerate(self.structure) if c == kind]
            n = len(positions)
            extent = const_int(sch.get(loop).extent)
            if not self.tile_binds and i == last_s and n > 1 and extent and extent % lanes == 0:
                factors = sch.sample_partitioned_tile(
                    loop, n=n, partition_pos=n - 1, innerpart_factor=lanes
                )
            else:
                factors = sch.sample_perfect_tile(loop, n=n, max_innermost_factor=max_inner)
            parts = sch.split(loop, factors=factors) if n > 1 else [loop]
            for pos, part in zip(positions, parts):
                levels[pos].append(part)
        sch.reorder(*[lp for level in levels for lp in level])
        return levels

    def _bind_tiles(self, sch: Schedule, tiles: list[list]) -> None:
        """Fuse the loops of each of the first structure positions and bind them to
        `tile_binds` in order (a GPU's blockIdx / vthread / threadIdx tiles)."""
        for pos, tag in enumerate(self.tile_binds or []):
            fused = sch.fuse(*tiles[pos]) if len(tiles[pos]) > 1 else tiles[pos][0]
            sch.bind(fused, tag)
            tiles[pos] = [fused]

    def _read_reuse(self, sch: Schedule, block: BlockRV, tiles: list[list]) -> None:
        """Stage each input the block reads through a `reuse_read.scope` copy computed at
        the tile level `reuse_read.levels[0]` (1-based structure position); on a GPU the copy
        is annotated for RewriteCooperativeFetch, which spreads it over the block's threads."""
        reuse = self.reuse_read
        if reuse is None or reuse.req == "no" or not reuse.levels:
            return
        at = tiles[min(reuse.levels[0], len(tiles)) - 1][-1]
        node = sch.get(block)
        written = {id(w.buffer) for w in node.writes}
        guarded = _guarded_buffers(node.body)
        indices = [
            i
            for i, r in enumerate(node.reads)
            if id(r.buffer) not in written and id(r.buffer) not in guarded
        ]
        for index in indices:
            fetch = sch.cache_read(block, index, reuse.scope)
            sch.compute_at(fetch, at)
            if self.tile_binds:
                sch.annotate(fetch, COOPERATIVE_FETCH, 1)


def _reuse(value: ReuseType | dict | None) -> ReuseType | None:
    if value is None or isinstance(value, ReuseType):
        return value
    return ReuseType(**value)


def _guarded_buffers(body) -> set[int]:
    """ids of the buffers read under an if_then_else (an inlined padding): their staged copy
    would be read outside the region bound inference gives it, so they are read directly."""
    from ...tir.expr import BufferLoad, Call
    from ...tir.functor import post_order_visit

    found: set[int] = set()

    def visit(n) -> None:
        if isinstance(n, Call) and getattr(n.op, "name", None) == "tir.if_then_else":
            post_order_visit(
                n, lambda m: found.add(id(m.buffer)) if isinstance(m, BufferLoad) else None
            )

    post_order_visit(body, visit)
    return found
