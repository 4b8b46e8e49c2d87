"""Primitives that edit one block's signature: reorder_block_iter_var, annotate_buffer_access,
unsafe_hide_buffer_access."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...ir.node import FrozenDict
from ..expr import PrimExpr, Range, Var, as_expr
from ..function import PrimFunc
from ..index_map import IndexMap
from ..stmt import BlockRealize, BufferRegion
from .common import analyzer, schedule_error
from .tree import replace_stmt

# the block annotation that marks a read/write region as given by the user (kept as is by
# primitives that would otherwise recompute it from the body)
EXPLICIT_REGION_KEYS = {"read": "explicit_read_region", "write": "explicit_write_region"}


def reorder_block_iter_var(func: PrimFunc, realize: BlockRealize, new_order: list) -> PrimFunc:
    """The block's iter vars (and their bindings) permuted: position i gets old new_order[i]."""
    block = realize.block
    n = len(block.iter_vars)
    order = [int(i) for i in new_order]
    problem = None
    if len(order) != n:
        problem = f"has {n} iter vars but new_order has {len(order)} entries"
    elif any(not 0 <= i < n for i in order):
        problem = f"new_order {order} has an index outside [0, {n})"
    elif len(set(order)) != n:
        problem = f"new_order {order} repeats an index"
    if problem is not None:
        raise schedule_error(
            func,
            f"reorder_block_iter_var: block '{block.name_hint}' {problem}; pass a permutation "
            f"of 0..{n - 1}",
            block,
        )
    new_block = block.replace(iter_vars=tuple(block.iter_vars[i] for i in order))
    new = realize.replace(iter_values=tuple(realize.iter_values[i] for i in order), block=new_block)
    return replace_stmt(func, realize, new)


def _begin_end(item: Any) -> tuple[PrimExpr, PrimExpr]:
    """(begin, end) of one dimension: a pair as given, a single index i as (i, i + 1)."""
    if isinstance(item, Range):
        return item.min, item.min + item.extent
    if isinstance(item, tuple | list):
        begin, end = item
        return as_expr(begin), as_expr(end)
    return as_expr(item), as_expr(item) + 1


def ranges_index_map(gen_new_ranges: Callable[..., Any], block: Any) -> IndexMap:
    """gen_new_ranges as an IndexMap from the block's iter vars to [begin0, end0, begin1, ...]
    (TVM's form, printable in traces)."""
    if isinstance(gen_new_ranges, IndexMap):
        return gen_new_ranges
    args = [Var(iv.var.name, iv.var.dtype) for iv in block.iter_vars]
    ranges = gen_new_ranges(*args)
    ranges = list(ranges) if isinstance(ranges, tuple | list) else [ranges]
    return IndexMap(args, [e for item in ranges for e in _begin_end(item)])


def annotate_buffer_access(
    func: PrimFunc, realize: BlockRealize, buffer_index: int, buf_type: str, ranges: IndexMap
) -> PrimFunc:
    """The block with read/write region `buffer_index` replaced by the ranges `ranges` maps
    the block's iter vars to (see ranges_index_map)."""
    block = realize.block
    key = EXPLICIT_REGION_KEYS.get(buf_type)
    if key is None:
        raise schedule_error(
            func, f"annotate_buffer_access: buf_type must be 'read' or 'write', got {buf_type!r}"
        )
    field = "reads" if buf_type == "read" else "writes"
    regions = getattr(block, field)
    if not 0 <= buffer_index < len(regions):
        raise schedule_error(
            func,
            f"annotate_buffer_access: block '{block.name_hint}' has {len(regions)} {field} "
            f"regions; buffer_index {buffer_index} is out of range",
            block,
        )
    old = regions[buffer_index]
    if len(ranges.initial_indices) != len(block.iter_vars):
        raise schedule_error(
            func,
            f"annotate_buffer_access: gen_new_ranges takes {len(ranges.initial_indices)} "
            f"indices but block '{block.name_hint}' has {len(block.iter_vars)} iter vars",
            block,
        )
    ends = ranges.map_indices([iv.var for iv in block.iter_vars])
    if len(ends) != 2 * len(old.buffer.shape):
        raise schedule_error(
            func,
            f"annotate_buffer_access: gen_new_ranges gave {len(ends) // 2} ranges for buffer "
            f"'{old.buffer.name}' of {len(old.buffer.shape)} dimensions",
            block,
        )
    ana = analyzer()
    region = BufferRegion(
        old.buffer,
        tuple(
            Range.from_min_extent(b, ana.simplify(e - b)) for b, e in zip(ends[0::2], ends[1::2])
        ),
    )
    new_regions = regions[:buffer_index] + (region,) + regions[buffer_index + 1 :]
    marked = [int(i) for i in block.annotations.get(key, ())]
    if buffer_index not in marked:
        marked.append(buffer_index)
    annotations = FrozenDict({**block.annotations, key: marked})
    new_block = block.replace(**{field: new_regions}, annotations=annotations)
    return replace_stmt(func, realize, realize.replace(block=new_block))


def unsafe_hide_buffer_access(
    func: PrimFunc, realize: BlockRealize, buf_type: str, buf_index_array: list
) -> PrimFunc:
    """The block without the read (or write) regions at `buf_index_array`: later primitives
    and analyses no longer see those accesses (unsafe: the body still makes them)."""
    block = realize.block
    if buf_type not in EXPLICIT_REGION_KEYS:
        raise schedule_error(
            func,
            f"unsafe_hide_buffer_access: buf_type must be 'read' or 'write', got {buf_type!r}",
            block,
        )
    field = "reads" if buf_type == "read" else "writes"
    regions = getattr(block, field)
    hidden = {int(i) for i in buf_index_array}
    bad = sorted(i for i in hidden if not 0 <= i < len(regions))
    if bad:
        raise schedule_error(
            func,
            f"unsafe_hide_buffer_access: block '{block.name_hint}' has {len(regions)} {field} "
            f"regions; buffer index {bad[0]} is out of range",
            block,
        )
    kept = tuple(r for i, r in enumerate(regions) if i not in hidden)
    return replace_stmt(func, realize, realize.replace(block=block.replace(**{field: kept})))


def is_explicit(block: Any, buf_type: str, index: int) -> bool:
    """Whether region `index` of the block's reads/writes was set by annotate_buffer_access."""
    return index in [int(i) for i in block.annotations.get(EXPLICIT_REGION_KEYS[buf_type], ())]


__all__ = [
    "annotate_buffer_access",
    "is_explicit",
    "reorder_block_iter_var",
    "unsafe_hide_buffer_access",
]
