"""Blockize, tensorize, merge, block iterators, buffer access, layout, padding, reindex, rolling
buffer, read/write at, loop helpers, loop partition and cache in place: the primitives that
reshape blocks and buffers (a base class of tir.Schedule)."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ..expr import PrimExpr
from . import block_edit as _edit
from . import blockize as _blockize
from . import cache as _cache
from . import loop_transform as _lt
from . import merge as _merge
from . import tensorize as _tensorize
from .instruction import BlockRV, LoopRV
from .tree import (
    replace_stmt,
)


def _as_factor(f: Any) -> Any:
    if f is None or isinstance(f, PrimExpr):
        return f
    if hasattr(f, "__index__") and not isinstance(f, bool):
        return int(f.__index__())
    return f


class _BlockLayoutPrimitives:
    """tir.Schedule's methods for the primitives that reshape blocks and buffers."""

    # --- blockize, tensorize, merge, block iterators, buffer access ---
    def blockize(self, target: Any, preserve_unit_iters: bool = True) -> BlockRV:
        if isinstance(target, list | tuple):
            located = [self._block(b) for b in target]
            fname, func = located[0][0], located[0][1]
            func, name = _blockize.blockize_blocks(
                func, [(r, p) for _, _, r, p in located], preserve_unit_iters
            )
        else:
            fname, func, node, path = self._loop(target)
            func, realize = _blockize.blockize_loop(func, node, path, preserve_unit_iters)
            name = realize.block.name_hint
        return self._with_new_block("blockize", fname, func, name, target, preserve_unit_iters)

    def merge(self, *loops: LoopRV) -> LoopRV:
        loops, resolved = self._loop_args(loops)
        if not resolved:
            raise ScheduleError("merge: pass at least two loops")
        fname, func = resolved[0][0], resolved[0][1]
        func, var = _merge.merge(func, [(r[2], r[3]) for r in resolved])
        self._update(fname, func)
        out = self._new_loop(fname, var)
        self._record("merge", tuple(loops), (), (out,))
        return out

    def reorder_block_iter_var(self, block: BlockRV, new_order: list) -> None:
        fname, func, r, _ = self._block(block)
        new_order = [int(i) for i in new_order]
        self._update(fname, _edit.reorder_block_iter_var(func, r, new_order))
        self._record_call("reorder_block_iter_var", block, new_order)

    def annotate_buffer_access(
        self, block: BlockRV, buffer_index: int, buf_type: str, gen_new_ranges: Any
    ) -> None:
        fname, func, r, _ = self._block(block)
        ranges = _edit.ranges_index_map(gen_new_ranges, r.block)
        self._update(fname, _edit.annotate_buffer_access(func, r, buffer_index, buf_type, ranges))
        self._record_call("annotate_buffer_access", block, buffer_index, buf_type, gen_new_ranges)

    def unsafe_hide_buffer_access(
        self, block: BlockRV, buf_type: str, buf_index_array: list
    ) -> None:
        fname, func, r, _ = self._block(block)
        indices = [int(i) for i in buf_index_array]
        self._update(fname, _edit.unsafe_hide_buffer_access(func, r, buf_type, indices))
        self._record_call("unsafe_hide_buffer_access", block, buf_type, indices)

    def tensorize(
        self, block_or_loop: Any, tensor_intrin: Any, preserve_unit_iters: bool = True
    ) -> None:
        from ..tensor_intrin_base import TensorIntrin

        intrin = tensor_intrin
        if isinstance(tensor_intrin, str):
            intrin = TensorIntrin.get(tensor_intrin)
        if isinstance(block_or_loop, LoopRV):
            fname, func, node, path = self._loop(block_or_loop)
            outer = _blockize.blockize_realize(func, node, path, preserve_unit_iters)
            new = _tensorize.tensorize_block(func, outer, intrin.desc, intrin.impl)
            func = replace_stmt(func, node, new)
        else:
            fname, func, r, _ = self._block(block_or_loop)
            new = _tensorize.tensorize_block(func, r, intrin.desc, intrin.impl)
            func = replace_stmt(func, r, new)
        self._update(fname, func)
        self._record_call("tensorize", block_or_loop, tensor_intrin, preserve_unit_iters)

    # --- layout, padding, reindex, rolling buffer, read/write at ---
    from . import layout as _layout_module  # registers how traces print and store IndexMaps

    def transform_layout(
        self,
        block: Any,
        buffer: Any,
        index_map: Any,
        pad_value: Any = None,
        *,
        assume_injective_transform: bool = False,
    ) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        imap, separators = _layout.buffer_index_map(func, r, buffer, index_map)
        imap = _layout.with_values(imap, getattr(self, "_exprs", {}))
        kind, index, buf = _layout.resolve_buffer(func, r, buffer, "transform_layout")
        pad_value = _layout.pad_value_map(pad_value, imap, buf.dtype)
        func = _layout.transform_layout(
            func, r, buffer, imap, pad_value, assume_injective_transform
        )
        self._update(fname, func)
        # a Buffer object or name has no trace form: the buffer is traced as [kind, index]
        self._record_call(
            "transform_layout", block, [kind, index], imap, pad_value, assume_injective_transform
        )
        if separators:  # TVM applies (and traces) the separators as a second primitive
            self.set_axis_separator(block, (kind, index), separators)

    def transform_block_layout(self, block: Any, index_map: Any) -> None:
        from . import layout as _layout

        fname, func, r, path = self._block(block)
        imap = _layout.block_index_map(r, index_map)
        imap = _layout.with_values(imap, getattr(self, "_exprs", {}))
        self._update(fname, _layout.transform_block_layout(func, r, path, imap))
        self._record_call("transform_block_layout", block, imap)

    def set_axis_separator(self, block: Any, buffer: Any, axis_separators: Any) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        kind, index, _ = _layout.resolve_buffer(func, r, buffer, "set_axis_separator")
        self._update(fname, _layout.set_axis_separator(func, r, buffer, axis_separators))
        self._record_call("set_axis_separator", block, [kind, index], list(axis_separators))

    def storage_align(
        self, block: Any, buffer_index: int, axis: int, factor: int, offset: int
    ) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        self._update(fname, _layout.storage_align(func, r, buffer_index, axis, factor, offset))
        self._record_call("storage_align", block, buffer_index, axis, factor, offset)

    def unsafe_set_dtype(self, block: Any, buffer_index: int, dtype: str) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        self._update(fname, _layout.unsafe_set_dtype(func, r, buffer_index, dtype))
        self._record_call("unsafe_set_dtype", block, buffer_index, dtype)

    def decompose_padding(self, block: Any, loop: LoopRV) -> BlockRV:
        from . import padding as _padding

        fname, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        func, name = _padding.decompose_padding(func, r, path, node)
        return self._with_new_block("decompose_padding", fname, func, name, block, loop)

    def can_decompose_padding(self, block: Any, loop: LoopRV) -> bool:
        from . import padding as _padding

        _, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        try:
            _padding.decompose_padding(func, r, path, node)
        except ScheduleError:
            return False
        return True

    def _stage_at(self, name: str, loop: LoopRV, block: Any, index: int, scope: str) -> BlockRV:
        from . import read_write_at as _rw

        fname, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        func, new = getattr(_rw, name)(func, node, r, path, index, scope)
        return self._with_new_block(name, fname, func, new, loop, block, index, scope)

    def read_at(
        self, loop: LoopRV, block: Any, read_buffer_index: int, storage_scope: str
    ) -> BlockRV:
        return self._stage_at("read_at", loop, block, read_buffer_index, storage_scope)

    def write_at(
        self, loop: LoopRV, block: Any, write_buffer_index: int, storage_scope: str
    ) -> BlockRV:
        return self._stage_at("write_at", loop, block, write_buffer_index, storage_scope)

    def pad_einsum(self, block: Any, padding: list) -> None:
        from . import padding as _padding

        fname, func, r, path = self._block(block)
        padding = [int(p) if hasattr(p, "__index__") else p for p in padding]
        self._update(fname, _padding.pad_einsum(func, r, path, padding))
        self._record_call("pad_einsum", block, list(padding))

    def rolling_buffer(self, block: Any, write_buffer_index: int) -> None:
        from . import rolling_buffer as _rolling

        fname, func, r, path = self._block(block)
        self._update(fname, _rolling.rolling_buffer(func, r, path, write_buffer_index))
        self._record_call("rolling_buffer", block, write_buffer_index)

    def _reindex(self, name: str, block: Any, spec: Any, scope: Any, index_map: Any) -> BlockRV:
        """reindex, or reindex_cache_read/write (`name`) of buffer `spec` ((kind, index))."""
        from . import reindex as _reindex

        fname, func, r, path = self._block(block)
        if index_map is not None:
            index_map = self._layout_module.block_index_map(r, index_map)
        if name == "reindex":  # traced as [kind, index]: a Buffer object or name has no trace form
            kind, index, _ = self._layout_module.resolve_buffer(func, r, spec, "reindex")
            traced = (block, [kind, index])
        else:
            traced = (block, spec[1], scope, index_map)
        func, new = _reindex.reindex(func, r, path, spec, scope, index_map, name)
        return self._with_new_block(name, fname, func, new, *traced)

    def reindex(self, block: Any, buffer: Any) -> BlockRV:
        return self._reindex("reindex", block, buffer, None, None)

    def reindex_cache_read(
        self, block: Any, read_buffer_index: int, storage_scope: str, index_map: Any
    ) -> BlockRV:
        spec = ("read", read_buffer_index)
        return self._reindex("reindex_cache_read", block, spec, storage_scope, index_map)

    def reindex_cache_write(
        self, block: Any, write_buffer_index: int, storage_scope: str, index_map: Any
    ) -> BlockRV:
        spec = ("write", write_buffer_index)
        return self._reindex("reindex_cache_write", block, spec, storage_scope, index_map)

    # --- loop helpers ---
    def add_unit_loop(self, block_or_loop: Any) -> LoopRV:
        """Create a loop of extent 1 above a block or a loop; returns it.

        >>> u = sch.add_unit_loop(sch.get_block("C"))
        """
        if isinstance(block_or_loop, LoopRV):
            fname, func, node, _ = self._loop(block_or_loop)
        else:
            fname, func, node, _ = self._block(block_or_loop)
        func, var = _lt.add_unit_loop(func, node)
        self._update(fname, func)
        out = self._new_loop(fname, var)
        self._record_call("add_unit_loop", block_or_loop, outputs=(out,))
        return out

    # --- loop partition ---
    def loop_partition(
        self, loop: LoopRV, factors: list, preserve_unit_iters: bool = True
    ) -> list[LoopRV]:
        """Cut a loop into consecutive loops of the given lengths (one None is inferred; without
        one, the rest of the loop is a last part); returns the new loops.

        >>> i0, i1, i2 = sch.loop_partition(i, factors=[2, 64])  # [0,2), [2,66), [66,128)
        """
        from . import loop_partition as _lp

        fname, func, node, path = self._loop(loop)
        traced, factors = list(factors), [_as_factor(self._expr_value(f)) for f in factors]
        func, new_vars = _lp.loop_partition(func, node, path, factors)
        self._update(fname, func)
        out = [self._new_loop(fname, v) for v in new_vars]
        self._record_call(
            "loop_partition", loop, traced, preserve_unit_iters, outputs=tuple(out), unpack=True
        )
        return out

    # --- cache in place ---
    def cache_inplace(
        self, block: BlockRV, read_buffer_index: Any, storage_scope: str
    ) -> list[BlockRV]:
        """Stage a buffer the block reads and writes in place through a cache: a copy in right
        before the block and a copy back right after; returns [copy_in, copy_out].

        >>> rd, wr = sch.cache_inplace(sch.get_block("ext_call"), 0, "local")
        """
        fname, func, r, path = self._block(block)
        func, rname, wname = _cache.cache_inplace(func, r, path, read_buffer_index, storage_scope)
        self._update(fname, func)
        out = [self._new_block(fname, rname), self._new_block(fname, wname)]
        self._record_call(
            "cache_inplace",
            block,
            read_buffer_index,
            storage_scope,
            outputs=tuple(out),
            unpack=True,
        )
        return out
